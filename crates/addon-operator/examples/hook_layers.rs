//! Benchmark: what each layer of a hook run costs, in wall time and in the operator's own CPU
//! (`getrusage(RUSAGE_SELF)`: every thread, the `hook-files` thread included; the hooks' CPU is
//! not in it). The same no-op script runs N times per row, in interleaved rounds, on one
//! multi-thread tokio runtime, after a bash loop running it N times (what a user writes, the
//! baseline of the wall times; its CPU is the shell's, so it has no CPU row):
//! - tokio loop: `tokio::process::Command::output()`, the floor of an async runner;
//! - the process runner (`edges::exec::process::run`): own process group, working directory,
//!   exit on a pidfd, reaped by the runner with its CPU time and peak memory (`wait4`);
//! - the same with the 9 variables a hook gets (the environment is copied for every spawn);
//! - `run_hook`: the hook contract (3 input files written, 4 empty output files, outputs read),
//!   with files from a `TmpPool` (as `start` does) and with files made by the run itself;
//! - three designs not built, as floors: a blocking thread of its own that spawns the script and
//!   reads its piped output (the runtime awaits a oneshot per run), a single-threaded helper
//!   process doing the same for requests sent over a socket (a "spawn server"), and the whole
//!   row of runs handed to one blocking thread at once, each run keeping the contract and the
//!   supervision synchronously (pool files, variables, `poll(2)` on the pipes and a pidfd with a
//!   timeout, reaped with `wait4`, outputs read): a module run on a thread.
//!
//! Run with `bench/hook-overhead/layers.sh [N] [ROUNDS] [TMP_DIR]`.

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "bench_support/mod.rs"]
#[expect(
    dead_code,
    reason = "this driver starts no operator; it uses the file and report helpers"
)]
mod bench_support;

use addon_operator::edges::exec::hook_run::{HookInvocation, HookOwner, HookRunSettings, run_hook};
use addon_operator::edges::exec::process::{LogFields, ProcessSpec, run};
use addon_operator::edges::exec::tmp_files::Content;
use addon_operator::edges::exec::tmp_pool::{FileKind, RunFiles, TmpPool};
use anyhow::Context as _;
use bench_support::{CONTRACT_FILES, bash_loop, executable, print_rows};
use nix::sys::resource::{UsageWho, getrusage};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

const NOOP_HOOK: &str = "#!/bin/sh\nexit 0\n";

#[derive(Clone, Copy)]
enum Layer {
    Bash,
    Tokio,
    Runner,
    RunnerWithEnv,
    HookWithPool,
    HookOwnFiles,
    SpawnThread,
    HelperProcess,
    ThreadRun,
}

const LAYERS: [(Layer, &str); 9] = [
    (Layer::Bash, "bash loop"),
    (Layer::Tokio, "tokio loop, output piped"),
    (Layer::Runner, "process runner"),
    (Layer::RunnerWithEnv, "process runner + 9 env vars"),
    (Layer::HookWithPool, "run_hook, files from the pool"),
    (Layer::HookOwnFiles, "run_hook, files made by the run"),
    (Layer::SpawnThread, "not built: a spawn thread"),
    (Layer::HelperProcess, "not built: a spawn helper process"),
    (Layer::ThreadRun, "not built: the runs on one thread"),
];

/// What the rows share: the hook file pool, the spawn thread's queue, the helper's socket.
struct Rig {
    pool: Arc<TmpPool>,
    thread: mpsc::Sender<(PathBuf, oneshot::Sender<bool>)>,
    helper: tokio::sync::Mutex<tokio::net::UnixStream>,
}

fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("spawn-helper") {
        use std::os::fd::AsFd as _;
        return serve_spawns(UnixStream::from(
            std::io::stdin().as_fd().try_clone_to_owned()?,
        ));
    }
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
    let (ours, theirs) = UnixStream::pair()?;
    let mut helper = Command::new(std::env::current_exe()?)
        .arg("spawn-helper")
        .stdin(OwnedFd::from(theirs))
        .spawn()?;
    ours.set_nonblocking(true)?;
    let helper_socket = runtime.block_on(async { tokio::net::UnixStream::from_std(ours) })?;
    let rig = Rig {
        pool,
        thread: start_spawn_thread(),
        helper: tokio::sync::Mutex::new(helper_socket),
    };
    let mut wall: Vec<(String, Vec<f64>)> = Vec::new();
    let mut cpu: Vec<(String, Vec<f64>)> = Vec::new();
    for (_, name) in LAYERS {
        wall.push((name.to_string(), Vec::new()));
        cpu.push((name.to_string(), Vec::new()));
    }
    for round in 1..=rounds {
        for (index, (layer, _)) in LAYERS.iter().enumerate() {
            if matches!(layer, Layer::Bash) {
                wall[index].1.push(bash_loop(&script, hooks)?);
                continue;
            }
            let (started, cpu_before) = (Instant::now(), self_cpu()?);
            runtime.block_on(async {
                if matches!(layer, Layer::ThreadRun) {
                    let (script, pool) = (script.clone(), Arc::clone(&rig.pool));
                    return tokio::task::spawn_blocking(move || {
                        (0..hooks).try_for_each(|_| run_supervised(&script, &pool))
                    })
                    .await?;
                }
                for _ in 0..hooks {
                    run_once(*layer, &script, tmp.path(), &rig).await?;
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
    print_rows(&wall, 1e3, 3, "bash loop / this");
    println!("operator CPU ms per run (all its threads): median (min–max)");
    // the bash loop's CPU is its shell's: no row
    cpu.retain(|(_, figures)| !figures.is_empty());
    print_rows(&cpu, 1e3, 3, "tokio loop / this");
    // the pool shuts down when dropped; the helper exits at the end of its socket
    drop(rig);
    helper.wait()?;
    Ok(())
}

async fn run_once(layer: Layer, script: &Path, tmp: &Path, rig: &Rig) -> anyhow::Result<()> {
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
                clear_env: false,
            };
            let output = run(&spec, &LogFields::default()).await?;
            anyhow::ensure!(output.succeeded(), "{}", output.failure_message());
        }
        Layer::HookWithPool | Layer::HookOwnFiles => {
            let settings = HookRunSettings {
                tmp_dir: tmp.to_path_buf(),
                pool: matches!(layer, Layer::HookWithPool).then(|| Arc::clone(&rig.pool)),
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
                binding_context: addon_core::binding_context::ContextDocument::Json(&context),
                config_values: &empty,
                values: &empty,
                extra_env: &[],
                hook_args: &[],
                webhook_response: false,
            };
            let output = run_hook(&settings, &invocation, &CancellationToken::new()).await?;
            anyhow::ensure!(
                output.outputs.is_some(),
                "{}",
                output.process.failure_message()
            );
        }
        Layer::SpawnThread => {
            let (reply, succeeded) = oneshot::channel();
            rig.thread.send((script.to_path_buf(), reply))?;
            anyhow::ensure!(succeeded.await?, "the run failed");
        }
        Layer::HelperProcess => {
            let mut socket = rig.helper.lock().await;
            let path = script.as_os_str().as_encoded_bytes();
            let mut request = u32::try_from(path.len())?.to_le_bytes().to_vec();
            request.extend_from_slice(path);
            socket.write_all(&request).await?;
            let succeeded = socket.read_u8().await?;
            let mut output = vec![0; usize::try_from(socket.read_u32_le().await?)?];
            socket.read_exact(&mut output).await?;
            anyhow::ensure!(succeeded == 1, "the run failed");
        }
        Layer::Bash | Layer::ThreadRun => anyhow::bail!("this row runs all its hooks at once"),
    }
    Ok(())
}

/// One hook run as a synchronous runner would make it: the 7 files from the pool, the 8
/// variables, own directory and process group, stdout and stderr read through `poll(2)` next to
/// the exit on a pidfd and a timeout, the reap with its CPU times and peak memory (`wait4`), the
/// 4 outputs read. No values, binding contexts, metrics or log lines.
fn run_supervised(script: &Path, pool: &Arc<TmpPool>) -> anyhow::Result<()> {
    use addon_operator::edges::exec::{reaper, tmp_files, usage};
    let dir = script.parent().context("the script has a dir")?;
    let mut files = RunFiles::new(pool.dir(), false, Some(pool))?;
    let mut command = Command::new(script);
    let mut outputs = Vec::new();
    for (index, (name, content)) in CONTRACT_FILES.into_iter().enumerate() {
        let kind = FileKind {
            stem: name,
            suffix: "",
        };
        let path = files.file(
            kind,
            || format!("{name}-"),
            Content::Bytes(content.as_bytes()),
        )?;
        command.env(name, &path);
        if index >= 3 {
            outputs.push((name, path));
        }
    }
    command
        .env("WORKING_DIR", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let (mut child, registration) = reaper::spawn_registered(&mut command)?;
    pool.wake();
    let pid = i32::try_from(child.id())?;
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid).context("a child's pid")?,
        rustix::process::PidfdFlags::empty(),
    )?;
    let pipes = [
        child.stdout.take().map(OwnedFd::from),
        child.stderr.take().map(OwnedFd::from),
    ]
    .map(|pipe| pipe.map(std::fs::File::from));
    supervise_sync(&pidfd, pipes, Duration::from_secs(60))?;
    let (status, _usage) = usage::reap(&mut child)?;
    drop(registration);
    anyhow::ensure!(status.success(), "the run failed: {status:?}");
    for (name, path) in outputs {
        let limit = match name {
            "METRICS_PATH" => tmp_files::limits::METRICS_FILE_BYTES,
            _ => tmp_files::limits::PATCH_FILE_BYTES,
        };
        tmp_files::read_output(&path, name, limit)?;
    }
    files.finish();
    Ok(())
}

