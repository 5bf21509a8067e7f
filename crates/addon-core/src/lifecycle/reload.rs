//! A reloaded module tree (`--reload-tree`): the tasks its difference queues and the queued
//! tasks it drops.

use crate::hook_config::BindingType;
use crate::names::{HookName, ModuleName, QueueName};
use crate::tree_diff::TreeDiff;

use super::hooks::{HookDef, hooks_with_kubernetes, lifecycle_tasks};
use super::{Change, Decision, QueueEdit, Task, View};

/// Why the tasks of a reload run.
pub const RELOAD_REASON: &str = "module tree changed";

/// The tree changed as `diff` says; `global_hooks` are the new tree's. Queued tasks of hooks
/// and modules that are gone (or whose bindings start anew) are dropped; added global hooks run
/// their onStartup, global hooks whose bindings start anew start their kubernetes bindings
/// (with Synchronization) and schedules, as at startup; then 'reload all modules' when the
/// difference asks for it, else a run of each changed module that is enabled.
pub fn tree_reloaded(view: View<'_>, diff: &TreeDiff, global_hooks: &[HookDef]) -> Decision {
    let mut gone: Vec<(Option<ModuleName>, HookName)> = (diff.global_hooks.stopping())
        .map(|h| (None, h.clone()))
        .collect();
    for module in &diff.changed {
        gone.extend((module.hooks.stopping()).map(|h| (Some(module.module.clone()), h.clone())));
    }
    let mut edits = Vec::new();
    if !gone.is_empty() || !diff.removed.is_empty() {
        edits.push(QueueEdit::DropGone {
            modules: diff.removed.clone(),
            hooks: gone,
        });
    }
    let starting: Vec<HookDef> = (global_hooks.iter())
        .filter(|h| diff.global_hooks.starting().any(|n| n == h.name()))
        .cloned()
        .collect();
    let added: Vec<HookDef> = (starting.iter())
        .filter(|h| diff.global_hooks.added.contains(h.name()))
        .cloned()
        .collect();
    let mut tasks = lifecycle_tasks(&added, BindingType::OnStartup);
    tasks.extend(hooks_with_kubernetes(&starting).into_iter().map(|def| {
        Task::EnableGlobalKubernetes {
            hook: def.name().clone(),
        }
    }));
    if diff.converges() {
        tasks.extend(view.converge_if_not_queued(RELOAD_REASON));
    } else {
        tasks
            .extend((diff.module_runs().iter()).filter_map(|m| module_run_unless_waiting(view, m)));
    }
    let mut changes = Vec::new();
    let schedules: Vec<HookName> = (starting.iter())
        .filter(|h| !h.config.schedules.is_empty())
        .map(|h| h.name().clone())
        .collect();
    if !schedules.is_empty() {
        changes.push(Change::GlobalHookSchedulesStarted(schedules));
    }
    Decision {
        edits,
        changes,
        ..Decision::tail_main(tasks)
    }
}

/// A run of an enabled `module` unless one waits in `main` (a running one has read the module
/// as it was: the change needs another run).
fn module_run_unless_waiting(view: View<'_>, module: &ModuleName) -> Option<Task> {
    let main = view.queues.get(&QueueName::main());
    let running = main.and_then(|q| q.running());
    let waiting = main.is_some_and(|q| {
        q.iter().any(|t| {
            Some(t.id) != running
                && match &t.task {
                    Task::ModuleRun { module: m, .. } => m == module,
                    Task::ModuleGroup { members, .. } => {
                        members.iter().any(|g| &g.module == module)
                    }
                    _ => false,
                }
        })
    });
    (view.enabled.contains(module) && !waiting).then(|| Task::ModuleRun {
        module: module.clone(),
        startup: false,
        reason: RELOAD_REASON,
    })
}
