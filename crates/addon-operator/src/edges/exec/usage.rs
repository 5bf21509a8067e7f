//! CPU time of an exited (not yet reaped) child from `/proc/<pid>/stat`, and the memory high water
//! mark of a live process tree from `/proc/<pid>/status`.
//!
//! `getrusage(RUSAGE_CHILDREN)` sums every child the operator ever reaped, so deltas are polluted by
//! hooks running concurrently in other queues, and its `ru_maxrss` never goes down. Without `unsafe`
//! there is no `wait4`, so the runner waits with `waitid(WNOWAIT)`, reads the zombie's own
//! `utime + cutime` / `stime + cstime` (exact per hook, including the children it waited for, in
//! clock ticks), and samples the peak memory of the hook's whole process tree while it runs: the
//! largest `VmHWM` among the hook, its live descendants and the members of its process group
//! (the `ru_maxrss` of `wait4`: the peak of the largest single process of the tree, not a sum).
//! Each process's `VmHWM` is its own peak since it started, so a sample sees the peak of every
//! process alive at that moment; a descendant that starts and exits between two samples is missed.
//! The `stat` file is opened right after the spawn, while the hook runs, and read after its exit:
//! the exit path of a run costs one `pread` there. (Its `rss` field cannot be the first memory
//! sample: the kernel's per-CPU counters make it 0 for a process that has just started.)

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// CPU and memory used by one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResourceUsage {
    pub user: Duration,
    pub sys: Duration,
    /// The largest `VmHWM` any sample saw; 0 when no sample saw the process (gone before the
    /// first, or never spawned): unknown, and the metrics leave their gauge alone.
    pub max_rss_kb: u64,
}

/// `/proc/<pid>/stat` of a child, opened right after its spawn (while the child runs) and read
/// once it has exited: its CPU times cost one `pread` after the exit instead of a path lookup,
/// an open, two reads and a close.
#[derive(Debug)]
pub struct StatFile(std::fs::File);

impl StatFile {
    /// Opens the `stat` file of `pid`; `None` when `/proc` cannot tell.
    pub fn open(pid: i32) -> Option<Self> {
        std::fs::File::open(format!("/proc/{pid}/stat"))
            .ok()
            .map(Self)
    }

    /// User and system CPU time of the process and the children it waited for.
    pub fn cpu_times(&self) -> Option<(Duration, Duration)> {
        with_record(&self.0, |stat| {
            parse_cpu_times(stat, clock_ticks_per_second())
        })
    }
}

/// Parses a `/proc` file of one record (`stat`, `status`) read from offset 0. The kernel formats
/// such a file whole and hands it over in one read when the buffer is larger, so a read shorter
/// than its buffer is the end: one `read` into a buffer on the stack, not a second read to see
/// the end and no allocation. A longer record (up to 1 MiB) is read into a growing buffer.
fn with_record<T>(file: &std::fs::File, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    use std::os::unix::fs::FileExt;
    let mut first = [0_u8; 4096];
    let len = loop {
        match file.read_at(&mut first, 0) {
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            other => break other.ok()?,
        }
    };
    if len < first.len() {
        return parse(std::str::from_utf8(&first[..len]).ok()?);
    }
    parse(&read_record(file).ok()?)
}

/// A `/proc` file of one record from offset 0, into a buffer that grows (up to 1 MiB).
fn read_record(file: &std::fs::File) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    const LIMIT: usize = 1 << 20;
    let mut buffer = vec![0_u8; 4096];
    let mut len = 0;
    loop {
        let read = match file.read_at(&mut buffer[len..], len as u64) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        len += read;
        if read == 0 || len < buffer.len() || buffer.len() >= LIMIT {
            break;
        }
        buffer.resize((buffer.len() * 2).min(LIMIT), 0);
    }
    buffer.truncate(len);
    String::from_utf8(buffer)
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
}

/// A `/proc` file, read whole as [`read_record`] reads an open one (a page first, up to 1 MiB):
/// `/proc` reports size 0, so `fs::read_to_string` would `statx` it and then grow its buffer
/// from 32 bytes, one `read` per doubling.
pub fn read_proc(path: impl AsRef<Path>) -> std::io::Result<String> {
    read_record(&std::fs::File::open(path)?)
}

/// `VmHWM` (peak resident set size) of a live process in KiB.
pub fn peak_rss_kb(pid: i32) -> Option<u64> {
    let status = std::fs::File::open(format!("/proc/{pid}/status")).ok()?;
    with_record(&status, parse_vm_hwm)
}

/// The peak RSS in KiB of the process tree of `root`: the largest `VmHWM` among `root`, its live
/// descendants and the processes still in its process group (`root` leads its own group).
pub fn tree_peak_rss_kb(root: i32) -> u64 {
    tree_pids(root)
        .into_iter()
        .filter_map(peak_rss_kb)
        .max()
        .unwrap_or(0)
}

/// `root` and every live process under it, from `/proc/<pid>/task/*/children` when the kernel
/// has it, else from one scan of `/proc`.
fn tree_pids(root: i32) -> Vec<i32> {
    match descendants_from_children_files(root) {
        Some(pids) => pids,
        None => tree_from_scan(root, &scan_parents()),
    }
}

