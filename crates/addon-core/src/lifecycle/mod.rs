//! The decisions of the operator's lifecycle (the seeds' steps 1–16): given the state of the
//! modules and an outcome, which tasks to queue where and how the state changes. The runtime
//! executes a [`Decision`]; it decides nothing itself.

mod converge;
mod group;
mod hooks;
mod module;
mod reactions;
mod reload;
mod sync;
mod task;
#[cfg(test)]
mod tests;

pub use converge::{ConvergeFacts, Discovered, converge_done, discovered, start_converge, startup};
pub use group::{GroupStep, PlannedRun, group_step, lanes, runs_by_order};
pub use hooks::{HookDef, HookEffect, hooks_by_order, hooks_with_kubernetes, lifecycle_tasks};
pub use module::{
    DeletePhase, RunPhase, module_delete_finished, module_delete_phases, module_run_finished,
    module_run_phases,
};
pub use reactions::{
    EventRun, config_edited, event_run, hook_finished, resources_absent, schedule_tick_runs,
    watch_event_runs,
};
pub use reload::{RELOAD_REASON, tree_reloaded};
pub use sync::{global_kubernetes_enabled, synchronization_run, synchronization_runs};
pub use task::{GroupMember, HookTask, Origin, Task};

use crate::names::{ModuleName, QueueName};
use crate::queue::QueueSet;

/// What the decisions read of the runtime's state.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Enabled modules in order, as the last discovery decided.
    pub enabled: &'a [ModuleName],
    /// The first 'reload all modules' finished.
    pub first_converge_done: bool,
    /// The queues as they are now (a waiting or running task counts as queued).
    pub queues: &'a QueueSet<Task>,
}

impl View<'_> {
    /// Whether a task for which `matches` holds is in `main`.
    pub fn in_main(&self, matches: impl Fn(&Task) -> bool) -> bool {
        self.queues
            .get(&QueueName::main())
            .is_some_and(|q| q.iter().any(|t| matches(&t.task)))
    }

    /// A run of an enabled `module` (without onStartup) for `reason`, unless one is in `main`
    /// (a run of its own, or a group that has not started yet and holds it: a running group
    /// may have run the module already).
    pub fn module_run_if_not_queued(
        &self,
        module: &ModuleName,
        reason: &'static str,
    ) -> Option<Task> {
        let running = self
            .queues
            .get(&QueueName::main())
            .and_then(|q| q.running());
        let queued = self.queues.get(&QueueName::main()).is_some_and(|q| {
            q.iter().any(|t| match &t.task {
                Task::ModuleRun { module: m, .. } => m == module,
                Task::ModuleGroup { members, .. } => {
                    Some(t.id) != running && members.iter().any(|g| &g.module == module)
                }
                _ => false,
            })
        });
        (self.enabled.contains(module) && !queued).then(|| Task::ModuleRun {
            module: module.clone(),
            startup: false,
            reason,
        })
    }

    /// A converge for `reason`, unless one is in `main`.
    pub fn converge_if_not_queued(&self, reason: &'static str) -> Option<Task> {
        let queued = self.in_main(|t| matches!(t, Task::Converge { .. }));
        (!queued).then_some(Task::Converge { reason })
    }
}

/// What to do after an outcome: queue edits first, then state changes, then the new tasks.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// Edits of tasks already queued, applied in order before anything is queued.
    pub edits: Vec<QueueEdit>,
    /// Tasks for the head of the queue the deciding task runs in, in this order (a decision
    /// made outside a task has none).
    pub head: Vec<Task>,
    /// Tasks for the end of the named queues, in this order.
    pub tail: Vec<(QueueName, Task)>,
    /// How the runtime's state changes.
    pub changes: Vec<Change>,
}

impl Decision {
    /// Nothing to queue, nothing changes.
    pub fn nothing() -> Self {
        Self::default()
    }

    fn head(head: Vec<Task>) -> Self {
        Self {
            head,
            ..Self::default()
        }
    }

    fn tail_main(tasks: impl IntoIterator<Item = Task>) -> Self {
        let main = QueueName::main();
        Self {
            tail: tasks.into_iter().map(|t| (main.clone(), t)).collect(),
            ..Self::default()
        }
    }
}

