//! Benchmark: one module run of N no-op `beforeHelm` hooks through the real `start` runtime (local
//! mode, no cluster), timed by the operator's own `addon_operator_module_run_seconds`, against a
//! bash loop, a `std::process::Command` loop and a tokio loop (output piped) spawning the same
//! script N times. Beside each row's wall time per hook it reports the CPU time per hook of the
//! runner itself (every thread of its process, the hooks' own CPU left out), so that work moved
//! to a second thread shows as spent, not as saved.
//! Run with `bench/hook-overhead/run.sh [N] [ROUNDS] [TMP_DIR...]`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[path = "bench_support/mod.rs"]
mod bench_support;

use anyhow::Context as _;

use bench_support::{
    CONTRACT_FILES, bash_loop, executable, http_get, print_rows, spawn_operator, stop_operator,
    wait_ready,
};

const NOOP_HOOK: &str = "#!/bin/sh\n\
if [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"beforeHelm\":1}'; fi\n\
exit 0\n";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    // One or more operator binaries, comma-separated (e.g. a build before and after a change).
    let operators: Vec<PathBuf> = args
        .next()
        .context("usage: OPERATOR[,OPERATOR...] N ROUNDS TMP_DIR...")?
        .split(',')
        .map(PathBuf::from)
        .collect();
    let hooks: usize = args.next().context("N")?.parse().context("N is a number")?;
    let rounds: usize = args.next().context("ROUNDS")?.parse().context("ROUNDS")?;
    let tmp_dirs: Vec<PathBuf> = args.map(PathBuf::from).collect();
    anyhow::ensure!(!tmp_dirs.is_empty(), "name at least one TMP_DIR");

    let root = tempfile::tempdir()?;
    let script = write_tree(root.path(), hooks, true)?;
    // the same tree with the module disabled: its start (the hooks' `--config` runs) is taken
    // from the operator's CPU, leaving the module run's
    let idle_root = tempfile::tempdir()?;
    write_tree(idle_root.path(), hooks, false)?;
    let mut results: Vec<(String, Vec<Sample>)> = vec![
        ("bash loop".to_string(), Vec::new()),
        ("Command loop".to_string(), Vec::new()),
        ("tokio loop, output piped".to_string(), Vec::new()),
    ];
    debug_assert_eq!(results.len(), BASELINES);
    let runs: Vec<(&PathBuf, &PathBuf)> = operators
        .iter()
        .flat_map(|operator| tmp_dirs.iter().map(move |dir| (operator, dir)))
        .collect();
    for dir in &tmp_dirs {
        results.push((format!("contract floor, {}", dir.display()), Vec::new()));
    }
    for (operator, dir) in &runs {
        let name = operator.file_name().unwrap_or_default().to_string_lossy();
        results.push((format!("{name}, --tmp-dir {}", dir.display()), Vec::new()));
    }
    // Interleaved rounds, so that noisy neighbours on a shared machine hit every row alike.
    for round in 1..=rounds {
        results[0]
            .1
            .push(Sample::wall_only(bash_loop(&script, hooks)?));
        results[1]
            .1
            .push(in_process(hooks, || command_loop(&script, hooks))?);
        results[2]
            .1
            .push(in_process(hooks, || tokio_loop(&script, hooks))?);
        for (index, dir) in tmp_dirs.iter().enumerate() {
            let tmp = tempfile::tempdir_in(dir)?;
            results[BASELINES + index].1.push(in_process(hooks, || {
                contract_floor(&script, hooks, tmp.path())
            })?);
        }
        let first_operator = BASELINES + tmp_dirs.len();
        for (index, (operator, dir)) in runs.iter().enumerate() {
            let tmp = tempfile::tempdir_in(dir)?;
            let sample = operator_run(operator, [root.path(), idle_root.path()], tmp.path())?;
            results[first_operator + index].1.push(sample);
        }
        eprintln!("round {round}/{rounds} done");
    }
    report(&results, hooks);
    report_against_floors(&results, tmp_dirs.len(), runs.len());
    Ok(())
}

/// A hooks-only module `001-bench` with `hooks` hook files, enabled or not; returns the first
/// hook's path.
fn write_tree(root: &Path, hooks: usize, enabled: bool) -> anyhow::Result<PathBuf> {
    let dir = root.join("modules/001-bench/hooks");
    std::fs::create_dir_all(&dir)?;
    std::fs::create_dir_all(root.join("global-hooks"))?;
    std::fs::write(
        root.join("modules/values.yaml"),
        format!("benchEnabled: {enabled}\n"),
    )?;
    for index in 0..hooks {
        executable(&dir.join(format!("h{index:04}.sh")), NOOP_HOOK)?;
    }
    Ok(dir.join("h0000.sh"))
}

