//! Runs one child process in its own process group: timeout (SIGTERM, then SIGKILL after a grace
//! period), cancellation, stdout/stderr logged line by line with the hook's fields, resource usage.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use super::usage::ResourceUsage;

mod group;
mod output;
mod spawn;
mod supervise;

use group::GroupGuard;
use output::{Collected, drain, read_pipe};
use spawn::{async_pipe, exit_kind, spawn};
use supervise::supervise;

/// Longest line of logged hook output held in memory; the rest of a longer line is dropped
/// (counted in a marker), so a line without a newline never grows the operator.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Captured stdout (a `--config` answer, an `enabled` script's output) larger than this is not
/// kept: [`ProcessOutput::stdout_overflow`] is set and the caller fails the run.
pub const MAX_CAPTURED_STDOUT: usize = 64 * 1024 * 1024;
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
    let pipes = (
        async_pipe(child.stdout.take().map(OwnedFd::from)),
        async_pipe(child.stderr.take().map(OwnedFd::from)),
    );
    let after_exit = |supervised: std::io::Result<Option<ExitKind>>, group: &mut GroupGuard| {
        let stopped_by_us = supervised.map_err(|source| wait_error(spec, pid, source))?;
        let (status, usage) = group
            .reap(&mut child)
            .map_err(|source| wait_error(spec, pid, source))?;
        if stopped_by_us.is_some() {
            group.signal(Signal::SIGKILL);
        }
        Ok((stopped_by_us.unwrap_or_else(|| exit_kind(status)), usage))
    };
    let ((exit, usage), (stdout, stderr)) =
        supervise_and_read(spec, log, cancel, pipes, &mut group, after_exit).await?;
    Ok(ProcessOutput {
        exit,
        stdout: String::from_utf8_lossy(&stdout.captured).into_owned(),
        stdout_overflow: stdout.overflow,
        stderr_tail: String::from_utf8_lossy(&stderr.tail).into_owned(),
        duration: started.elapsed(),
        usage,
    })
}

/// Supervises the running process (timeout, cancellation) while this task reads both of its
/// pipes, next to the supervision: no task of their own, so no cross-thread wake-up per line or
/// per exit. Once it has exited, `after_exit` reaps it (and kills what is left of a group we
/// stopped); then pipes still open are drained.
async fn supervise_and_read<T>(
    spec: &ProcessSpec,
    log: &LogFields,
    cancel: &CancellationToken,
    (stdout, stderr): (Option<pipe::Receiver>, Option<pipe::Receiver>),
    group: &mut GroupGuard,
    after_exit: impl FnOnce(std::io::Result<Option<ExitKind>>, &mut GroupGuard) -> Result<T, ExecError>,
) -> Result<(T, (Collected, Collected)), ExecError> {
    let stop_reading = CancellationToken::new();
    let stop = &stop_reading;
    let readers = async move {
        tokio::join!(
            read_pipe(stdout, "stdout", spec.capture_stdout, log, stop),
            read_pipe(stderr, "stderr", false, log, stop),
        )
    };
    tokio::pin!(readers);
    let (supervised, read) = {
        let supervision = supervise(leader_pid(group), spec, cancel, group);
        tokio::pin!(supervision);
        let mut read = None;
        loop {
            tokio::select! {
                supervised = &mut supervision => break (supervised, read),
                collected = &mut readers, if read.is_none() => read = Some(collected),
            }
        }
    };
    let ended = after_exit(supervised, group)?;
    let read = match read {
        Some(collected) => collected,
        None => drain(readers, &stop_reading).await,
    };
    Ok((ended, read))
}

/// The pid of the group's leader, the process itself.
fn leader_pid(group: &GroupGuard) -> i32 {
    group.pgid.as_raw()
}
fn wait_error(spec: &ProcessSpec, pid: i32, source: std::io::Error) -> ExecError {
    ExecError::Wait {
        program: spec.program.clone(),
        pid,
        source,
    }
}

#[cfg(test)]
mod tests;