fn descendants_from_children_files(root: i32) -> Option<Vec<i32>> {
    let mut pids = vec![root];
    let mut next = 0;
    while let Some(&pid) = pids.get(next) {
        next += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            match read_proc(task.path().join("children")) {
                Ok(children) => pids.extend(
                    children
                        .split_whitespace()
                        .filter_map(|child| child.parse::<i32>().ok()),
                ),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
                Err(_) => {}
            }
        }
    }
    Some(pids)
}

/// `pid -> (ppid, pgrp)` of every process in `/proc`.
fn scan_parents() -> HashMap<i32, (i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = read_proc(Path::new("/proc").join(pid.to_string()).join("stat"));
            Some((pid, parse_parents(&stat.ok()?)?))
        })
        .collect()
}

/// `(ppid, pgrp)`: fields 4 and 5 of `/proc/<pid>/stat`.
fn parse_parents(stat: &str) -> Option<(i32, i32)> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace().skip(1);
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((ppid, pgrp))
}

fn tree_from_scan(root: i32, parents: &HashMap<i32, (i32, i32)>) -> Vec<i32> {
    let mut tree: HashSet<i32> = HashSet::from([root]);
    tree.extend(
        parents
            .iter()
            .filter(|(_, (_, pgrp))| *pgrp == root)
            .map(|(pid, _)| *pid),
    );
    let mut grew = true;
    while grew {
        let before = tree.len();
        let adopted: Vec<i32> = parents
            .iter()
            .filter(|(pid, (ppid, _))| tree.contains(ppid) && !tree.contains(pid))
            .map(|(pid, _)| *pid)
            .collect();
        tree.extend(adopted);
        grew = tree.len() > before;
    }
    tree.into_iter().collect()
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
    fn read_proc_reads_past_its_first_buffer_and_reads_proc_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        let text: String = (0..2000).map(|i| format!("{i} ")).collect();
        std::fs::write(&path, &text).unwrap();
        assert!(text.len() > 4096);
        assert_eq!(read_proc(&path).unwrap(), text);
        let status = read_proc("/proc/self/status").unwrap();
        assert!(
            status.starts_with("Name:") && status.contains("\nVmHWM:"),
            "{status}"
        );
    }

    #[test]
    fn cpu_times_add_waited_children_to_the_process_own_times() {
        let stat =
            "20238 (my hook (x)) Z 20193 20191 7550 0 -1 4227084 76 200 0 0 3 4 10 20 20 0 1 0";
        let (user, sys) = parse_cpu_times(stat, 100).unwrap();
        assert_eq!(user, Duration::from_millis(130));
        assert_eq!(sys, Duration::from_millis(240));
    }

    #[test]
    fn the_stat_file_opened_at_the_spawn_gives_the_cpu_times_of_the_zombie() {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "read line; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
            ])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let stat = StatFile::open(pid).unwrap();
        drop(child.stdin.take());
        let flags = nix::sys::wait::WaitPidFlag::WEXITED | nix::sys::wait::WaitPidFlag::WNOWAIT;
        let id = nix::sys::wait::Id::Pid(nix::unistd::Pid::from_raw(pid));
        nix::sys::wait::waitid(id, flags).unwrap();
        let (user, sys) = stat.cpu_times().unwrap();
        assert!(
            user + sys > Duration::ZERO,
            "the loop took CPU: {user:?} {sys:?}"
        );
        let fresh = read_proc(format!("/proc/{pid}/stat")).unwrap();
        assert_eq!(
            stat.cpu_times(),
            parse_cpu_times(&fresh, clock_ticks_per_second()),
            "the same as a fresh read"
        );
        child.wait().unwrap();
    }

    #[test]
    fn a_record_longer_than_the_first_buffer_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        let text: String = (0..3000).map(|i| format!("{i} ")).collect();
        std::fs::write(&path, &text).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        assert_eq!(read_record(&file).unwrap(), text);
        let whole = with_record(&file, |record| Some(record.to_string()));
        assert_eq!(whole.unwrap(), text);
        let short = std::fs::File::open("/proc/self/stat").unwrap();
        let pid = with_record(&short, |stat| stat.split(' ').next()?.parse::<u32>().ok());
        assert_eq!(pid, Some(std::process::id()));
        let status = std::fs::File::open("/proc/self/status").unwrap();
        let status = read_record(&status).unwrap();
        assert!(
            status.starts_with("Name:") && status.ends_with('\n'),
            "{status}"
        );
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
    fn the_tree_of_a_process_holds_its_descendants_and_its_group() {
        let parents = HashMap::from([
            (10, (1, 10)),  // the hook
            (11, (10, 10)), // its child
            (12, (11, 10)), // a grandchild
            (13, (1, 10)),  // an orphan still in the hook's group
            (14, (13, 14)), // in a group of its own, under the orphan
            (20, (1, 20)),  // unrelated
            (21, (20, 20)),
        ]);
        let mut tree = tree_from_scan(10, &parents);
        tree.sort_unstable();
        assert_eq!(tree, [10, 11, 12, 13, 14]);
    }

    #[test]
    fn parents_are_read_after_the_command_name() {
        assert_eq!(parse_parents("7 (a (b) c) S 3 5 5 0 -1"), Some((3, 5)));
    }

    #[test]
    fn the_current_process_has_a_peak_rss() {
        assert!(peak_rss_kb(std::process::id() as i32).unwrap_or(0) > 0);
        assert!(tree_peak_rss_kb(std::process::id() as i32) > 0);
    }
}
