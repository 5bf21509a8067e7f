//! Runs one child process in its own process group: timeout (SIGTERM, then SIGKILL after a grace
//! period), cancellation, stdout/stderr logged line by line with the hook's fields, resource usage.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::unix::pipe;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use super::usage::ResourceUsage;
use super::{reaper, usage};

/// Longest line of hook output written to the log (upstream truncates at 10000 characters too).
const MAX_LOG_LINE: usize = 10_000;
/// Longest line of logged hook output held in memory; the rest of a longer line is dropped
/// (counted in a marker), so a line without a newline never grows the operator.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// How much of stderr is kept for the error message of a failed run.
const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// Captured stdout (a `--config` answer, an `enabled` script's output) larger than this is not
/// kept: [`ProcessOutput::stdout_overflow`] is set and the caller fails the run.
pub const MAX_CAPTURED_STDOUT: usize = 64 * 1024 * 1024;
/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 8 * 1024;
/// Bytes of the first read from a pipe (a small allocation; the buffer grows to [`READ_CHUNK`]
/// when a read fills it).
const FIRST_READ: usize = 512;
/// After the process exits, how long its output pipes may stay open (held by a background child).
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);
/// Spawning a script that another thread has just written may fail with ETXTBSY for a moment.
const SPAWN_ATTEMPTS: u32 = 5;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added to (or overriding) the operator's own environment, which the child inherits.
    pub env: Vec<(String, String)>,
    /// The child gets only `env`, not the operator's environment (the `hook list` probe, as
    /// upstream runs it).
    pub clear_env: bool,
    /// After this the process group gets SIGTERM.
    pub timeout: Duration,
    /// After SIGTERM (timeout or cancellation), how long until SIGKILL.
    pub kill_grace: Duration,
    /// Return stdout in [`ProcessOutput::stdout`] instead of logging it.
    pub capture_stdout: bool,
}

/// The fields every log line of the process carries.
#[derive(Debug, Clone, Default)]
pub struct LogFields {
    pub hook: String,
    pub module: String,
    pub binding: String,
    /// Log the process's lines at debug, not info (a probe whose output is only its answer).
    pub quiet: bool,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
    /// Killed by us after [`ProcessSpec::timeout`].
    TimedOut,
    /// Killed by us because the cancellation token fired (shutdown).
    Cancelled,
}

impl std::fmt::Display for ExitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exit status {code}"),
            Self::Signal(signal) => write!(f, "killed by signal {signal}"),
            Self::TimedOut => write!(f, "timed out"),
            Self::Cancelled => write!(f, "cancelled"),
        }
    }
}

/// The result of a finished process.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    pub exit: ExitKind,
    /// The whole stdout when [`ProcessSpec::capture_stdout`], else empty (and empty when it
    /// overflowed).
    pub stdout: String,
    /// Captured stdout was larger than [`MAX_CAPTURED_STDOUT`]; `stdout` must not be parsed.
    pub stdout_overflow: bool,
    /// The last 16 KiB of stderr.
    pub stderr_tail: String,
    pub duration: Duration,
    pub usage: ResourceUsage,
}

impl ProcessOutput {
    /// Exit code 0 and, when stdout was captured, all of it: an answer cut at
    /// [`MAX_CAPTURED_STDOUT`] is never a success, so no caller parses a truncated answer.
    pub fn succeeded(&self) -> bool {
        self.exit == ExitKind::Code(0) && !self.stdout_overflow
    }

    /// The error text of a failed run, like upstream: stderr if any (its last 256 bytes, see
    /// [`addon_core::quote::suffix`]), else how it ended.
    pub fn failure_message(&self) -> String {
        if self.stdout_overflow {
            return format!("printed more than the limit of {MAX_CAPTURED_STDOUT} bytes on stdout");
        }
        let stderr = self.stderr_tail.trim();
        if stderr.is_empty() {
            self.exit.to_string()
        } else {
            addon_core::quote::suffix(stderr)
        }
    }
}

/// A process that could not be run or waited for.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot start '{program}'", program = program.display())]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot wait for '{program}' (pid {pid})", program = program.display())]
    Wait {
        program: PathBuf,
        pid: i32,
        #[source]
        source: std::io::Error,
    },
}

