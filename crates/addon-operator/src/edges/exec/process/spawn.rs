//! Spawning a hook process: the command (its own process group, `/dev/null` stdin, piped output),
//! retried while the script is busy being written, registered with the reaper; its pipes on the
//! reactor.

use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::net::unix::pipe;

use super::super::reaper;
use super::{ExecError, ExitKind, ProcessSpec};

/// Spawning a script that another thread has just written may fail with ETXTBSY for a moment.
pub(super) const SPAWN_ATTEMPTS: u32 = 5;

/// A pipe of the child on the reactor; `None` (nothing to read) when it cannot be registered.
/// `fd` is the read end of a pipe std made for the child: only its non-blocking flag is set
/// (one `ioctl`, where tokio's checked conversion spends an `fstat` and two `fcntl`s).
pub(super) fn async_pipe(fd: Option<OwnedFd>) -> Option<pipe::Receiver> {
    let fd = fd?;
    rustix::io::ioctl_fionbio(&fd, true)
        .map_err(std::io::Error::from)
        .and_then(|()| pipe::Receiver::from_owned_fd_unchecked(fd))
        .inspect_err(|error| tracing::warn!(%error, "cannot read a hook's output pipe"))
        .ok()
}

/// Spawns the process, registered with the reaper until it has been reaped.
pub(super) async fn spawn(
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

pub(super) fn command(spec: &ProcessSpec) -> std::process::Command {
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
pub(super) fn null_stdin() -> Stdio {
    static DEV_NULL: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    DEV_NULL
        .get_or_init(|| std::fs::File::open("/dev/null").ok())
        .as_ref()
        .and_then(|null| null.try_clone().ok())
        .map_or_else(Stdio::null, Stdio::from)
}

pub(super) fn exit_kind(status: ExitStatus) -> ExitKind {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitKind::Code(code),
        (None, Some(signal)) => ExitKind::Signal(signal),
        (None, None) => ExitKind::Code(-1),
    }
}
