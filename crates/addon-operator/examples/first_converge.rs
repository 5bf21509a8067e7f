//! Benchmark: the first converge of M unnumbered (so all of ORDER 1) hooks-only modules × 3 hooks
//! through `addon-operator start` (local mode), from spawn to `/readyz` = 200, against the same
//! processes run one by one by hand, and the same modules' processes run by hand side by side
//! (`xargs -P` with one job per core, each module's processes in order); with SLEEP_S, each beforeHelm hook sleeps that long and the
//! baseline is the same operator with `--parallel-module-runs 1`.
//! Run with `bench/first-converge/run.sh [M] [ROUNDS]` (`SLEEP=0.2` for the sleeping hooks,
//! `HOOK_EXT=.sh` for hooks the operator does not probe with `hook list`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[path = "bench_support/mod.rs"]
#[expect(dead_code, reason = "the hook benches' bash loop is not used here")]
mod bench_support;

use anyhow::Context as _;

use bench_support::{
    CONTRACT_FILES, bash_seconds, executable, print_rows, spawn_operator, spread, stop_operator,
    wait_ready,
};

/// The three hooks of each module and their `--config` answers (as `bench/startup`).
const HOOKS: [(&str, &str); 3] = [
    ("startup", r#"{"configVersion":"v1","onStartup":1}"#),
    ("before", r#"{"configVersion":"v1","beforeHelm":1}"#),
    (
        "sched",
        r#"{"configVersion":"v1","schedule":[{"crontab":"0 0 * * *"}]}"#,
    ),
];

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let operators: Vec<PathBuf> = args
        .next()
        .context("usage: OPERATOR[,OPERATOR...] MODULES ROUNDS TMP_DIR [SLEEP_S]")?
        .split(',')
        .map(PathBuf::from)
        .collect();
    let modules: usize = args.next().context("MODULES")?.parse().context("MODULES")?;
    let rounds: usize = args.next().context("ROUNDS")?.parse().context("ROUNDS")?;
    let tmp_dir = PathBuf::from(args.next().context("TMP_DIR")?);
    let sleep: Option<f64> = args
        .next()
        .map(|s| s.parse())
        .transpose()
        .context("SLEEP_S")?;
    let root = tempfile::tempdir()?;
    let by_hand = write_tree(root.path(), modules, sleep)?;
    if sleep.is_some() {
        return one_by_one_against_parallel(&operators, root.path(), modules, rounds, &tmp_dir);
    }
    let mut results = vec![
        ("by hand".to_string(), Vec::new()),
        ("by hand, xargs -P (cores)".to_string(), Vec::new()),
    ];
    for operator in &operators {
        let name = operator.display().to_string();
        results.push((name, Vec::new()));
    }
    let mut files = Vec::new();
    for round in 1..=rounds {
        let by_hand_args = [OsStr::new("by-hand"), root.path().as_os_str()];
        results[0].1.push(bash_seconds(&by_hand, &by_hand_args)?);
        results[1]
            .1
            .push(bash_seconds(BY_HAND_PARALLEL, &by_hand_args)?);
        files.push(contract_files_seconds(&tmp_dir, modules)?);
        for (index, operator) in operators.iter().enumerate() {
            let tmp = tempfile::tempdir_in(&tmp_dir)?;
            let seconds = start_to_ready(operator, root.path(), &tmp.path().join("ao"))?;
            results[2 + index].1.push(seconds);
        }
        eprintln!("round {round}/{rounds} done");
    }
    report(&results, modules);
    report_floor(&results[0].1, &files, modules);
    Ok(())
}

/// The sleeping hooks: the first operator with `--parallel-module-runs 1` (a wrapper script
/// setting its env variable) against every operator with its default, in interleaved rounds.
fn one_by_one_against_parallel(
    operators: &[PathBuf],
    root: &Path,
    modules: usize,
    rounds: usize,
    tmp_dir: &Path,
) -> anyhow::Result<()> {
    let first = operators.first().context("no operator")?;
    let wrapper = root.join("one-by-one");
    let body = format!(
        "#!/bin/sh\nADDON_OPERATOR_PARALLEL_MODULE_RUNS=1 exec '{}' \"$@\"\n",
        std::fs::canonicalize(first)?.display()
    );
    executable(&wrapper, &body)?;
    let mut all = vec![wrapper];
    all.extend(operators.iter().cloned());
    let mut results: Vec<(String, Vec<f64>)> = all
        .iter()
        .map(|o| (o.display().to_string(), Vec::new()))
        .collect();
    results[0].0 = "one by one (--parallel-module-runs 1)".to_string();
    for round in 1..=rounds {
        for (index, operator) in all.iter().enumerate() {
            let tmp = tempfile::tempdir_in(tmp_dir)?;
            let seconds = start_to_ready(operator, root, &tmp.path().join("ao"))?;
            results[index].1.push(seconds);
        }
        eprintln!("round {round}/{rounds} done");
    }
    println!(
        "{modules} unnumbered modules whose beforeHelm sleeps, {rounds} interleaved rounds; seconds from start to ready: median (min–max)"
    );
    print_rows(&results, 1.0, 3, "one by one / this");
    Ok(())
}

/// Writes the tree (modules without a number: all of ORDER 1; with `sleep`, beforeHelm hooks
/// sleep that many seconds; hook files named with `HOOK_EXT`, none by default); returns the
/// by-hand script: every process the first converge starts (each extension-less hook's
/// `hook list` probe with an empty environment, as the operator and upstream ask it, each hook's
/// `--config`, each `enabled` script, each `onStartup` and `beforeHelm` hook).
/// The by-hand processes side by side: each module's script of `by-hand/` (its processes in
/// order) as one job of `xargs -P`, one job per core; `$1` is the tree's root.
const BY_HAND_PARALLEL: &str =
    "set -e\nprintf '%s\\n' \"$1\"/by-hand/*.sh | xargs -P \"$(nproc)\" -I{} bash {} \"$1\"\n";

fn write_tree(root: &Path, modules: usize, sleep: Option<f64>) -> anyhow::Result<String> {
    let extension = std::env::var("HOOK_EXT").unwrap_or_default();
    std::fs::create_dir_all(root.join("global-hooks"))?;
    let mut values = String::new();
    let mut script = String::from("set -e\nexport MODULE_ENABLED_RESULT=\"$1/enabled-result\"\n");
    std::fs::create_dir_all(root.join("by-hand"))?;
    for index in 1..=modules {
        let start = script.len();
        let dir = root.join(format!("modules/mod{index:03}"));
        std::fs::create_dir_all(dir.join("hooks"))?;
        values.push_str(&format!("mod{index:03}Enabled: true\n"));
        let enabled = dir.join("enabled");
        executable(
            &enabled,
            "#!/bin/sh\necho true > \"$MODULE_ENABLED_RESULT\"\n",
        )?;
        for (name, config) in HOOKS {
            let hook = dir.join("hooks").join(format!("{name}{extension}"));
            // only a binding run waits: the `hook list` probe of an extension-less hook runs
            // its body too, with an empty environment
            let run = match sleep {
                Some(seconds) if name == "before" => {
                    format!("[ -z \"$BINDING_CONTEXT_PATH\" ] || sleep {seconds}\n")
                }
                _ => String::new(),
            };
            let body = format!(
                "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{config}'; exit 0; fi\n{run}exit 0\n"
            );
            executable(&hook, &body)?;
            if extension.is_empty() {
                script.push_str(&format!(
                    "env -i '{}' hook list > /dev/null\n",
                    hook.display()
                ));
            }
            script.push_str(&format!("'{}' --config > /dev/null\n", hook.display()));
        }
        script.push_str(&format!("'{}'\n", enabled.display()));
        for name in ["startup", "before"] {
            let hook = dir.join("hooks").join(format!("{name}{extension}"));
            script.push_str(&format!("'{}'\n", hook.display()));
        }
        let module = format!(
            "set -e\nexport MODULE_ENABLED_RESULT=\"$1/enabled-result-{index:03}\"\n{}",
            &script[start..]
        );
        std::fs::write(root.join(format!("by-hand/mod{index:03}.sh")), module)?;
    }
    std::fs::write(root.join("modules/values.yaml"), values)?;
    Ok(script)
}

/// Seconds from spawning the operator until `/readyz` answers 200 (first converge done).
fn start_to_ready(operator: &Path, root: &Path, tmp_dir: &Path) -> anyhow::Result<f64> {
    let started = Instant::now();
    let (child, port) = spawn_operator(operator, root, tmp_dir, "warn")?;
    let ready = wait_ready(port, started);
    stop_operator(child, root, ready)
}

fn report(results: &[(String, Vec<f64>)], modules: usize) {
    let (processes, probes) = match std::env::var("HOOK_EXT").unwrap_or_default().as_str() {
        "" => (modules * 9, ", with the `hook list` probes"),
        _ => (modules * 6, ""),
    };
    println!(
        "{modules} unnumbered modules × 3 hooks ({processes} processes{probes}), {} interleaved rounds; seconds: median (min–max)",
        results[0].1.len()
    );
    print_rows(results, 1.0, 3, "by hand / this");
}

/// Seconds to make, write and remove in `tmp_dir` the hook contract's files of a first converge
/// (what the operator does and the by-hand script does not): 7 per hook run (2 a module), 4 per
/// `enabled` script (values, config values, result, reason).
fn contract_files_seconds(tmp_dir: &Path, modules: usize) -> anyhow::Result<f64> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = tempfile::tempdir_in(tmp_dir)?;
    let enabled = [
        CONTRACT_FILES[1],
        CONTRACT_FILES[2],
        ("RESULT", ""),
        ("REASON", ""),
    ];
    let runs = (0..modules).flat_map(|_| [&CONTRACT_FILES[..], &CONTRACT_FILES[..], &enabled[..]]);
    let started = Instant::now();
    for (run, files) in runs.enumerate() {
        let mut paths = Vec::with_capacity(files.len());
        for (index, (_, content)) in files.iter().enumerate() {
            let path = dir.path().join(format!("{run}-{index}"));
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            file.write_all(content.as_bytes())?;
            paths.push(path);
        }
        paths.iter().try_for_each(std::fs::remove_file)?;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The contract files' time and the bound it leaves: the by-hand processes plus those files,
/// spread over every core at best.
fn report_floor(by_hand: &[f64], files: &[f64], modules: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let (hand, _, _) = spread(by_hand);
    let (file, low, high) = spread(files);
    println!(
        "the hook contract's {} files alone (made, written, removed in TMP_DIR): {:.3} s ({low:.3}–{high:.3}); bound on {cores} cores: by hand / ((by hand + files) / {cores}) = {:.2}",
        modules * 18,
        file,
        hand / ((hand + file) / cores)
    );
}
