//! The tasks the operator queues, as data: what each queue holds and how a dump names it.

use crate::binding_context::BindingContext;
use crate::hook_config::BindingType;
use crate::names::{HookName, ModuleName};
use crate::queue::QueueTask;

/// Why a hook runs: as a step of the lifecycle (its values changes trigger nothing), or for a
/// schedule or kubernetes event (its values changes trigger a reload or a module run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Lifecycle,
    Event,
}

/// One run of a hook with its binding contexts.
#[derive(Debug, Clone)]
pub struct HookTask {
    pub module: Option<ModuleName>,
    pub hook: HookName,
    pub binding: BindingType,
    pub contexts: Vec<BindingContext>,
    pub allow_failure: bool,
    pub origin: Origin,
}

impl HookTask {
    /// Whether `other` runs the same hook the same way (module, hook, allowFailure): the
    /// condition for their contexts to share one run.
    pub fn same_hook_as(&self, other: &HookTask) -> bool {
        self.module == other.module
            && self.hook == other.hook
            && self.allow_failure == other.allow_failure
    }
}

/// A module of a [`Task::ModuleGroup`]: its run is a `ModuleRun` in a parallel lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    pub module: ModuleName,
    /// The run starts the module (onStartup, Synchronization).
    pub startup: bool,
}

impl GroupMember {
    /// The member's run, as it goes to a lane.
    pub fn run(&self, reason: &'static str) -> Task {
        Task::ModuleRun {
            module: self.module.clone(),
            startup: self.startup,
            reason,
        }
    }
}

/// A unit of work in a queue.
#[derive(Debug, Clone)]
pub enum Task {
    /// Run a global or module hook.
    Hook(HookTask),
    /// Start the watches of a global hook's kubernetes bindings and run its Synchronization.
    EnableGlobalKubernetes { hook: HookName },
    /// 'Reload all modules': beforeAll hooks, then discovery.
    Converge { reason: &'static str },
    /// Decide enabled modules and queue deletes, runs, purges and afterAll hooks.
    DiscoverModules,
    /// Closes a converge: reloads again when afterAll hooks changed global values.
    ConvergeDone { global_checksum: String },
    /// Run a module: (onStartup + Synchronization), beforeHelm, Helm, afterHelm.
    ModuleRun {
        module: ModuleName,
        startup: bool,
        reason: &'static str,
    },
    /// Run the enabled modules of one ORDER side by side (upstream's ParallelModuleRun): each
    /// member is a `ModuleRun` in a parallel lane; the task is done when every member is.
    ModuleGroup {
        order: u32,
        members: Vec<GroupMember>,
        reason: &'static str,
    },
    /// Delete a disabled module's release and run its afterDeleteHelm hooks.
    ModuleDelete { module: ModuleName },
    /// Delete a Helm release that belongs to no module.
    ModulePurge { release: String },
}

impl Task {
    /// The module a task works on, if any.
    pub fn module(&self) -> Option<&ModuleName> {
        match self {
            Task::Hook(h) => h.module.as_ref(),
            Task::ModuleRun { module, .. } | Task::ModuleDelete { module } => Some(module),
            _ => None,
        }
    }

    /// The kind of task, as in upstream queue dumps.
    pub fn kind(&self) -> &'static str {
        match self {
            Task::Hook(h) if h.module.is_some() => "ModuleHookRun",
            Task::Hook(_) => "GlobalHookRun",
            Task::EnableGlobalKubernetes { .. } => "GlobalHookEnableKubernetesBindings",
            Task::Converge { .. } => "ConvergeModules",
            Task::DiscoverModules => "DiscoverModules",
            Task::ConvergeDone { .. } => "ConvergeDone",
            Task::ModuleRun { .. } => "ModuleRun",
            Task::ModuleGroup { .. } => "ParallelModuleRun",
            Task::ModuleDelete { .. } => "ModuleDelete",
            Task::ModulePurge { .. } => "ModulePurge",
        }
    }
}

/// Binding names of a run's contexts, comma-separated; a name repeated more than three times in
/// a row is written once with its count (`pods×1200`): a burst of events joined into one waiting
/// run keeps a short line in `queue list`.
fn context_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match runs.last_mut() {
            Some((last, count)) if *last == name => *count += 1,
            _ => runs.push((name, 1)),
        }
    }
    let parts: Vec<String> = runs
        .into_iter()
        .map(|(name, count)| match count {
            1..=3 => vec![name; count].join(","),
            _ => format!("{name}×{count}"),
        })
        .collect();
    parts.join(",")
}

impl QueueTask for Task {
    fn description(&self) -> String {
        let kind = self.kind();
        match self {
            Task::Hook(h) => {
                let owner = h.module.as_ref().map_or(String::new(), |m| format!("{m}:"));
                let names = context_names(h.contexts.iter().map(|c| c.binding.as_str()));
                format!("{kind}:{}:{owner}{}:{names}", h.binding.as_str(), h.hook)
            }
            Task::EnableGlobalKubernetes { hook } => format!("{kind}:{hook}"),
            Task::Converge { reason } => format!("{kind}:{reason}"),
            Task::DiscoverModules | Task::ConvergeDone { .. } => kind.to_string(),
            Task::ModuleRun {
                module,
                startup,
                reason,
            } => {
                let startup = if *startup { ":startup" } else { "" };
                format!("{kind}:{module}{startup}:{reason}")
            }
            Task::ModuleGroup {
                order,
                members,
                reason,
            } => {
                let names: Vec<String> = members
                    .iter()
                    .map(|m| {
                        let startup = if m.startup { "(startup)" } else { "" };
                        format!("{}{startup}", m.module)
                    })
                    .collect();
                format!("{kind}:order {order}:{}:{reason}", names.join(","))
            }
            Task::ModuleDelete { module } => format!("{kind}:{module}"),
            Task::ModulePurge { release } => format!("{kind}:{release}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::context_names;

    #[test]
    fn long_runs_of_one_binding_are_written_with_their_count() {
        let names = |list: &[&str]| context_names(list.iter().copied());
        assert_eq!(names(&["pods"]), "pods");
        assert_eq!(names(&["pods", "pods", "pods"]), "pods,pods,pods");
        let burst: Vec<&str> = std::iter::repeat_n("pods", 1200)
            .chain(["tick", "pods"])
            .collect();
        assert_eq!(names(&burst), "pods×1200,tick,pods");
        assert_eq!(names(&[]), "");
    }
}