impl ExecError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Spawn { .. } => "spawn",
            Self::Wait { .. } => "wait",
        }
    }
}

/// Runs the process to completion or timeout. Dropping the future kills the process group.
pub async fn run(spec: &ProcessSpec, log: &LogFields) -> Result<ProcessOutput, ExecError> {
    run_until_cancelled(spec, log, &CancellationToken::new()).await
}

/// Like [`run`]; when `cancel` fires the process group gets SIGTERM, then SIGKILL after
/// [`ProcessSpec::kill_grace`], and the output says [`ExitKind::Cancelled`].
pub async fn run_until_cancelled(
    spec: &ProcessSpec,
    log: &LogFields,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ExecError> {
    run_notifying(spec, log, cancel, |_| {}).await
}

/// Like [`run_until_cancelled`]; `spawned` is called with the pid once the process has been
/// spawned, while it runs (the hook runner wakes its file pool there).
pub async fn run_notifying(
    spec: &ProcessSpec,
    log: &LogFields,
    cancel: &CancellationToken,
    spawned: impl FnOnce(i32),
) -> Result<ProcessOutput, ExecError> {
    let started = Instant::now();
    let (mut child, registration) = spawn(spec).await?;
    let Ok(pid) = i32::try_from(child.id()) else {
        return Err(wait_error(spec, 0, std::io::ErrorKind::NotFound.into()));
    };
    spawned(pid);
    let mut group = GroupGuard {
        pgid: Pid::from_raw(pid),
        registration,
        armed: true,
    };
    let stop_reading = CancellationToken::new();
    // Both pipes are read by this task, next to the supervision: no task of their own, so no
    // cross-thread wake-up per line or per exit.
    let stdout = async_pipe(child.stdout.take().map(OwnedFd::from));
    let stderr = async_pipe(child.stderr.take().map(OwnedFd::from));
    let stop = &stop_reading;
    let readers = async move {
        tokio::join!(
            read_pipe(stdout, "stdout", spec.capture_stdout, log, stop),
            read_pipe(stderr, "stderr", false, log, stop),
        )
    };
    tokio::pin!(readers);
    let (supervised, read) = {
        let supervision = supervise(pid, spec, cancel, &group);
        tokio::pin!(supervision);
        let mut read = None;
        loop {
            tokio::select! {
                supervised = &mut supervision => break (supervised, read),
                collected = &mut readers, if read.is_none() => read = Some(collected),
            }
        }
    };
    let stopped_by_us = supervised.map_err(|source| wait_error(spec, pid, source))?;
    let (status, usage) = group
        .reap(&mut child)
        .map_err(|source| wait_error(spec, pid, source))?;
    if stopped_by_us.is_some() {
        group.signal(Signal::SIGKILL);
    }

    let (stdout, stderr) = match read {
        Some(collected) => collected,
        None => drain(readers, &stop_reading).await,
    };
    Ok(ProcessOutput {
        exit: stopped_by_us.unwrap_or_else(|| exit_kind(status)),
        stdout: String::from_utf8_lossy(&stdout.captured).into_owned(),
        stdout_overflow: stdout.overflow,
        stderr_tail: String::from_utf8_lossy(&stderr.tail).into_owned(),
        duration: started.elapsed(),
        usage,
    })
}

/// A pipe of the child on the reactor; `None` (nothing to read) when it cannot be registered.
/// `fd` is the read end of a pipe std made for the child: only its non-blocking flag is set
/// (one `ioctl`, where tokio's checked conversion spends an `fstat` and two `fcntl`s).
fn async_pipe(fd: Option<OwnedFd>) -> Option<pipe::Receiver> {
    let fd = fd?;
    rustix::io::ioctl_fionbio(&fd, true)
        .map_err(std::io::Error::from)
        .and_then(|()| pipe::Receiver::from_owned_fd_unchecked(fd))
        .inspect_err(|error| tracing::warn!(%error, "cannot read a hook's output pipe"))
        .ok()
}

/// Spawns the process, registered with the reaper until it has been reaped.
async fn spawn(
    spec: &ProcessSpec,
) -> Result<(std::process::Child, Option<reaper::Registration>), ExecError> {
    let mut attempt = 1;
    loop {
        match reaper::spawn_registered(&mut command(spec)) {
            Ok(spawned) => return Ok(spawned),
            Err(source)
                if attempt < SPAWN_ATTEMPTS
                    && source.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32) =>
            {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(source) => {
                return Err(ExecError::Spawn {
                    program: spec.program.clone(),
                    source,
                });
            }
        }
    }
}

fn command(spec: &ProcessSpec) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(&spec.program);
    command.args(&spec.args).current_dir(&spec.cwd);
    if spec.clear_env {
        command.env_clear();
    }
    command
        .envs(spec.env.iter().map(|(name, value)| (name, value)))
        .stdin(null_stdin())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    command
}

