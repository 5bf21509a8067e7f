//! [`GroupGuard`]: the running child's process group, signalled as a whole, reaped with its
//! resource usage, killed and reaped in the background when a run is dropped.

use std::process::ExitStatus;

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use super::super::{reaper, usage};
use super::ResourceUsage;

/// The running child (the leader of its own process group). Dropped before it was reaped (the
/// run's future was dropped), it kills the whole group and reaps the child in the background,
/// still registered, so the reaper never races for its pid.
pub(super) struct GroupGuard {
    pub(super) pgid: Pid,
    pub(super) registration: Option<reaper::Registration>,
    pub(super) armed: bool,
}

impl GroupGuard {
    pub(super) fn signal(&self, signal: Signal) {
        // ESRCH: the group is already gone, which is what we want.
        let _ = killpg(self.pgid, signal);
    }

    /// Reaps the exited child (it is a zombie by now, so this does not block): its status and
    /// its resource usage.
    pub(super) fn reap(
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
