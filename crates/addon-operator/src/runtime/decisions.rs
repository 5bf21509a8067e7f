//! Executes the lifecycle's decisions (`addon_core::lifecycle`): queue edits and state changes
//! under the state lock, then the new tasks as a handler's outcome or straight into the queues.

use std::sync::MutexGuard;

use addon_core::lifecycle::{Change, Decision, QueueEdit, View};
use addon_core::names::{ModuleName, QueueName};
use addon_core::queue::QueueTask as _;

use super::Shared;
use super::state::State;
use super::task::Outcome;

/// What the decisions read of the state.
pub(super) fn view(st: &State) -> View<'_> {
    View {
        enabled: &st.enabled,
        first_converge_done: st.first_converge_done,
        queues: &st.queues,
    }
}

/// Executes the decision of a handler: edits and changes now; its head and tail tasks are the
/// outcome, queued by the worker when it completes the task.
pub(super) fn outcome(
    shared: &Shared,
    mut st: MutexGuard<'_, State>,
    decision: Decision,
) -> Outcome {
    let Decision {
        edits,
        head,
        tail,
        changes,
    } = decision;
    edit_queues(&mut st, &edits);
    let stopped = apply_changes(shared, &mut st, changes);
    drop(st);
    stop_modules(shared, &stopped);
    Outcome::Done { head, tail }
}

/// Executes a decision made outside a task (startup, a config edit, the resource monitor, an
/// event): edits, then its tasks at the end of their queues, then the changes.
pub(super) fn enqueue(shared: &Shared, mut st: MutexGuard<'_, State>, decision: Decision) {
    let stopped = enqueue_locked(shared, &mut st, decision);
    drop(st);
    stop_modules(shared, &stopped);
    shared.notify.notify_waiters();
}

/// [`enqueue`] for a caller that goes on holding the lock (a batch of watch events): returns the
/// modules to stop once the lock is released; the caller wakes the workers.
pub(super) fn enqueue_locked(
    shared: &Shared,
    st: &mut State,
    decision: Decision,
) -> Vec<ModuleName> {
    edit_queues(st, &decision.edits);
    let main = QueueName::main();
    let head = decision.head.into_iter().map(|t| (main.clone(), t));
    for (queue, task) in head.chain(decision.tail) {
        shared.push(st, &queue, task);
    }
    apply_changes(shared, st, decision.changes)
}

fn edit_queues(st: &mut State, edits: &[QueueEdit]) {
    for edit in edits {
        let why = match edit {
            QueueEdit::DropGone { .. } => "it is no longer in the module tree",
            _ => "the module is disabled by the config",
        };
        if let Some(pending) = &mut st.group_pending {
            let modules = edit.dropped_members();
            pending.retain(|member| {
                let dropped = modules.contains(&member.module);
                if dropped {
                    tracing::info!(module = %member.module, "dropped from its parallel run: {why}");
                }
                !dropped
            });
        }
        let queues: Vec<QueueName> = if edit.every_queue() {
            st.queues.iter().map(|q| q.name().clone()).collect()
        } else {
            vec![QueueName::main()]
        };
        for name in queues {
            let Ok(q) = st.queues.get_mut(&name) else {
                continue;
            };
            if *edit == QueueEdit::CancelMainRetryDelay {
                q.cancel_head_delay();
            }
            for task in q.remove_where(|t| edit.removes(t)) {
                if matches!(edit, QueueEdit::DropRunsOf(_) | QueueEdit::DropGone { .. }) {
                    tracing::info!(task = %task.description(), "dropped: {why}");
                }
            }
        }
    }
}

/// Applies the changes that need only the state; returns the modules to stop (stopping takes
/// the lock itself).
fn apply_changes(shared: &Shared, st: &mut State, changes: Vec<Change>) -> Vec<ModuleName> {
    let mut stopped = Vec::new();
    for change in changes {
        match change {
            Change::GlobalSchedulesStarted => {
                let hooks = st.global_hooks.clone();
                shared.start_schedules(None, &hooks);
            }
            Change::ConvergeStarted => {
                st.converge_started
                    .get_or_insert_with(tokio::time::Instant::now);
            }
            Change::Enabled(enabled) => st.enabled = enabled,
            Change::StartupPurgeDone => st.startup_purge_done = true,
            Change::ConvergeFinished { activation } => converge_finished(shared, st, activation),
            Change::ModuleStarted(module) => {
                if let Some(m) = st.modules.get_mut(&module) {
                    m.startup_done = true;
                }
            }
            Change::ModuleStopped(module) => stopped.push(module),
            Change::GlobalHookSchedulesStarted(names) => {
                let hooks: Vec<_> = (st.global_hooks.iter())
                    .filter(|h| names.contains(h.name()))
                    .cloned()
                    .collect();
                shared.start_schedules(None, &hooks);
            }
        }
    }
    stopped
}

/// Records the converge's duration; the first one makes the operator ready.
fn converge_finished(shared: &Shared, st: &mut State, activation: &str) {
    let elapsed = st.converge_started.take().map(|started| started.elapsed());
    if let Some(elapsed) = elapsed {
        shared.metrics.converge(activation, elapsed);
    }
    if !st.first_converge_done {
        let duration_ms = elapsed.unwrap_or_default().as_millis() as u64;
        tracing::info!(modules = st.enabled.len(), duration_ms, "ready");
    }
    st.first_converge_done = true;
}

pub(super) fn stop_modules(shared: &Shared, modules: &[ModuleName]) {
    for module in modules {
        shared.stop_module(module);
    }
}