/// `/dev/null` as a child's stdin: a duplicate of one descriptor the operator opened once (a
/// `dup` per spawn instead of a path lookup and an open).
fn null_stdin() -> Stdio {
    static DEV_NULL: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    DEV_NULL
        .get_or_init(|| std::fs::File::open("/dev/null").ok())
        .as_ref()
        .and_then(|null| null.try_clone().ok())
        .map_or_else(Stdio::null, Stdio::from)
}

fn wait_error(spec: &ProcessSpec, pid: i32, source: std::io::Error) -> ExecError {
    ExecError::Wait {
        program: spec.program.clone(),
        pid,
        source,
    }
}

fn exit_kind(status: ExitStatus) -> ExitKind {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitKind::Code(code),
        (None, Some(signal)) => ExitKind::Signal(signal),
        (None, None) => ExitKind::Code(-1),
    }
}

/// The running child (the leader of its own process group). Dropped before it was reaped (the
/// run's future was dropped), it kills the whole group and reaps the child in the background,
/// still registered, so the reaper never races for its pid.
struct GroupGuard {
    pgid: Pid,
    registration: Option<reaper::Registration>,
    armed: bool,
}

impl GroupGuard {
    fn signal(&self, signal: Signal) {
        // ESRCH: the group is already gone, which is what we want.
        let _ = killpg(self.pgid, signal);
    }

    /// Reaps the exited child (it is a zombie by now, so this does not block): its status and
    /// its resource usage.
    fn reap(
        &mut self,
        child: &mut std::process::Child,
    ) -> std::io::Result<(ExitStatus, ResourceUsage)> {
        let reaped = usage::reap(child)?;
        self.armed = false;
        self.registration = None;
        Ok(reaped)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.signal(Signal::SIGKILL);
        let (pid, registration) = (self.pgid, self.registration.take());
        let reaping = std::thread::Builder::new()
            .name("hook-reap".into())
            .spawn(move || {
                let _ = waitpid(pid, None);
                drop(registration);
            });
        if let Err(error) = reaping {
            tracing::warn!(%error, pid = pid.as_raw(), "cannot reap a killed hook; the reaper will");
        }
    }
}

enum Stage {
    Running,
    Terminating,
    Killed,
}

/// Waits until the process exits (without reaping it: [`GroupGuard::reap`] does, and reads its
/// resource usage), enforcing the timeout and cancellation. Returns why we stopped it, if we did.
async fn supervise(
    pid: i32,
    spec: &ProcessSpec,
    cancel: &CancellationToken,
    group: &GroupGuard,
) -> Result<Option<ExitKind>, std::io::Error> {
    let exited = exited(pid);
    tokio::pin!(exited);
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let mut stage = Stage::Running;
    let mut stopped_by_us = None;
    loop {
        tokio::select! {
            result = &mut exited => return result.map(|()| stopped_by_us),
            () = cancel.cancelled(), if matches!(stage, Stage::Running) => {
                stopped_by_us = Some(ExitKind::Cancelled);
                group.signal(Signal::SIGTERM);
                deadline.as_mut().reset(Instant::now() + spec.kill_grace);
                stage = Stage::Terminating;
            }
            () = &mut deadline, if !matches!(stage, Stage::Killed) => {
                if matches!(stage, Stage::Running) {
                    stopped_by_us = Some(ExitKind::TimedOut);
                    group.signal(Signal::SIGTERM);
                    deadline.as_mut().reset(Instant::now() + spec.kill_grace);
                    stage = Stage::Terminating;
                } else {
                    group.signal(Signal::SIGKILL);
                    stage = Stage::Killed;
                }
            }
        }
    }
}

