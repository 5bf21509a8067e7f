//! Benchmark: what each layer of a hook run costs, in wall time and in the operator's own CPU
//! (`getrusage(RUSAGE_SELF)`: every thread, the `hook-files` thread included; the hooks' CPU is
//! not in it). The same no-op script runs N times per row, in interleaved rounds, on one
//! multi-thread tokio runtime:
//! - tokio loop: `tokio::process::Command::output()`, the floor of an async runner;
//! - the process runner (`edges::exec::process::run`): own process group, working directory,
//!   exit on a pidfd, CPU time from `/proc`, reaped by the runner;
//! - the same with the 9 variables a hook gets (the environment is copied for every spawn);
//! - `run_hook`: the hook contract (3 input files written, 4 empty output files, outputs read),
//!   with files from a `TmpPool` (as `start` does) and with files made by the run itself.
//!
//! Run with `bench/hook-overhead/layers.sh [N] [ROUNDS] [TMP_DIR]`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "bench_support/mod.rs"]
#[expect(
    dead_code,
    reason = "this driver starts no operator; it uses the file and report helpers"
)]
mod bench_support;

use addon_operator::edges::exec::hook_run::{HookInvocation, HookOwner, HookRunSettings, run_hook};
use addon_operator::edges::exec::process::{LogFields, ProcessSpec, run};
use addon_operator::edges::exec::tmp_pool::TmpPool;
use anyhow::Context as _;
use bench_support::{executable, print_rows};
use nix::sys::resource::{UsageWho, getrusage};
use tokio_util::sync::CancellationToken;

const NOOP_HOOK: &str = "#!/bin/sh\nexit 0\n";

#[derive(Clone, Copy)]
enum Layer {
    Tokio,
    Runner,
    RunnerWithEnv,
    HookWithPool,
    HookOwnFiles,
}

const LAYERS: [(Layer, &str); 5] = [
    (Layer::Tokio, "tokio loop, output piped"),
    (Layer::Runner, "process runner"),
    (Layer::RunnerWithEnv, "process runner + 9 env vars"),
    (Layer::HookWithPool, "run_hook, files from the pool"),
    (Layer::HookOwnFiles, "run_hook, files made by the run"),
];

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let hooks: usize = args.next().context("N")?.parse().context("N is a number")?;
    let rounds: usize = args.next().context("ROUNDS")?.parse().context("ROUNDS")?;
    let tmp_parent = PathBuf::from(args.next().context("TMP_DIR")?);
    let root = tempfile::tempdir()?;
    let script = root.path().join("hook.sh");
    executable(&script, NOOP_HOOK)?;
    let tmp = tempfile::tempdir_in(&tmp_parent)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async { addon_operator::edges::exec::reaper::start() });
    let pool = TmpPool::start(tmp.path())?;
    let mut wall: Vec<(String, Vec<f64>)> = Vec::new();
    let mut cpu: Vec<(String, Vec<f64>)> = Vec::new();
    for (_, name) in LAYERS {
        wall.push((name.to_string(), Vec::new()));
        cpu.push((name.to_string(), Vec::new()));
    }
    for round in 1..=rounds {
        for (index, (layer, _)) in LAYERS.iter().enumerate() {
            let (started, cpu_before) = (Instant::now(), self_cpu()?);
            runtime.block_on(async {
                for _ in 0..hooks {
                    run_once(*layer, &script, tmp.path(), &pool).await?;
                }
                anyhow::Ok(())
            })?;
            wall[index]
                .1
                .push(started.elapsed().as_secs_f64() / hooks as f64);
            cpu[index].1.push((self_cpu()? - cpu_before) / hooks as f64);
        }
        eprintln!("round {round}/{rounds} done");
    }
    println!(
        "{hooks} runs per row, {rounds} interleaved rounds, tmp dir {}",
        tmp_parent.display()
    );
    println!("wall ms per run: median (min–max)");
    print_rows(&wall, 1e3, 3, "tokio loop / this");
    println!("operator CPU ms per run (all its threads): median (min–max)");
    print_rows(&cpu, 1e3, 3, "tokio loop / this");
    pool.shutdown();
    Ok(())
}

async fn run_once(
    layer: Layer,
    script: &Path,
    tmp: &Path,
    pool: &Arc<TmpPool>,
) -> anyhow::Result<()> {
    let dir = script.parent().context("the script has a dir")?;
    match layer {
        Layer::Tokio => {
            let output = tokio::process::Command::new(script).output().await?;
            anyhow::ensure!(output.status.success(), "the run failed: {}", output.status);
        }
        Layer::Runner | Layer::RunnerWithEnv => {
            let env = match layer {
                Layer::RunnerWithEnv => (0..9)
                    .map(|i| (format!("HOOK_VAR_{i}"), tmp.join(format!("file-{i}.json"))))
                    .map(|(name, path)| (name, path.display().to_string()))
                    .collect(),
                _ => Vec::new(),
            };
            let spec = ProcessSpec {
                program: script.to_path_buf(),
                args: Vec::new(),
                cwd: dir.to_path_buf(),
                env,
                timeout: Duration::from_secs(60),
                kill_grace: Duration::from_secs(1),
                capture_stdout: false,
            };
            let output = run(&spec, &LogFields::default()).await?;
            anyhow::ensure!(output.succeeded(), "{}", output.failure_message());
        }
        Layer::HookWithPool | Layer::HookOwnFiles => {
            let settings = HookRunSettings {
                tmp_dir: tmp.to_path_buf(),
                pool: matches!(layer, Layer::HookWithPool).then(|| Arc::clone(pool)),
                ..Default::default()
            };
            let (empty, context) = (
                serde_json::json!({}),
                serde_json::json!([{"binding": "beforeHelm"}]),
            );
            let invocation = HookInvocation {
                owner: HookOwner::Module("bench".into()),
                hook_name: "hooks/hook.sh",
                hook_path: script,
                working_dir: dir,
                binding: "beforeHelm",
                binding_context: &context,
                config_values: &empty,
                values: &empty,
                extra_env: &[],
                hook_args: &[],
            };
            let output = run_hook(&settings, &invocation, &CancellationToken::new()).await?;
            anyhow::ensure!(
                output.outputs.is_some(),
                "{}",
                output.process.failure_message()
            );
        }
    }
    Ok(())
}

/// User plus system CPU seconds of this process, all threads.
fn self_cpu() -> anyhow::Result<f64> {
    let usage = getrusage(UsageWho::RUSAGE_SELF)?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}
