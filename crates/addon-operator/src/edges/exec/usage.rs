//! CPU time and peak memory of a hook, from the kernel's accounting when the runner reaps it
//! (`wait4`), as upstream reads them (`ProcessState.SysUsage()`): user and system time of the hook
//! and of the children it waited for, and `ru_maxrss`, the peak resident memory of the largest
//! of those processes (not a sum). The numbers cost nothing beyond the reaping itself (no `/proc`
//! file is opened on a hook run's path).

use std::process::{Child, ExitStatus};

use wait4::Wait4 as _;

pub use crate::runtime::edges::ResourceUsage;

/// Reaps `child` (waiting for it to exit if it has not) and returns its exit status and
/// resource usage.
pub fn reap(child: &mut Child) -> std::io::Result<(ExitStatus, ResourceUsage)> {
    loop {
        match child.wait4() {
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
            Ok(reaped) => {
                let usage = ResourceUsage {
                    user: reaped.rusage.utime,
                    sys: reaped.rusage.stime,
                    max_rss_kb: reaped.rusage.maxrss / 1024,
                };
                return Ok((reaped.status, usage));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn spawn(script: &str) -> Child {
        std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .unwrap()
    }

    #[test]
    fn reaping_gives_the_status_and_the_cpu_time_of_the_child_and_the_children_it_waited_for() {
        // the CPU is spent in a subshell the child waits for
        let mut child = spawn("( i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done ); exit 3");
        let (status, usage) = reap(&mut child).unwrap();
        assert_eq!(status.code(), Some(3));
        assert!(
            usage.user + usage.sys > Duration::from_millis(10),
            "the loop took CPU: {usage:?}"
        );
        assert!(usage.max_rss_kb > 0, "{usage:?}");
    }

    #[test]
    fn the_peak_memory_is_the_largest_waited_process() {
        let mut child =
            spawn("x=$(head -c 30000000 /dev/zero | tr '\\0' x); echo ${#x} > /dev/null");
        let (_, usage) = reap(&mut child).unwrap();
        assert!(usage.max_rss_kb > 25_000, "the shell held 30 MB: {usage:?}");
    }

    #[test]
    fn a_signalled_child_is_reported_as_such_and_a_second_reap_fails() {
        use std::os::unix::process::ExitStatusExt as _;
        let mut child = spawn("kill -9 $$");
        let (status, _) = reap(&mut child).unwrap();
        assert_eq!(status.signal(), Some(9));
        let again = reap(&mut child).unwrap_err();
        assert_eq!(again.raw_os_error(), Some(nix::errno::Errno::ECHILD as i32));
    }
}