/// Resolves when `pid` has exited, leaving it a zombie for [`GroupGuard::reap`], so its CPU times
/// stay readable. On a multi-thread runtime (the operator) the exit is awaited on the reactor
/// through a pidfd: no thread hop per run. On a current-thread runtime (tests; the only kind a
/// paused clock runs on), and on kernels without pidfds, it waits on the blocking pool: a
/// blocking task keeps a paused clock from jumping to the timeout while a real process runs.
async fn exited(pid: i32) -> std::io::Result<()> {
    let flavor = tokio::runtime::Handle::current().runtime_flavor();
    if flavor != tokio::runtime::RuntimeFlavor::CurrentThread
        && let Some(pidfd) = open_pidfd(pid)
    {
        return exited_on_reactor(pidfd).await;
    }
    match tokio::task::spawn_blocking(move || wait_exited(pid)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(errno)) => Err(errno.into()),
        Err(join) => Err(std::io::Error::other(join)),
    }
}

/// The pidfd of `pid` on the reactor, if the kernel has pidfds (Linux 5.3+).
// `with_interest` is deprecated because an arbitrary `AsRawFd` may hand its descriptor to someone
// else while registered (tokio#8587); an `OwnedFd` cannot, and the replacement is `unsafe`.
#[allow(deprecated)]
fn open_pidfd(pid: i32) -> Option<tokio::io::unix::AsyncFd<OwnedFd>> {
    let pid = rustix::process::Pid::from_raw(pid)?;
    let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()?;
    tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::READABLE).ok()
}

/// A pidfd turns readable when its process exits.
async fn exited_on_reactor(pidfd: tokio::io::unix::AsyncFd<OwnedFd>) -> std::io::Result<()> {
    use std::os::fd::AsFd;
    loop {
        let mut ready = pidfd.readable().await?;
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
        match waitid(Id::PIDFd(pidfd.get_ref().as_fd()), flags) {
            Ok(WaitStatus::StillAlive) => ready.clear_ready(),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(errno) => return Err(errno.into()),
            Ok(_) => return Ok(()),
        }
    }
}

/// Blocks until `pid` has exited, leaving it a zombie (`WNOWAIT`) for [`GroupGuard::reap`].
fn wait_exited(pid: i32) -> Result<(), nix::errno::Errno> {
    loop {
        match waitid(
            Id::Pid(Pid::from_raw(pid)),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
        ) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(errno) => return Err(errno),
            Ok(_) => return Ok(()),
        }
    }
}

/// What a reader task collected: captured stdout, or the tail of stderr.
#[derive(Debug, Default)]
struct Collected {
    captured: Vec<u8>,
    /// Captured output passed [`MAX_CAPTURED_STDOUT`]; `captured` was dropped.
    overflow: bool,
    tail: Vec<u8>,
}

impl Collected {
    fn capture(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        if self.captured.len() + bytes.len() > MAX_CAPTURED_STDOUT {
            self.overflow = true;
            self.captured = Vec::new();
        } else {
            self.captured.extend_from_slice(bytes);
        }
    }
}

/// One line of output being read: at most [`MAX_LINE_BYTES`] kept, the rest only counted.
#[derive(Debug, Default)]
struct Line {
    bytes: Vec<u8>,
    dropped: usize,
}