/// Waits, without reaping, until the process of `pidfd` has exited and both pipes are at their
/// end, reading them in chunks (a no-op hook writes nothing, so no line is split or logged);
/// fails after `timeout`.
fn supervise_sync(
    pidfd: &OwnedFd,
    mut pipes: [Option<std::fs::File>; 2],
    timeout: Duration,
) -> anyhow::Result<()> {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use std::os::fd::AsFd as _;
    let deadline = Instant::now() + timeout;
    let (mut exited, mut chunk) = (false, [0_u8; 8192]);
    while !exited || pipes.iter().any(Option::is_some) {
        let left = deadline.saturating_duration_since(Instant::now());
        anyhow::ensure!(!left.is_zero(), "timed out");
        let mut fds = vec![PollFd::new(pidfd, PollFlags::IN)];
        fds.extend(
            pipes
                .iter()
                .flatten()
                .map(|pipe| PollFd::new(pipe, PollFlags::IN)),
        );
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs())?,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        poll(&mut fds, Some(&timeout))?;
        let ready: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
        drop(fds);
        if ready[0] && !exited {
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
            exited = !matches!(
                waitid(Id::PIDFd(pidfd.as_fd()), flags)?,
                WaitStatus::StillAlive
            );
        }
        let open = pipes.iter_mut().filter(|pipe| pipe.is_some());
        for (pipe, ready) in open.zip(&ready[1..]) {
            let Some(file) = pipe.as_mut().filter(|_| *ready) else {
                continue;
            };
            if file.read(&mut chunk)? == 0 {
                *pipe = None;
            }
        }
    }
    Ok(())
}

/// Runs `script` as the process runner does (own dir and process group, stdin from /dev/null,
/// stdout and stderr piped and read to the end); returns whether it exited 0, and its stdout.
fn run_blocking(script: &Path) -> std::io::Result<(bool, Vec<u8>)> {
    let mut command = Command::new(script);
    command
        .current_dir(script.parent().unwrap_or(Path::new("/")))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // registered, so the operator's reaper (running in this process) leaves the child alone
    let (child, _registration) =
        addon_operator::edges::exec::reaper::spawn_registered(&mut command)?;
    let output = child.wait_with_output()?;
    Ok((output.status.success(), output.stdout))
}

/// A thread that runs the scripts it is sent, one at a time, and answers on each oneshot.
fn start_spawn_thread() -> mpsc::Sender<(PathBuf, oneshot::Sender<bool>)> {
    let (sender, requests) = mpsc::channel::<(PathBuf, oneshot::Sender<bool>)>();
    std::thread::spawn(move || {
        for (script, reply) in requests {
            let _ = reply.send(run_blocking(&script).is_ok_and(|(succeeded, _)| succeeded));
        }
    });
    sender
}

/// The helper process: reads `len, path` requests from the socket, runs each script, answers
/// `succeeded, len, stdout`; returns at the end of the socket.
fn serve_spawns(mut socket: UnixStream) -> anyhow::Result<()> {
    let mut length = [0u8; 4];
    while socket.read_exact(&mut length).is_ok() {
        let mut path = vec![0; usize::try_from(u32::from_le_bytes(length))?];
        socket.read_exact(&mut path)?;
        let script = PathBuf::from(String::from_utf8(path)?);
        let (succeeded, stdout) = run_blocking(&script)?;
        let mut reply = vec![u8::from(succeeded)];
        reply.extend_from_slice(&u32::try_from(stdout.len())?.to_le_bytes());
        reply.extend_from_slice(&stdout);
        socket.write_all(&reply)?;
    }
    Ok(())
}

/// User plus system CPU seconds of this process, all threads.
fn self_cpu() -> anyhow::Result<f64> {
    let usage = getrusage(UsageWho::RUSAGE_SELF)?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}
