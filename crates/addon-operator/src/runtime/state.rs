//! What the runtime knows at any moment: the values store, the hooks with their configs, the
//! modules and their progress, the kubernetes monitors, and the queues. One mutex guards it all;
//! it is held only for short, synchronous steps.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Deref;

use addon_core::binding_context::{KeptObject, Snapshots};
use addon_core::discovery::ModuleSource;
use addon_core::hook_config::{FilteredObject, WatchEvent};
use addon_core::monitor::MonitorCache;
use addon_core::names::{HookName, ModuleName, QueueName};
use addon_core::queue::QueueSet;
use addon_core::values::store::ValuesStore;

use super::edges::MonitorKey;
use super::task::Task;

pub use addon_core::lifecycle::{HookDef, hooks_by_order, hooks_with_kubernetes};

/// A module and how far it got.
#[derive(Debug, Clone)]
pub struct ModuleState {
    pub source: ModuleSource,
    pub hooks: HookList,
    /// `onStartup` and Synchronization ran since it was (re-)enabled.
    pub startup_done: bool,
    /// Its schedules fire.
    pub schedules_on: bool,
    /// It left the module tree (`--reload-tree`): it never runs again, and leaves the state
    /// once it is deleted (its hooks run from a kept copy of its directory).
    pub removed: bool,
    /// Hooks of a started module that a reload added or rebound: its next run starts them.
    pub pending: PendingHooks,
}

/// The hooks of a started module whose bindings a reload renewed, started by its next run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingHooks {
    /// New hooks: they run their onStartup.
    pub first_run: BTreeSet<HookName>,
    /// New and rebound hooks: their kubernetes bindings start (with Synchronization) and their
    /// schedules fire.
    pub bind: BTreeSet<HookName>,
}

impl PendingHooks {
    pub fn is_empty(&self) -> bool {
        self.bind.is_empty() && self.first_run.is_empty()
    }

    /// Adds `other`'s hooks (a run that failed gives its hooks back).
    pub fn merge(&mut self, other: PendingHooks) {
        self.first_run.extend(other.first_run);
        self.bind.extend(other.bind);
    }
}

impl ModuleState {
    /// A module just loaded: nothing run yet.
    pub fn new(source: ModuleSource, hooks: HookList) -> Self {
        Self {
            source,
            hooks,
            startup_done: false,
            schedules_on: false,
            removed: false,
            pending: Default::default(),
        }
    }
}

/// Hooks in execution order, also found by name in one step: every hook run looks its hook up,
/// and a scan would make a module of N hooks cost N² comparisons.
#[derive(Debug, Clone, Default)]
pub struct HookList {
    hooks: Vec<HookDef>,
    by_name: HashMap<HookName, usize>,
}

impl HookList {
    pub fn get(&self, name: &HookName) -> Option<&HookDef> {
        self.by_name.get(name).map(|&index| &self.hooks[index])
    }
}

impl From<Vec<HookDef>> for HookList {
    fn from(hooks: Vec<HookDef>) -> Self {
        let by_name = hooks
            .iter()
            .enumerate()
            .map(|(index, hook)| (hook.name().clone(), index))
            .collect();
        Self { hooks, by_name }
    }
}

impl<'a> IntoIterator for &'a HookList {
    type Item = &'a HookDef;
    type IntoIter = std::slice::Iter<'a, HookDef>;

    fn into_iter(self) -> Self::IntoIter {
        self.hooks.iter()
    }
}

impl Deref for HookList {
    type Target = [HookDef];

    fn deref(&self) -> &[HookDef] {
        &self.hooks
    }
}

/// A watch event filtered while its binding's listing loads: the event, the object, its text
/// kept by the watch (when it keeps full objects) and the filter result.
pub type PendingEvent = (
    WatchEvent,
    std::sync::Arc<serde_json::Value>,
    Option<KeptObject>,
    FilteredObject,
);

/// A kubernetes binding's watch and cache.
#[derive(Debug, Clone)]
pub struct Monitor {
    pub cache: MonitorCache,
    /// Synchronization finished: events now run the hook.
    pub synced: bool,
    /// While the watch is starting: events that arrived before the listing was loaded.
    pub pending: Option<Vec<PendingEvent>>,
}