impl Line {
    /// Adds `piece` (which holds at most one newline, at its end, not kept); true when the line
    /// is complete.
    fn push(&mut self, piece: &[u8]) -> bool {
        let (text, complete) = match piece.strip_suffix(b"\n") {
            Some(text) => (text, true),
            None => (piece, false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(self.bytes.len());
        let kept = room.min(text.len());
        self.bytes.extend_from_slice(&text[..kept]);
        self.dropped += text.len() - kept;
        complete
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.dropped == 0
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.dropped = 0;
    }
}

/// [`read_lines`] of `pipe`, or nothing when the process has no such pipe.
async fn read_pipe<R>(
    pipe: Option<R>,
    stream: &'static str,
    capture: bool,
    log: &LogFields,
    stop: &CancellationToken,
) -> Collected
where
    R: AsyncRead + Unpin,
{
    match pipe {
        Some(pipe) => read_lines(pipe, stream, capture, log, stop).await,
        None => Collected::default(),
    }
}

/// Reads a pipe to its end in chunks: captured whole (up to [`MAX_CAPTURED_STDOUT`]) or logged
/// line by line, each line held up to [`MAX_LINE_BYTES`]. Memory stays bounded whatever the
/// process writes.
async fn read_lines<R: AsyncRead + Unpin>(
    mut pipe: R,
    stream: &'static str,
    capture: bool,
    log: &LogFields,
    stop: &CancellationToken,
) -> Collected {
    let mut collected = Collected::default();
    let mut line = Line::default();
    // most hooks print a line or nothing: a small buffer first, the full one once it fills
    let mut chunk = vec![0_u8; FIRST_READ];
    loop {
        let read = tokio::select! {
            read = pipe.read(&mut chunk) => read,
            () = stop.cancelled() => break,
        };
        let read = match read {
            Ok(0) | Err(_) => break,
            Ok(read) if read == chunk.len() && read < READ_CHUNK => {
                chunk.resize(READ_CHUNK, 0);
                &chunk[..read]
            }
            Ok(read) => &chunk[..read],
        };
        if capture {
            collected.capture(read);
            continue;
        }
        for piece in read.split_inclusive(|byte| *byte == b'\n') {
            if line.push(piece) {
                finish_line(log, stream, &line, &mut collected.tail);
                keep_tail_of(stream, &mut collected.tail, b"\n");
                line.clear();
            }
        }
    }
    if !line.is_empty() {
        finish_line(log, stream, &line, &mut collected.tail);
    }
    collected
}

fn finish_line(log: &LogFields, stream: &'static str, line: &Line, tail: &mut Vec<u8>) {
    log_line(log, stream, line);
    keep_tail_of(stream, tail, &line.bytes);
    if line.dropped > 0 {
        keep_tail_of(stream, tail, truncation_marker(line.dropped).as_bytes());
    }
}

/// Keeps the end of stderr for the error message.
fn keep_tail_of(stream: &'static str, tail: &mut Vec<u8>, bytes: &[u8]) {
    if stream == "stderr" {
        keep_tail(tail, bytes);
    }
}

fn truncation_marker(dropped: usize) -> String {
    format!(" [line truncated: {dropped} more bytes dropped]")
}

fn keep_tail(tail: &mut Vec<u8>, line: &[u8]) {
    tail.extend_from_slice(line);
    if tail.len() > STDERR_TAIL_BYTES {
        let excess = tail.len() - STDERR_TAIL_BYTES;
        tail.drain(..excess);
    }
}

fn log_line(log: &LogFields, stream: &'static str, line: &Line) {
    let text = String::from_utf8_lossy(&line.bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    // cut on a character boundary: a byte index inside a multi-byte character would panic
    let (text, cut) = match text.char_indices().nth(MAX_LOG_LINE) {
        Some((cut, _)) => (&text[..cut], text.len() - cut),
        None => (text, 0),
    };
    if log.quiet {
        let (hook, binding) = (&log.hook, &log.binding);
        tracing::debug!(hook, binding, output = stream, "{text}");
        return;
    }
    let dropped = line.dropped + cut;
    let marker = if dropped > 0 {
        truncation_marker(dropped)
    } else {
        String::new()
    };
    let line = crate::logging::HookLine {
        hook: &log.hook,
        module: &log.module,
        binding: &log.binding,
        output: stream,
    };
    crate::logging::hook_output(line, &format!("{text}{marker}"));
}

/// Finishes reading both pipes; pipes still open after [`OUTPUT_DRAIN`] (a background child
/// holds them) are abandoned, keeping what was read so far.
async fn drain<F>(
    readers: std::pin::Pin<&mut F>,
    stop: &CancellationToken,
) -> (Collected, Collected)
where
    F: std::future::Future<Output = (Collected, Collected)>,
{
    let mut readers = readers;
    match tokio::time::timeout(OUTPUT_DRAIN, readers.as_mut()).await {
        Ok(collected) => collected,
        Err(_) => {
            stop.cancel();
            readers.await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_operator_testkit::wait::wait_for_async;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// Runs the test `$name` on a current-thread runtime (the exit awaited on the blocking pool)
    /// and on a multi-thread one (awaited on the reactor through a pidfd, as the operator does).
    macro_rules! on_both_runtimes {
        ($name:ident) => {
            mod $name {
                #[tokio::test]
                async fn current_thread() {
                    super::$name().await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn multi_thread() {
                    super::$name().await
                }
            }
        };
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_reactor_sees_the_exit_and_leaves_the_zombie_to_reap() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 7"])
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let pidfd = open_pidfd(pid).expect("pidfds (Linux 5.3+)");
        tokio::time::timeout(Duration::from_secs(10), exited_on_reactor(pidfd))
            .await
            .expect("the exit is seen")
            .unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        assert!(stat.contains(") Z "), "not reaped yet: {stat}");
        assert_eq!(child.wait().unwrap().code(), Some(7));
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn spec(program: PathBuf, timeout: Duration) -> ProcessSpec {
        ProcessSpec {
            cwd: program.parent().unwrap().to_path_buf(),
            program,
            args: vec![],
            env: vec![],
            timeout,
            kill_grace: Duration::from_millis(300),
            capture_stdout: true,
            clear_env: false,
        }
    }

    fn is_alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat.contains(") Z "),
            Err(_) => false,
        }
    }

    async fn wait_for_pid_file(path: &Path) -> i32 {
        let pid = || std::fs::read_to_string(path).ok()?.trim().parse().ok();
        let what = format!("{} to be written", path.display());
        let written = || async { pid().is_some() };
        wait_for_async(&what, Duration::from_secs(5), written, String::new).await;
        pid().unwrap_or_default()
    }

    async fn assert_dies_soon(pid: i32) {
        let dead = || async { !is_alive(pid) };
        let what = format!("process {pid} to die");
        wait_for_async(&what, Duration::from_secs(5), dead, String::new).await;
    }

    on_both_runtimes!(exit_code_and_captured_stdout_are_returned);
    async fn exit_code_and_captured_stdout_are_returned() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "echo '{\"configVersion\":\"v1\"}'; exit 3",
        );
        let mut spec = spec(hook, Duration::from_secs(10));
        spec.args = vec!["--config".into()];
        let output = run(&spec, &LogFields::default()).await.unwrap();
        assert_eq!(output.exit, ExitKind::Code(3));
        assert_eq!(output.stdout, "{\"configVersion\":\"v1\"}\n");
        assert!(!output.succeeded());
        assert_eq!(output.failure_message(), "exit status 3");
    }

    #[tokio::test]
    async fn arguments_are_passed_to_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(dir.path(), "hook", "echo \"$1\"");
        let mut spec = spec(hook, Duration::from_secs(10));
        spec.args = vec!["--config".into()];
        let output = run(&spec, &LogFields::default()).await.unwrap();
        assert!(output.succeeded());
        assert_eq!(output.stdout, "--config\n");
    }

    on_both_runtimes!(stderr_is_kept_as_the_failure_message);
    async fn stderr_is_kept_as_the_failure_message() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "echo line1 >&2; echo 'bad thing' >&2; exit 1",
        );
        let output = run(&spec(hook, Duration::from_secs(10)), &LogFields::default())
            .await
            .unwrap();
        assert_eq!(output.stderr_tail, "line1\nbad thing\n");
        assert_eq!(output.failure_message(), "line1\nbad thing");
    }

