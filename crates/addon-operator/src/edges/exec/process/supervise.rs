//! The limits of a run: waiting for the exit (on a pidfd, or on the blocking pool) while enforcing
//! the timeout and cancellation (SIGTERM, then SIGKILL after the grace period).

use std::os::fd::OwnedFd;

use nix::sys::signal::Signal;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::group::GroupGuard;
use super::{ExitKind, ProcessSpec};

pub(super) enum Stage {
    Running,
    Terminating,
    Killed,
}

/// Waits until the process exits (without reaping it: [`GroupGuard::reap`] does, and reads its
/// resource usage), enforcing the timeout and cancellation. Returns why we stopped it, if we did.
pub(super) async fn supervise(
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
pub(super) async fn exited(pid: i32) -> std::io::Result<()> {
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
pub(super) fn open_pidfd(pid: i32) -> Option<tokio::io::unix::AsyncFd<OwnedFd>> {
    let pid = rustix::process::Pid::from_raw(pid)?;
    let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()?;
    tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::READABLE).ok()
}

/// A pidfd turns readable when its process exits.
pub(super) async fn exited_on_reactor(
    pidfd: tokio::io::unix::AsyncFd<OwnedFd>,
) -> std::io::Result<()> {
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
pub(super) fn wait_exited(pid: i32) -> Result<(), nix::errno::Errno> {
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
