//! CPU time of an exited (not yet reaped) child read from `/proc/<pid>/stat`, and the memory high
//! water mark of a live one from `/proc/<pid>/status`.
//!
//! `getrusage(RUSAGE_CHILDREN)` sums every child the operator ever reaped, so deltas are polluted by
//! hooks running concurrently in other queues, and its `ru_maxrss` never goes down. Without `unsafe`
//! there is no `wait4`, so the runner waits with `waitid(WNOWAIT)`, reads the zombie's own
//! `utime + cutime` / `stime + cstime` (exact per hook, including the children it waited for, in
//! clock ticks), and samples `VmHWM` of the hook process while it lives (a zombie has no memory
//! map). Max RSS is therefore that of the hook process itself (not of its descendants) and may miss
//! a peak reached within the last sampling interval before exit.

use std::time::Duration;

/// CPU and memory used by one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResourceUsage {
    pub user: Duration,
    pub sys: Duration,
    pub max_rss_kb: u64,
}

/// User and system CPU time of `pid` and the children it waited for, if `/proc` can tell.
pub fn cpu_times(pid: i32) -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_times(&stat, clock_ticks_per_second())
}

/// `VmHWM` (peak resident set size) of a live process in KiB.
pub fn peak_rss_kb(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_hwm(&status)
}

fn clock_ticks_per_second() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(ticks)) if ticks > 0 => ticks.unsigned_abs(),
        _ => 100,
    }
}

/// Fields 14–17 of `/proc/<pid>/stat`: utime, stime, cutime, cstime (clock ticks).
fn parse_cpu_times(stat: &str, ticks_per_second: u64) -> Option<(Duration, Duration)> {
    // The command name (field 2) is in parentheses and may contain spaces: count after the last ')'.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<u64> = after_name
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|field| field.parse().unwrap_or(0))
        .collect();
    let [utime, stime, cutime, cstime] = fields[..] else {
        return None;
    };
    let to_duration = |ticks: u64| {
        Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / ticks_per_second.max(1))
    };
    Some((to_duration(utime + cutime), to_duration(stime + cstime)))
}

fn parse_vm_hwm(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_add_waited_children_to_the_process_own_times() {
        let stat =
            "20238 (my hook (x)) Z 20193 20191 7550 0 -1 4227084 76 200 0 0 3 4 10 20 20 0 1 0";
        let (user, sys) = parse_cpu_times(stat, 100).unwrap();
        assert_eq!(user, Duration::from_millis(130));
        assert_eq!(sys, Duration::from_millis(240));
    }

    #[test]
    fn truncated_stat_gives_no_cpu_times() {
        assert_eq!(parse_cpu_times("1 (sh) Z 1 2", 100), None);
    }

    #[test]
    fn vm_hwm_is_read_in_kib() {
        let status = "Name:\tsh\nVmPeak:\t  2000 kB\nVmHWM:\t    1536 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(1536));
        assert_eq!(parse_vm_hwm("Name:\tsh\nState:\tZ (zombie)\n"), None);
    }

    #[test]
    fn the_current_process_has_a_peak_rss() {
        assert!(peak_rss_kb(std::process::id() as i32).unwrap_or(0) > 0);
    }
}
