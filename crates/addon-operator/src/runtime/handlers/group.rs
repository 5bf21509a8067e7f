//! A group of modules of one ORDER (ParallelModuleRun): hands its members to the idle parallel
//! lanes as `addon_core::lifecycle::group_step` decides, and is done when every member is.

use addon_core::lifecycle::{self, GroupMember, GroupStep};

use crate::runtime::Shared;
use crate::runtime::task::Outcome;

/// Runs `members` side by side in the lanes; the task (the head of `main`) ends when no member
/// is pending and every lane is empty, so the next ORDER waits for the whole group.
pub async fn run(
    shared: &Shared,
    order: u32,
    members: &[GroupMember],
    reason: &'static str,
) -> Outcome {
    let started = tokio::time::Instant::now();
    let lanes = {
        let mut st = shared.lock();
        st.group_pending = Some(members.iter().cloned().collect());
        st.lanes.len()
    };
    let modules: Vec<&str> = members.iter().map(|m| m.module.as_str()).collect();
    let modules = modules.join(",");
    tracing::info!(order, %modules, lanes, "parallel module run started");
    loop {
        let notified = shared.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        match step(shared, reason) {
            GroupStep::Finished => break,
            GroupStep::Dispatch(_) => continue,
            GroupStep::Wait => {}
        }
        tokio::select! {
            () = &mut notified => {}
            () = shared.stopping.cancelled() => return Outcome::done(),
        }
    }
    let duration_ms = started.elapsed().as_millis() as u64;
    tracing::info!(order, %modules, duration_ms, "parallel module run done");
    Outcome::done()
}

/// One look at the lanes under the state lock: dispatch what fits, or say the group is done.
fn step(shared: &Shared, reason: &'static str) -> GroupStep {
    let mut guard = shared.lock();
    let st = &mut *guard;
    let mut pending = st.group_pending.take().unwrap_or_default();
    let step = lifecycle::group_step(&st.queues, &st.lanes, &mut pending, reason);
    if let GroupStep::Dispatch(tasks) = &step {
        for (lane, task) in tasks {
            tracing::info!(queue = %lane, module = task.module().map(|m| m.as_str()).unwrap_or_default(), "module run handed to a parallel lane");
            shared.push(st, lane, task.clone());
        }
    }
    if !matches!(step, GroupStep::Finished) {
        st.group_pending = Some(pending);
    }
    step
}