/// The runtime state.
pub struct State {
    pub store: ValuesStore,
    pub global_hooks: HookList,
    pub modules: BTreeMap<ModuleName, ModuleState>,
    /// Module names in module order.
    pub module_order: Vec<ModuleName>,
    /// Enabled modules in order, as the last discovery decided (`global.enabledModules`).
    pub enabled: Vec<ModuleName>,
    pub monitors: BTreeMap<MonitorKey, Monitor>,
    pub queues: QueueSet<Task>,
    pub first_converge_done: bool,
    /// When the converge in progress started.
    pub converge_started: Option<tokio::time::Instant>,
    /// When each queued task was queued (or failed and began to wait for its retry), runtime
    /// clock; for `task_wait_in_queue_seconds_total`.
    /// Keyed by queue and id: ids are unique within their queue only.
    pub queued_at:
        std::collections::HashMap<(QueueName, addon_core::queue::TaskId), std::time::Duration>,
    /// Every task start, in order (only when recording is on; for tests and debugging).
    pub history: Option<Vec<String>>,
    /// The execution rate limits of hooks with `settings.executionMinInterval`, made at first use.
    pub rate_limits: BTreeMap<(Option<ModuleName>, HookName), addon_core::queue::RateLimit>,
    /// Releases never purged: `--helm-ignore-release` and the operator's own release.
    pub kept_releases: Vec<String>,
    /// The startup purge of releases without a module was planned.
    pub startup_purge_done: bool,
    /// Labels put on every CRD of the modules' `crds/` (`--crd-extra-labels`).
    pub crd_extra_labels: BTreeMap<String, String>,
    /// File name prefixes left out of the modules' `crds/` (`--crd-filters`).
    pub crd_filters: Vec<String>,
    /// Checksum of the `crds/` files each module last created or updated.
    pub crds_applied: BTreeMap<ModuleName, String>,
    /// With `--ha`: no task starts while this replica does not lead.
    pub leadership: Option<std::sync::Arc<dyn crate::runtime::edges::Leading>>,
    /// `--parallel-module-runs`: how many modules of one ORDER run at once.
    pub parallel_module_runs: usize,
    /// The queues those runs go to (`parallel_queue_<i>`; none with one run at a time).
    pub lanes: Vec<QueueName>,
    /// The members of the running group (`ParallelModuleRun`) not yet in a lane.
    pub group_pending: Option<std::collections::VecDeque<addon_core::lifecycle::GroupMember>>,
    /// The modules' hooks are known (see `RuntimeSettings::module_hooks_later`).
    pub module_hooks_known: bool,
    /// The cluster's Kubernetes version (`RuntimeSettings::kubernetes_version`).
    pub kubernetes_version: Option<addon_core::module_definition::Version>,
    /// Enabled modules that do not run, with the reason: a requirement of their `module.yaml`
    /// does not hold (the last discovery's finding).
    pub not_running: BTreeMap<ModuleName, String>,
    /// What the `enabled` script of each module it disabled wrote to `$MODULE_ENABLED_REASON`
    /// (kept until the script enables the module again or leaves the reason empty).
    pub disabled_reasons: BTreeMap<ModuleName, String>,
    /// Modules in maintenance whose release was installed with the maintenance label: their
    /// runs skip Helm until they leave maintenance.
    pub maintenance_labelled: BTreeSet<ModuleName>,
}

impl State {
    pub fn module(&self, name: &ModuleName) -> Option<&ModuleState> {
        self.modules.get(name)
    }

    pub fn global_hook(&self, name: &HookName) -> Option<&HookDef> {
        self.global_hooks.get(name)
    }

    /// A global hook (`module` = None) or a module hook.
    pub fn hook(&self, module: Option<&ModuleName>, name: &HookName) -> Option<&HookDef> {
        match module {
            None => self.global_hook(name),
            Some(m) => self.module(m)?.hooks.get(name),
        }
    }

    /// The current objects of the kubernetes bindings of a hook named in `names`, by binding
    /// name. Only those: an event run that attaches no snapshot builds none (a binding of
    /// thousands of objects would be copied for nothing on every run).
    pub fn snapshots(
        &self,
        module: Option<&ModuleName>,
        hook: &HookName,
        names: &BTreeSet<&str>,
    ) -> Snapshots {
        let mut out = Snapshots::new();
        let key = |binding| MonitorKey {
            module: module.cloned(),
            hook: hook.clone(),
            binding,
        };
        for monitor in self
            .monitors
            .range(key(0)..=key(usize::MAX))
            .map(|(_, m)| m)
        {
            let name = &monitor.cache.binding().name;
            if names.contains(name.as_str()) {
                out.entry(name.clone())
                    .or_default()
                    .extend(monitor.cache.items());
            }
        }
        out
    }

    /// Whether a task for which `matches` holds waits in `queue` (not counting a running head).
    pub fn is_queued(&self, queue: &QueueName, matches: impl Fn(&Task) -> bool) -> bool {
        self.queues
            .get(queue)
            .is_some_and(|q| q.iter().any(|t| matches(&t.task)))
    }

    /// Whether a task of `module` waits or runs in `main` (its own, or a group holding it) or in a
    /// parallel lane.
    pub fn module_busy(&self, module: &ModuleName) -> bool {
        let of_module = |t: &Task| match t {
            Task::ModuleGroup { members, .. } => members.iter().any(|m| &m.module == module),
            other => other.module() == Some(module),
        };
        let main = QueueName::main();
        std::iter::once(&main)
            .chain(&self.lanes)
            .any(|queue| self.is_queued(queue, of_module))
    }

    /// Adds a line to the history when it is recorded; `line` is not called otherwise.
    pub fn record(&mut self, line: impl FnOnce() -> String) {
        if let Some(history) = &mut self.history {
            history.push(line());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use addon_core::discovery::HookFile;
    use addon_core::hook_config::{HookScope, parse};

    use super::*;

    fn hook(name: &str) -> HookDef {
        let name = HookName::new(name).unwrap();
        HookDef {
            config: parse(
                &name,
                HookScope::Global,
                "configVersion: v1\nonStartup: 1\n",
            )
            .unwrap()
            .into(),
            file: HookFile {
                path: PathBuf::from(name.as_str()),
                working_dir: PathBuf::from("hooks"),
                args: Vec::new(),
                name,
            }
            .into(),
        }
    }

    #[test]
    fn a_hook_list_keeps_the_order_and_finds_each_hook_by_its_whole_name() {
        let names = ["hooks/b.sh", "hooks/a.sh", "hooks/a.sh2", "hooks/sub/a.sh"];
        let list = HookList::from(names.iter().map(|n| hook(n)).collect::<Vec<_>>());
        let in_order: Vec<&str> = list.iter().map(|h| h.name().as_str()).collect();
        assert_eq!(in_order, names);
        for name in names {
            let found = list.get(&HookName::new(name).unwrap()).unwrap();
            assert_eq!(found.name().as_str(), name);
        }
        assert!(list.get(&HookName::new("hooks/c.sh").unwrap()).is_none());
        assert!(
            HookList::default()
                .get(&HookName::new("hooks/a.sh").unwrap())
                .is_none()
        );
    }
}