/// Seconds per hook of a `Command` loop.
fn command_loop(script: &Path, hooks: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    for _ in 0..hooks {
        let status = Command::new(script).status()?;
        anyhow::ensure!(status.success(), "the bare run failed: {status}");
    }
    Ok(started.elapsed().as_secs_f64() / hooks as f64)
}

/// The same N runs from a multi-thread tokio runtime, stdout and stderr piped and read to the
/// end: the floor of any async runner that captures output, before any hook contract work.
fn tokio_loop(script: &Path, hooks: usize) -> anyhow::Result<f64> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let started = Instant::now();
        for _ in 0..hooks {
            let output = tokio::process::Command::new(script).output().await?;
            anyhow::ensure!(output.status.success(), "the run failed: {}", output.status);
        }
        Ok(started.elapsed().as_secs_f64() / hooks as f64)
    })
}

/// Rows before the contract floors: the bash, `Command` and tokio loops.
const BASELINES: usize = 3;

/// Seconds per hook of the least any runner keeping the hook contract can do, in one thread with
/// no async runtime: per run, the 7 files made (`O_EXCL`) in `dir`, the 3 inputs written, the
/// script spawned with the 7 paths and `WORKING_DIR` in its environment, in its own directory and
/// process group, stdout and stderr piped and read to the end, the 4 outputs `lstat`ed, the 7
/// files removed. No values, binding contexts, metrics, logs, timeouts or CPU times.
fn contract_floor(script: &Path, hooks: usize, dir: &Path) -> anyhow::Result<f64> {
    use std::io::Write as _;
    use std::os::unix::process::CommandExt as _;
    let cwd = script.parent().context("the script has a dir")?;
    let started = Instant::now();
    for run in 0..hooks {
        let mut command = Command::new(script);
        let mut paths = Vec::with_capacity(CONTRACT_FILES.len());
        for (index, (name, content)) in CONTRACT_FILES.iter().enumerate() {
            let path = dir.join(format!("run-{run}-{index}.json"));
            let mut file = std::fs::File::create_new(&path)?;
            if !content.is_empty() {
                file.write_all(content.as_bytes())?;
            }
            command.env(name, &path);
            paths.push(path);
        }
        let output = command
            .env("WORKING_DIR", cwd)
            .current_dir(cwd)
            .process_group(0)
            .stdin(std::process::Stdio::null())
            .output()?;
        anyhow::ensure!(output.status.success(), "the run failed: {}", output.status);
        for path in &paths[3..] {
            anyhow::ensure!(std::fs::symlink_metadata(path)?.len() == 0, "no output");
        }
        for path in &paths {
            std::fs::remove_file(path)?;
        }
    }
    Ok(started.elapsed().as_secs_f64() / hooks as f64)
}

/// One row's measure of one round, per hook: wall seconds, and the runner's own CPU seconds
/// (user + system of every thread of its process, not its children's) when it can be told apart.
#[derive(Debug, Clone, Copy)]
struct Sample {
    wall: f64,
    cpu: Option<f64>,
}

impl Sample {
    /// The bash loop: its CPU cannot be told apart from the hooks' (both are bash's children).
    fn wall_only(wall: f64) -> Self {
        Self { wall, cpu: None }
    }
}

/// Runs a loop of `hooks` runs in this process; its CPU is this process's over the loop (the
/// bench's only busy thread then).
fn in_process(hooks: usize, run: impl FnOnce() -> anyhow::Result<f64>) -> anyhow::Result<Sample> {
    let before = cpu_seconds("self")?;
    let wall = run()?;
    let cpu = (cpu_seconds("self")? - before) / hooks as f64;
    Ok(Sample {
        wall,
        cpu: Some(cpu),
    })
}

/// User + system CPU seconds of a process's own threads (`/proc/PID/stat` fields 14 and 15; the
/// children's fields are not added), at the kernel's 100 ticks a second.
fn cpu_seconds(pid: &str) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // the command name may hold spaces: the fields start after its closing parenthesis
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("a /proc stat line")?
        .1
        .split_whitespace()
        .collect();
    let ticks = |index: usize| -> anyhow::Result<f64> {
        Ok(fields.get(index).context("a stat field")?.parse::<f64>()?)
    };
    // fields[0] is field 3 (state): utime is field 14, stime field 15
    Ok((ticks(11)? + ticks(12)?) / 100.0)
}

