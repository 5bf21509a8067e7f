//! Reactions of the main loop (steps 9–16): hook runs for schedule ticks and kubernetes events,
//! what a finished hook run triggers, config edits, and Helm resources found absent.

use crate::binding_context::BindingContext;
use crate::hook_config::{BindingType, WatchEvent};
use crate::names::{HookName, ModuleName, QueueName};
use crate::values::config::ConfigChange;

use super::hooks::HookEffect;
use super::{Decision, HookTask, Origin, QueueEdit, Task, View};

/// A hook run asked for by a schedule tick or a kubernetes event.
#[derive(Debug, Clone)]
pub struct EventRun {
    pub module: Option<ModuleName>,
    pub hook: HookName,
    pub binding: BindingType,
    pub context: BindingContext,
    pub allow_failure: bool,
    /// The binding's `queue` (the runtime uses `main` when no such queue exists).
    pub queue: QueueName,
}

/// Steps 11–12: a schedule tick runs its hook only once the first converge finished (earlier
/// ticks are dropped).
pub fn schedule_tick_runs(first_converge_done: bool) -> bool {
    first_converge_done
}

/// Steps 9–10: a watch event runs its hook once the binding's Synchronization ran and the
/// binding executes on this event type (`executeHookOnEvent`).
pub fn watch_event_runs(synced: bool, executes_on: &[WatchEvent], event: WatchEvent) -> bool {
    synced && executes_on.contains(&event)
}

/// Steps 9–12: the hook runs at the end of its binding's queue.
pub fn event_run(run: EventRun) -> Decision {
    let task = Task::Hook(HookTask {
        module: run.module,
        hook: run.hook,
        binding: run.binding,
        contexts: vec![run.context],
        allow_failure: run.allow_failure,
        origin: Origin::Event,
    });
    Decision {
        tail: vec![(run.queue, task)],
        ..Decision::nothing()
    }
}

/// 'Events after execution' of a hook run. A lifecycle run (onStartup, Synchronization,
/// beforeAll, afterAll, module hooks of a run or delete) triggers nothing. An event run of a
/// global hook that changed global values or `*Enabled` flags queues 'reload all modules'
/// (steps 9, 11 → 13; only once the first converge finished); of a module hook that changed its
/// module's values, a run of that module (steps 10, 12 → 14). Nothing is queued twice in `main`.
pub fn hook_finished(
    view: View<'_>,
    origin: Origin,
    module: Option<&ModuleName>,
    effect: HookEffect,
) -> Decision {
    if origin == Origin::Lifecycle {
        return Decision::nothing();
    }
    let changed_global = effect.values_changed || effect.enabled_changed;
    let task = match module {
        None if changed_global && view.first_converge_done => {
            view.converge_if_not_queued("global values changed")
        }
        Some(m) if effect.values_changed => {
            view.module_run_if_not_queued(m, "module values changed")
        }
        _ => None,
    };
    Decision::tail_main(task)
}

/// Step 16: a valid config edit. The `global` section or a `*Enabled` flag changed: runs of the
/// modules that are `disabled` now are dropped from every queue (a failing one never blocks the
/// edit), the pending steps of a converge in progress are dropped, and 'reload all modules' is
/// queued. Only module sections changed: each such enabled module runs. Either way the head of
/// `main` may run at once.
pub fn config_edited(view: View<'_>, change: &ConfigChange, disabled: &[ModuleName]) -> Decision {
    if change.is_empty() {
        return Decision::nothing();
    }
    let mut edits = vec![QueueEdit::CancelMainRetryDelay];
    let tasks: Vec<Task> = if change.global_changed || !change.enabled_changed.is_empty() {
        edits.push(QueueEdit::DropRunsOf(disabled.to_vec()));
        edits.push(QueueEdit::DropConvergeSteps);
        tracing::info!("config changed the global section or enable flags: reload all modules");
        view.converge_if_not_queued("config changed")
            .into_iter()
            .collect()
    } else {
        change
            .modules_changed
            .iter()
            .filter_map(|module| {
                let task = view.module_run_if_not_queued(module, "config changed");
                if task.is_some() {
                    tracing::info!(module = %module, "config changed the module's section: run it");
                }
                task
            })
            .collect()
    };
    Decision {
        edits,
        ..Decision::tail_main(tasks)
    }
}

/// Step 15: resources of a module's release are missing from the cluster; the module runs again
/// (its Helm phase reinstalls them), unless a run of it is already in `main`.
pub fn resources_absent(view: View<'_>, module: &ModuleName) -> Decision {
    Decision::tail_main(view.module_run_if_not_queued(module, "helm resources absent"))
}
