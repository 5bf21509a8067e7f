//! Reaps orphaned descendants (background processes a hook left behind) so they never pile up as
//! zombies: the operator is PID 1 in its container, or registers as a child subreaper.
//!
//! When a hook double-forks and its intermediate process exits, the kernel re-parents the
//! grandchild to the nearest subreaper ancestor (or PID 1): the operator. Such a child is never
//! waited for by anyone else, so it would stay a zombie after it exits.
//!
//! Reaping with `waitpid(-1)` would also steal the exit status of the children tokio waits for
//! (hooks, helm), so the reaper never waits for "any" child. It looks at the operator's zombie
//! children in `/proc` and waits, by pid, only for those that cannot be one of its own direct
//! children:
//! - the operator's own children are hooks (each the leader of its own process group, registered
//!   here while it runs, see [`spawn_registered`]) and commands started without a process group
//!   of their own (helm), which share the operator's process group and session;
//! - so a zombie child that is not a registered hook and is outside the operator's process group
//!   or session is an orphan: it is reaped with `waitid(P_PID, WEXITED | WNOHANG)`.
//!
//! Hooks are spawned and registered under a shared gate that a sweep holds exclusively, so a
//! sweep never sees a hook that has exited before its registration. An orphan that stays in the
//! operator's own process group and session (a background child of helm) is left alone; that is
//! the only case that can leak. A sweep runs every [`SWEEP_INTERVAL`]; it peeks with one `waitid`
//! and scans `/proc` only when a zombie child is there. It does not listen for SIGCHLD: every
//! hook's exit would interrupt a thread with the signal and wake the sweeping task beside the
//! run's own task, on the path of every hook run, for the rare orphan.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::Duration;

use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
/// How often a sweep runs: an orphan stays a zombie at most this long after its exit.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Held shared while a hook is spawned and registered, exclusively while sweeping.
static SPAWN_GATE: RwLock<()> = RwLock::new(());
/// Pids of running hooks (direct children in their own process group).
static HOOKS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// A hook pid registered for as long as this lives (until its exit status was collected).
#[derive(Debug)]
pub struct Registration(i32);

impl Drop for Registration {
    fn drop(&mut self) {
        let mut hooks = HOOKS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(hooks) = hooks.as_mut() {
            hooks.remove(&self.0);
        }
    }
}

/// Spawns `command` (which starts a process group of its own) and registers the child so the
/// reaper leaves it to its caller.
pub fn spawn_registered(
    command: &mut std::process::Command,
) -> std::io::Result<(std::process::Child, Option<Registration>)> {
    let _gate = SPAWN_GATE.read().unwrap_or_else(PoisonError::into_inner);
    let child = command.spawn()?;
    let registration = i32::try_from(child.id()).ok().map(|pid| {
        let mut hooks = HOOKS.lock().unwrap_or_else(PoisonError::into_inner);
        hooks.get_or_insert_with(HashSet::new).insert(pid);
        Registration(pid)
    });
    Ok((child, registration))
}

/// Makes the operator the reaper of its orphaned descendants (PID 1 already is one) and starts
/// the sweeping task. Must be called inside the tokio runtime; failures are logged, not fatal.
pub fn start() {
    if std::process::id() != 1
        && let Err(error) = nix::sys::prctl::set_child_subreaper(true)
    {
        tracing::warn!(%error, "cannot become a child subreaper; orphaned hook processes may stay zombies");
        return;
    }
    tokio::spawn(sweep_forever());
}

async fn sweep_forever() {
    let mut ticks = tokio::time::interval(SWEEP_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let reaped = sweep();
        if reaped > 0 {
            tracing::debug!(reaped, "reaped orphaned processes");
        }
    }
}

/// The fields of `/proc/<pid>/stat` the reaper needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProcStat {
    pid: i32,
    state: char,
    ppid: i32,
    pgrp: i32,
    session: i32,
}

impl ProcStat {
    fn parse(stat: &str) -> Option<Self> {
        let (pid, rest) = stat.split_once(" (")?;
        let mut fields = rest[rest.rfind(')')? + 1..].split_whitespace();
        let state = fields.next()?.chars().next()?;
        let mut number = || fields.next()?.parse().ok();
        Some(Self {
            pid: pid.trim().parse().ok()?,
            state,
            ppid: number()?,
            pgrp: number()?,
            session: number()?,
        })
    }

    fn read(path: &Path) -> Option<Self> {
        Self::parse(&read_proc(path).ok()?)
    }
}