    #[tokio::test]
    async fn the_environment_is_inherited_and_extended_and_cwd_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "echo \"$EXTRA|${PATH:+has-path}|$(pwd)\"",
        );
        let mut spec = spec(hook, Duration::from_secs(10));
        spec.env = vec![("EXTRA".into(), "value".into())];
        let output = run(&spec, &LogFields::default()).await.unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(output.stdout, format!("value|has-path|{}\n", cwd.display()));
    }

    on_both_runtimes!(timeout_kills_the_process_and_its_children_quickly);
    async fn timeout_kills_the_process_and_its_children_quickly() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "sleep 100 &\necho $! > child.pid\nsleep 100",
        );
        let started = std::time::Instant::now();
        let output = run(
            &spec(hook, Duration::from_millis(300)),
            &LogFields::default(),
        )
        .await
        .unwrap();
        assert_eq!(output.exit, ExitKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_dies_soon(wait_for_pid_file(&dir.path().join("child.pid")).await).await;
    }

    on_both_runtimes!(a_process_ignoring_sigterm_is_killed_after_the_grace_period);
    async fn a_process_ignoring_sigterm_is_killed_after_the_grace_period() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "trap '' TERM\nwhile :; do sleep 0.05; done",
        );
        let started = std::time::Instant::now();
        let output = run(
            &spec(hook, Duration::from_millis(200)),
            &LogFields::default(),
        )
        .await
        .unwrap();
        assert_eq!(output.exit, ExitKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    on_both_runtimes!(cancellation_terminates_the_process_group);
    async fn cancellation_terminates_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(dir.path(), "hook", "echo $$ > hook.pid\nsleep 100");
        let cancel = CancellationToken::new();
        let spec = spec(hook, Duration::from_secs(100));
        let pid_file = dir.path().join("hook.pid");
        let trigger = cancel.clone();
        tokio::spawn(async move {
            wait_for_pid_file(&pid_file).await;
            trigger.cancel();
        });
        let output = run_until_cancelled(&spec, &LogFields::default(), &cancel)
            .await
            .unwrap();
        assert_eq!(output.exit, ExitKind::Cancelled);
    }

    on_both_runtimes!(dropping_the_run_kills_the_process_group);
    async fn dropping_the_run_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "sleep 100 &\necho $! > child.pid\nsleep 100",
        );
        let spec = spec(hook, Duration::from_secs(100));
        let running = tokio::spawn(async move { run(&spec, &LogFields::default()).await });
        let child = wait_for_pid_file(&dir.path().join("child.pid")).await;
        running.abort();
        assert_dies_soon(child).await;
    }

    on_both_runtimes!(cpu_time_of_a_busy_hook_is_measured);
    async fn cpu_time_of_a_busy_hook_is_measured() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
        );
        let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
            .await
            .unwrap();
        assert!(output.succeeded());
        assert!(
            output.usage.user + output.usage.sys > Duration::ZERO,
            "{:?}",
            output.usage
        );
        assert!(output.usage.max_rss_kb > 0, "{:?}", output.usage);
    }

    #[tokio::test]
    async fn stdin_is_dev_null_for_every_run() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(dir.path(), "hook", "readlink /proc/self/fd/0; cat");
        for _ in 0..2 {
            let output = run(
                &spec(hook.clone(), Duration::from_secs(10)),
                &LogFields::default(),
            )
            .await
            .unwrap();
            assert!(output.succeeded());
            assert_eq!(output.stdout, "/dev/null\n");
        }
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(dir.path().join("absent"), Duration::from_secs(1));
        let error = run(&spec, &LogFields::default()).await.unwrap_err();
        assert_eq!(error.category(), "spawn");
    }

    #[tokio::test]
    async fn stdout_is_logged_when_not_captured() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(dir.path(), "hook", "echo to-the-log");
        let mut spec = spec(hook, Duration::from_secs(10));
        spec.capture_stdout = false;
        let output = run(&spec, &LogFields::default()).await.unwrap();
        assert!(output.succeeded());
        assert_eq!(output.stdout, "");
    }

    on_both_runtimes!(a_background_child_holding_the_pipes_does_not_block_the_run);
    async fn a_background_child_holding_the_pipes_does_not_block_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "echo config\nsleep 30 &\necho $! > child.pid\necho done",
        );
        let started = std::time::Instant::now();
        let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
            .await
            .unwrap();
        assert!(output.succeeded());
        assert_eq!(output.stdout, "config\ndone\n");
        assert!(started.elapsed() < Duration::from_secs(10));
        let child = wait_for_pid_file(&dir.path().join("child.pid")).await;
        let _ = killpg(Pid::from_raw(child), Signal::SIGKILL);
        let _ = nix::sys::signal::kill(Pid::from_raw(child), Signal::SIGKILL);
    }

    #[tokio::test(start_paused = true)]
    async fn hooks_run_normally_under_paused_time() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "sleep 0.3\necho '{\"a\":1}'\necho warn >&2",
        );
        let output = run(&spec(hook, Duration::from_secs(1)), &LogFields::default())
            .await
            .unwrap();
        assert_eq!(output.exit, ExitKind::Code(0));
        assert_eq!(output.stdout, "{\"a\":1}\n");
        assert_eq!(output.stderr_tail, "warn\n");
    }

    #[tokio::test]
    async fn a_long_line_without_newline_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(dir.path(), "hook", "head -c 300000 /dev/zero | tr '\\0' x");
        let output = run(&spec(hook, Duration::from_secs(10)), &LogFields::default())
            .await
            .unwrap();
        assert_eq!(output.stdout.len(), 300_000);
    }

    #[test]
    fn a_line_keeps_its_first_bytes_and_counts_the_rest() {
        let mut line = Line::default();
        assert!(!line.push(&vec![b'x'; 3 * MAX_LINE_BYTES]));
        assert!(line.push(b"yz\n"));
        assert_eq!(line.bytes.len(), MAX_LINE_BYTES);
        assert_eq!(line.dropped, 2 * MAX_LINE_BYTES + 2);
    }

    #[tokio::test]
    async fn an_endless_stderr_line_is_cut_and_the_cut_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "head -c 20000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last >&2; exit 1",
        );
        let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
            .await
            .unwrap();
        let dropped = 20_000_000 - MAX_LINE_BYTES;
        assert!(
            output.stderr_tail.ends_with(&format!(
                "x [line truncated: {dropped} more bytes dropped]\nlast\n"
            )),
            "{}",
            &output.stderr_tail[output.stderr_tail.len() - 100..]
        );
        let message = output.failure_message();
        assert!(message.len() < 300, "{message}");
        assert!(message.ends_with("dropped]\nlast"), "{message}");
    }

    #[tokio::test]
    async fn an_endless_logged_stdout_line_does_not_stop_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "head -c 20000000 /dev/zero | tr '\\0' x; echo done >&2",
        );
        let mut spec = spec(hook, Duration::from_secs(60));
        spec.capture_stdout = false;
        let output = run(&spec, &LogFields::default()).await.unwrap();
        assert!(output.succeeded());
        assert_eq!(output.stderr_tail, "done\n");
        assert!(!output.stdout_overflow);
    }

    #[tokio::test]
    async fn captured_stdout_over_the_cap_is_dropped_and_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            &format!(
                "echo '{{\"configVersion\":\"v1\"}}'; head -c {} /dev/zero",
                MAX_CAPTURED_STDOUT
            ),
        );
        let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
            .await
            .unwrap();
        // exit 0, but a cut answer is not a success for any caller
        assert_eq!(output.exit, ExitKind::Code(0));
        assert!(output.stdout_overflow && !output.succeeded());
        assert!(output.failure_message().contains("more than the limit"));
        assert_eq!(output.stdout, "");
    }

    on_both_runtimes!(max_rss_is_the_peak_of_the_whole_process_tree);
    async fn max_rss_is_the_peak_of_the_whole_process_tree() {
        let dir = tempfile::tempdir().unwrap();
        let hook = script(
            dir.path(),
            "hook",
            "( big=$(head -c 60000000 /dev/zero | tr '\\0' x); sleep 0.5; echo ${#big} )",
        );
        let mut spec = spec(hook, Duration::from_secs(60));
        spec.capture_stdout = true;
        let output = run(&spec, &LogFields::default()).await.unwrap();
        assert_eq!(output.stdout, "60000000\n");
        assert!(
            output.usage.max_rss_kb > 50_000,
            "the subshell held 60 MB: {:?}",
            output.usage
        );
    }
}