/// Starts the operator on the tree and waits for its first ModuleRun: seconds per hook of the run
/// (its own metric); then on the tree with the module disabled. The CPU per hook is the
/// difference of the two starts' CPU to ready (the operator's process, its hooks' not counted).
fn operator_run(
    operator: &Path,
    [root, idle_root]: [&Path; 2],
    tmp: &Path,
) -> anyhow::Result<Sample> {
    let (child, port) = spawn_operator(operator, root, &tmp.join("ao"), "info")?;
    let pid = child.id().to_string();
    let measured = wait_module_run(port).and_then(|run| Ok((run, cpu_seconds(&pid)?)));
    let ((sum, _count), cpu) = stop_operator(child, root, measured)?;
    let (child, port) = spawn_operator(operator, idle_root, &tmp.join("idle"), "info")?;
    let pid = child.id().to_string();
    let measured = wait_ready(port, Instant::now()).and_then(|_| cpu_seconds(&pid));
    let idle_cpu = stop_operator(child, idle_root, measured)?;
    let hooks = std::fs::read_dir(root.join("modules/001-bench/hooks"))?.count() as f64;
    Ok(Sample {
        wall: sum / hooks,
        cpu: Some((cpu - idle_cpu) / hooks),
    })
}

/// Waits for readiness (the first converge, which holds the module run), then reads the module's
/// first run from `/metrics`: `(sum seconds, count)`. `/metrics` is read once: with a series per
/// hook it is megabytes of text, and polling it while the hooks run would time the scrapes too.
fn wait_module_run(port: u16) -> anyhow::Result<(f64, f64)> {
    wait_ready(port, Instant::now())?;
    let text = http_get(port, "/metrics")?;
    let value = |name: &str| {
        text.lines()
            .find(|line| line.starts_with(name) && line.contains("module=\"bench\""))
            .and_then(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
    };
    match (
        value("addon_operator_module_run_seconds_sum"),
        value("addon_operator_module_run_seconds_count"),
    ) {
        (Some(sum), Some(count)) if count >= 1.0 => Ok((sum, count)),
        _ => anyhow::bail!("ready, but /metrics has no run of the module"),
    }
}

fn report(results: &[(String, Vec<Sample>)], hooks: usize) {
    println!(
        "{hooks} hooks, {} interleaved rounds; ms per hook: median (min–max)",
        results[0].1.len()
    );
    print_rows(&walls(results), 1e3, 2, "bash loop / this");
    println!("CPU ms per hook of the runner itself (its threads, not the hooks'):");
    print_rows(&cpus(results), 1e3, 3, "Command loop / this");
}

/// The rows with a CPU figure, their CPU seconds per hook.
fn cpus(results: &[(String, Vec<Sample>)]) -> Vec<(String, Vec<f64>)> {
    results
        .iter()
        .filter_map(|(name, samples)| {
            let cpu: Option<Vec<f64>> = samples.iter().map(|sample| sample.cpu).collect();
            Some((name.clone(), cpu?))
        })
        .collect()
}

fn walls(results: &[(String, Vec<Sample>)]) -> Vec<(String, Vec<f64>)> {
    let wall = |samples: &Vec<Sample>| samples.iter().map(|sample| sample.wall).collect();
    results
        .iter()
        .map(|(name, samples)| (name.clone(), wall(samples)))
        .collect()
}

/// For each tmp dir, its contract floor and the operator rows on that dir, with the ratio
/// *contract floor / this*: the operator's cost against the least the hook contract allows.
fn report_against_floors(results: &[(String, Vec<Sample>)], dirs: usize, runs: usize) {
    let (floors, operators) = results[BASELINES..].split_at(dirs);
    for (dir, floor) in floors.iter().enumerate() {
        // runs are ordered operator by operator, each over every dir
        let mut rows = vec![floor.clone()];
        rows.extend((dir..runs).step_by(dirs).map(|run| operators[run].clone()));
        println!("against the contract floor:");
        print_rows(&walls(&rows), 1e3, 2, "contract floor / this");
        println!("CPU against the contract floor's:");
        print_rows(&cpus(&rows), 1e3, 3, "contract floor / this");
    }
}