/// An edit of tasks already queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueEdit {
    /// The head of `main` may run at once (it keeps its failure count).
    CancelMainRetryDelay,
    /// Converges waiting in `main`: the converge that starts covers them.
    DropQueuedConverges,
    /// The pending steps of a converge in progress in `main` (module runs and groups, discovery,
    /// the closing marker, beforeAll and afterAll runs); a new converge redoes them. Deletes
    /// stay, and so does a running group (its members finish; only disabled ones are dropped).
    DropConvergeSteps,
    /// Runs and hook runs of these modules, from every queue (a failing head included) and from
    /// the members of a running group that have not started yet.
    DropRunsOf(Vec<ModuleName>),
    /// Tasks of what left the module tree (`--reload-tree`), from every queue and from the
    /// members of a running group: runs and hook runs of `modules`, and hook runs (and the
    /// start of kubernetes bindings) of `hooks` (`None`: a global hook).
    DropGone {
        modules: Vec<ModuleName>,
        hooks: Vec<(Option<ModuleName>, crate::names::HookName)>,
    },
}

impl QueueEdit {
    /// Whether the edit applies to every queue (else only to `main`).
    pub fn every_queue(&self) -> bool {
        matches!(self, QueueEdit::DropRunsOf(_) | QueueEdit::DropGone { .. })
    }

    /// The modules whose pending members of a running group the edit drops.
    pub fn dropped_members(&self) -> &[ModuleName] {
        match self {
            QueueEdit::DropRunsOf(modules) | QueueEdit::DropGone { modules, .. } => modules,
            _ => &[],
        }
    }

    /// Whether the edit removes `task` (a running task is never removed by the queue).
    pub fn removes(&self, task: &Task) -> bool {
        use crate::hook_config::BindingType;
        match self {
            QueueEdit::CancelMainRetryDelay => false,
            QueueEdit::DropQueuedConverges => matches!(task, Task::Converge { .. }),
            QueueEdit::DropConvergeSteps => match task {
                Task::ModuleRun { .. }
                | Task::ModuleGroup { .. }
                | Task::DiscoverModules
                | Task::ConvergeDone { .. } => true,
                Task::Hook(h) => {
                    matches!(h.binding, BindingType::BeforeAll | BindingType::AfterAll)
                }
                _ => false,
            },
            QueueEdit::DropRunsOf(modules) => match task {
                Task::ModuleRun { module, .. }
                | Task::Hook(HookTask {
                    module: Some(module),
                    ..
                }) => modules.contains(module),
                _ => false,
            },
            QueueEdit::DropGone { modules, hooks } => match task {
                Task::ModuleRun { module, .. } => modules.contains(module),
                Task::Hook(h) => {
                    h.module.as_ref().is_some_and(|m| modules.contains(m))
                        || hooks.iter().any(|(m, n)| m == &h.module && n == &h.hook)
                }
                Task::EnableGlobalKubernetes { hook } => {
                    hooks.iter().any(|(m, n)| m.is_none() && n == hook)
                }
                _ => false,
            },
        }
    }
}

/// A change of the runtime's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The schedules of global hooks start (their ticks are dropped until the first converge
    /// finished).
    GlobalSchedulesStarted,
    /// A converge started (the runtime notes when, unless one is in progress).
    ConvergeStarted,
    /// The enabled modules, in order, as discovery decided.
    Enabled(Vec<ModuleName>),
    /// The startup purge of releases without a module was planned (it happens once).
    StartupPurgeDone,
    /// A converge finished with nothing left to redo; `activation` names it in metrics
    /// (`OperatorStartup` for the first one, else `ReloadAllModules`).
    ConvergeFinished { activation: &'static str },
    /// The module ran its onStartup and Synchronization (it is started until it is deleted).
    ModuleStarted(ModuleName),
    /// The module was deleted: its watches, schedules, progress and values patches go.
    ModuleStopped(ModuleName),
    /// The schedules of these global hooks start (their bindings are new after a reload).
    GlobalHookSchedulesStarted(Vec<crate::names::HookName>),
}