/// The pid of one zombie child, if any now (peeked with `WNOWAIT`: nobody's exit status is
/// taken).
fn zombie_child() -> Option<i32> {
    let peek = waitid(
        Id::All,
        WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT,
    );
    match peek {
        Ok(WaitStatus::StillAlive) | Err(_) => None,
        Ok(status) => Some(status.pid().map_or(0, Pid::as_raw)),
    }
}

/// Reaps every orphaned zombie child once; returns how many.
fn sweep() -> usize {
    if zombie_child().is_none() {
        return 0;
    }
    let _gate = SPAWN_GATE.write().unwrap_or_else(PoisonError::into_inner);
    let Some(me) = ProcStat::read(Path::new("/proc/self/stat")) else {
        return 0;
    };
    // /proc of another pid namespace would name other processes: never wait for those.
    if u32::try_from(me.pid).ok() != Some(std::process::id()) {
        return 0;
    }
    let hooks = HOOKS.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let hooks = hooks.unwrap_or_default();
    zombie_children(me.pid)
        .into_iter()
        .filter(|child| is_orphan(child, &me, &hooks))
        .filter(|child| reap(child.pid))
        .count()
}

fn is_orphan(child: &ProcStat, me: &ProcStat, hooks: &HashSet<i32>) -> bool {
    let own_group = child.pgrp == me.pgrp && child.session == me.session;
    child.ppid == me.pid && child.state == 'Z' && !own_group && !hooks.contains(&child.pid)
}

fn reap(pid: i32) -> bool {
    waitid(
        Id::Pid(Pid::from_raw(pid)),
        WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG,
    )
    .is_ok()
}

/// The zombie children of `me` (from `/proc/self/task/*/children` when the kernel has it, else
/// from a scan of `/proc`).
fn zombie_children(me: i32) -> Vec<ProcStat> {
    let pids = children_from_tasks().unwrap_or_else(all_pids);
    pids.into_iter()
        .filter_map(|pid| ProcStat::read(&Path::new("/proc").join(pid.to_string()).join("stat")))
        .filter(|stat| stat.ppid == me && stat.state == 'Z')
        .collect()
}

fn children_from_tasks() -> Option<Vec<i32>> {
    let mut pids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let children = read_proc(task.path().join("children")).ok()?;
        pids.extend(
            children
                .split_whitespace()
                .filter_map(|pid| pid.parse::<i32>().ok()),
        );
    }
    Some(pids)
}

fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// A `/proc` file read whole, into a page-sized buffer that grows (up to 1 MiB): `/proc`
/// reports size 0, so `fs::read_to_string` would `statx` it and then grow its buffer from 32
/// bytes, one `read` per doubling.
fn read_proc(path: impl AsRef<Path>) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path)?;
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
            status.starts_with("Name:") && status.ends_with('\n') && status.contains("\nVmHWM:"),
            "{status}"
        );
    }

    fn stat(pid: i32, state: char, ppid: i32, pgrp: i32, session: i32) -> ProcStat {
        ProcStat {
            pid,
            state,
            ppid,
            pgrp,
            session,
        }
    }

    #[test]
    fn stat_lines_are_parsed_after_the_command_name() {
        let line = "1239 (my (odd) name) Z 1175 1163 12115 0 -1 4227148 200 0";
        assert_eq!(
            ProcStat::parse(line),
            Some(stat(1239, 'Z', 1175, 1163, 12115))
        );
        assert_eq!(ProcStat::parse("12 (sh) S 1"), None);
    }

    #[test]
    fn only_zombie_children_outside_the_operator_group_that_are_no_hooks_are_orphans() {
        let me = stat(100, 'S', 1, 100, 100);
        let hooks = HashSet::from([200]);
        let orphan_of_hook = stat(201, 'Z', 100, 200, 100);
        let daemon = stat(300, 'Z', 100, 300, 300);
        assert!(is_orphan(&orphan_of_hook, &me, &hooks));
        assert!(is_orphan(&daemon, &me, &hooks));
        assert!(
            !is_orphan(&stat(200, 'Z', 100, 200, 100), &me, &hooks),
            "a hook"
        );
        assert!(
            !is_orphan(&stat(150, 'Z', 100, 100, 100), &me, &hooks),
            "helm"
        );
        assert!(
            !is_orphan(&stat(201, 'S', 100, 200, 100), &me, &hooks),
            "alive"
        );
        assert!(
            !is_orphan(&stat(201, 'Z', 99, 200, 100), &me, &hooks),
            "not ours"
        );
    }
}
