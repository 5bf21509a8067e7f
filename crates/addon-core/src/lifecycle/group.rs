//! Modules of the same ORDER side by side (upstream's ParallelModuleRun): a converge's module
//! runs as order groups, and the dispatch of a running group's members to the parallel lanes.

use std::collections::VecDeque;

use crate::names::{ModuleName, QueueName};
use crate::queue::QueueSet;

use super::{GroupMember, Task};

/// A module run a converge plans (step 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    pub module: ModuleName,
    /// The module's ORDER (its directory's number, or `--unnumbered-modules-order`).
    pub order: u32,
    /// The run starts the module (onStartup, Synchronization).
    pub startup: bool,
    /// The modules it requires (`module.yaml`): it never runs side by side with them.
    pub requires: Vec<ModuleName>,
}

/// Step 5 by order groups, for `runs` in module order: with two lanes or more, the runs of an
/// ORDER that holds two modules or more are one `ModuleGroup` (its members run side by side;
/// the next task of `main` starts when all are done); every other run is a `ModuleRun` in
/// `main`. With one lane (`--parallel-module-runs 1`) this is the one-by-one plan of the seeds.
/// A run that requires a module of the group being formed starts the next group (it runs when
/// the group is done).
pub fn runs_by_order(runs: Vec<PlannedRun>, lanes: usize, reason: &'static str) -> Vec<Task> {
    let mut tasks = Vec::new();
    let mut runs = runs.into_iter().peekable();
    while let Some(first) = runs.next() {
        let order = first.order;
        let mut members = vec![first];
        let joins = |r: &PlannedRun, members: &[PlannedRun]| {
            r.order == order && lanes > 1 && !members.iter().any(|m| r.requires.contains(&m.module))
        };
        while let Some(next) = runs.next_if(|r| joins(r, &members)) {
            members.push(next);
        }
        if members.len() == 1 {
            tasks.extend(members.into_iter().map(|run| Task::ModuleRun {
                module: run.module,
                startup: run.startup,
                reason,
            }));
            continue;
        }
        let members = members
            .into_iter()
            .map(|run| GroupMember {
                module: run.module,
                startup: run.startup,
            })
            .collect();
        tasks.push(Task::ModuleGroup {
            order,
            members,
            reason,
        });
    }
    tasks
}

/// What a running group does next.
#[derive(Debug, Clone)]
pub enum GroupStep {
    /// Start these members: each a `ModuleRun` at the end of an idle lane.
    Dispatch(Vec<(QueueName, Task)>),
    /// Members run or wait for their retry in the lanes; look again when one is done.
    Wait,
    /// No member is pending and every lane is empty: the group is done.
    Finished,
}

/// The dispatch of a running group: `pending` members (in module order) go to the lanes that
/// are empty, one each, so that at most one member runs per lane and a failing member, retried
/// at the head of its lane, holds no other member. A member is done when its lane is empty
/// again (a re-run after afterHelm changed values stays in the lane first).
pub fn group_step(
    queues: &QueueSet<Task>,
    lanes: &[QueueName],
    pending: &mut VecDeque<GroupMember>,
    reason: &'static str,
) -> GroupStep {
    let idle: Vec<&QueueName> = lanes
        .iter()
        .filter(|lane| queues.get(lane).is_some_and(|q| q.is_empty()))
        .collect();
    if pending.is_empty() {
        let all_idle = idle.len() == lanes.len();
        return if all_idle {
            GroupStep::Finished
        } else {
            GroupStep::Wait
        };
    }
    let count = idle.len().min(pending.len());
    if count == 0 {
        return GroupStep::Wait;
    }
    let started = idle
        .into_iter()
        .zip(pending.drain(..count))
        .map(|(lane, member)| (lane.clone(), member.run(reason)))
        .collect();
    GroupStep::Dispatch(started)
}

/// The lanes of `--parallel-module-runs N`: none for 1 (every run is in `main`).
pub fn lanes(parallel_module_runs: usize) -> Vec<QueueName> {
    match parallel_module_runs {
        0 | 1 => Vec::new(),
        n => (0..n).map(QueueName::parallel).collect(),
    }
}
