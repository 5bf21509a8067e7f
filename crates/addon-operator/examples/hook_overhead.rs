//! Benchmark: N no-op hooks through the real pipeline (queue → tmp files → exec → output read and
//! JSON parse) against the same script spawned N times by a bare `std::process::Command` loop.
//! Run with `bench/hook-overhead/run.sh [N] [TMP_DIR]`; hook tmp files go to `TMP_DIR` (default:
//! a directory under the system temp dir), the setting that dominates the cost on slow disks.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use addon_core::names::QueueName;
use addon_core::queue::{Backoff, QueueTask, TaskQueue};
use addon_operator::exec::hook_run::{HookInvocation, HookOwner, HookRunSettings, run_hook};
use addon_operator::exec::process::{self, LogFields, ProcessSpec};
use anyhow::Context as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 10;

struct HookTask {
    index: usize,
}

impl QueueTask for HookTask {
    fn description(&self) -> String {
        format!(
            "ModuleHookRun:main:schedule:hooks/noop.sh:tick-{}",
            self.index
        )
    }
}

fn main() -> anyhow::Result<()> {
    let runs: usize = match std::env::args().nth(1) {
        Some(text) => text.parse().context("the argument is the number of runs")?,
        None => 1000,
    };
    let tmp_base = std::env::args()
        .nth(2)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let root = tempfile::tempdir()?;
    let hook_tmp = tempfile::tempdir_in(&tmp_base)?;
    let hook = root.path().join("hooks/noop.sh");
    std::fs::create_dir_all(root.path().join("hooks"))?;
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n")?;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))?;

    // Interleaved rounds, so that noisy neighbours on a shared machine hit all three alike.
    let rounds = ROUNDS.min(runs.max(1));
    let per_round = runs.div_ceil(rounds);
    let runs = per_round * rounds;
    let runtime = tokio::runtime::Runtime::new()?;
    let (mut bare, mut process_only, mut pipeline) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut ratios = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let bare_round = bare_loop(&hook, per_round)?;
        process_only += runtime.block_on(process_only_loop(&hook, per_round))?;
        let pipeline_round = runtime.block_on(pipeline_loop(
            root.path(),
            hook_tmp.path(),
            &hook,
            per_round,
        ))?;
        ratios.push(pipeline_round.as_secs_f64() / bare_round.as_secs_f64());
        bare += bare_round;
        pipeline += pipeline_round;
    }
    ratios.sort_by(f64::total_cmp);

    let rate = |elapsed: Duration| runs as f64 / elapsed.as_secs_f64();
    println!(
        "runs: {runs} in {rounds} interleaved rounds, hook tmp dir: {}",
        hook_tmp.path().display()
    );
    println!(
        "bare std::process::Command loop: {:>8.1} runs/s ({bare:?} total)",
        rate(bare)
    );
    println!(
        "exec::process::run alone:        {:>8.1} runs/s ({process_only:?} total)",
        rate(process_only)
    );
    println!(
        "addon-operator hook pipeline:    {:>8.1} runs/s ({pipeline:?} total)",
        rate(pipeline)
    );
    println!(
        "pipeline / bare time ratio: {:.2}x overall, {:.2}x median of rounds ({:.2}x–{:.2}x); \
         overhead per run: {:.0} µs",
        pipeline.as_secs_f64() / bare.as_secs_f64(),
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
        (pipeline.as_secs_f64() - bare.as_secs_f64()) * 1e6 / runs as f64
    );
    Ok(())
}

fn bare_loop(hook: &Path, runs: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    for _ in 0..runs {
        let status = std::process::Command::new(hook).status()?;
        anyhow::ensure!(status.success(), "the bare run failed: {status}");
    }
    Ok(started.elapsed())
}

/// The process runner without the hook I/O files or the queue: where the time goes.
async fn process_only_loop(hook: &Path, runs: usize) -> anyhow::Result<Duration> {
    let spec = ProcessSpec {
        program: hook.to_path_buf(),
        args: Vec::new(),
        cwd: hook.parent().map(Path::to_path_buf).unwrap_or_default(),
        env: Vec::new(),
        timeout: Duration::from_secs(60),
        kill_grace: Duration::from_secs(1),
        capture_stdout: false,
    };
    let started = Instant::now();
    for _ in 0..runs {
        let output = process::run(&spec, &LogFields::default()).await?;
        anyhow::ensure!(output.succeeded(), "the run failed: {}", output.exit);
    }
    Ok(started.elapsed())
}

async fn pipeline_loop(
    root: &Path,
    tmp_dir: &Path,
    hook: &Path,
    runs: usize,
) -> anyhow::Result<Duration> {
    let settings = HookRunSettings {
        tmp_dir: tmp_dir.to_path_buf(),
        ..HookRunSettings::default()
    };
    let cancel = CancellationToken::new();
    let epoch = tokio::time::Instant::now();
    let mut queue = TaskQueue::new(QueueName::main(), Backoff::default());
    let config_values = json!({"global": {}, "myModule": {"replicas": 2}});
    let values = json!({"global": {"enabledModules": ["my-module"]}, "myModule": {"replicas": 2}});
    let started = Instant::now();
    for index in 0..runs {
        queue.push_back(HookTask { index });
    }
    while let Some(head) = queue.ready_head(epoch.elapsed()) {
        let context = json!([{"binding": "tick", "type": "Schedule", "index": head.task.index}]);
        let invocation = HookInvocation {
            owner: HookOwner::Module("my-module".into()),
            hook_name: "hooks/noop.sh",
            hook_path: hook,
            working_dir: root,
            binding: "tick",
            binding_context: &context,
            config_values: &config_values,
            values: &values,
            extra_env: &[],
            hook_args: &[],
        };
        let output = run_hook(&settings, &invocation, &cancel).await?;
        match output.outputs {
            Some(outputs) => {
                for text in [
                    &outputs.config_values_patch,
                    &outputs.values_patch,
                    &outputs.metrics,
                ] {
                    let patch: Value = if text.trim().is_empty() {
                        Value::Array(Vec::new())
                    } else {
                        serde_json::from_str(text)?
                    };
                    anyhow::ensure!(patch.is_array() || patch.is_object(), "odd output {patch}");
                }
                queue.pop();
            }
            None => {
                queue.fail_head(epoch.elapsed(), output.process.failure_message());
                anyhow::bail!(
                    "the no-op hook failed: {}",
                    output.process.failure_message()
                );
            }
        }
    }
    Ok(started.elapsed())
}
