//! [`StatusSource`]: what the HTTP server and the debug API ask the runtime (readiness, queues,
//! values). The runtime implements it; the HTTP edge serves it.

use addon_core::queue::QueueListDump;

use addon_core::binding_context::ObjectAndFilterResult;
use serde_json::{Value, json};

/// The objects of one binding, as its cache holds them.
pub type BindingItems = (String, Vec<ObjectAndFilterResult>);

/// Progress of the first converge after start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupConverge {
    NotStarted,
    InProgress,
    Done,
}

/// What `/status/converge` and `/readyz` report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvergeStatus {
    pub startup: StartupConverge,
    /// Converge tasks (ModuleRun, ModuleDelete, ConvergeModules, ...) in the main queue.
    pub converge_tasks: usize,
}

impl ConvergeStatus {
    /// Upstream's status lines: `STARTUP_CONVERGE_NOT_STARTED`, `STARTUP_CONVERGE_IN_PROGRESS: N tasks`,
    /// `STARTUP_CONVERGE_DONE`, then `CONVERGE_IN_PROGRESS: N tasks` or `CONVERGE_WAIT_TASK`.
    pub fn lines(&self) -> Vec<String> {
        let tasks = self.converge_tasks;
        match self.startup {
            StartupConverge::NotStarted => vec!["STARTUP_CONVERGE_NOT_STARTED".into()],
            StartupConverge::InProgress if tasks > 0 => {
                vec![format!("STARTUP_CONVERGE_IN_PROGRESS: {tasks} tasks")]
            }
            StartupConverge::InProgress => vec!["STARTUP_CONVERGE_DONE".into()],
            StartupConverge::Done if tasks > 0 => vec![
                "STARTUP_CONVERGE_DONE".into(),
                format!("CONVERGE_IN_PROGRESS: {tasks} tasks"),
            ],
            StartupConverge::Done => {
                vec!["STARTUP_CONVERGE_DONE".into(), "CONVERGE_WAIT_TASK".into()]
            }
        }
    }

    /// The same as JSON: every upstream key, `false`/`0` when it does not apply.
    pub fn to_json(&self) -> Value {
        let lines = self.lines();
        let has = |key: &str| lines.iter().any(|l| l == key);
        let count = |key: &str| {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
                .and_then(|rest| rest.split(' ').next()?.parse::<usize>().ok())
                .unwrap_or(0)
        };
        json!({
            "STARTUP_CONVERGE_NOT_STARTED": has("STARTUP_CONVERGE_NOT_STARTED"),
            "STARTUP_CONVERGE_IN_PROGRESS": count("STARTUP_CONVERGE_IN_PROGRESS"),
            "STARTUP_CONVERGE_DONE": has("STARTUP_CONVERGE_DONE"),
            "CONVERGE_IN_PROGRESS": count("CONVERGE_IN_PROGRESS"),
            "CONVERGE_WAIT_TASK": has("CONVERGE_WAIT_TASK"),
        })
    }
}

/// The runtime's state as the HTTP endpoints and the debug API show it. Implemented by the runtime;
/// every method is called from HTTP handlers, so it must be quick and must not block on a hook run
/// (take a snapshot under a short lock, or read a copy the runtime publishes).
///
/// Methods with a default return `None`, which the debug API answers with 404 "not available".
pub trait StatusSource: Send + Sync {
    /// Progress of the startup converge and converge tasks in the main queue.
    fn converge_status(&self) -> ConvergeStatus;

    /// `/readyz` is 200 once this is true: by default when the first converge is done.
    fn ready(&self) -> bool {
        let status = self.converge_status();
        status.startup == StartupConverge::Done
            || (status.startup == StartupConverge::InProgress && status.converge_tasks == 0)
    }

    /// Why the operator is not ready, for `/readyz` (e.g. what startup waits for, or the task
    /// that fails); `None`: the startup converge is simply in progress.
    fn not_ready_reason(&self) -> Option<String> {
        None
    }

    /// All queues, main first (`QueueSet::dump(now, show_empty)`).
    fn queue_list(&self, show_empty: bool) -> QueueListDump;

    /// Names of the global hooks in order.
    fn global_hooks(&self) -> Vec<String>;

    /// Effective global values (`global` section contents, without the `global` key).
    fn global_values(&self) -> Value;

    /// Global config values (from the ConfigMap / config file), without the `global` key.
    fn global_config(&self) -> Value;

    /// Names of the enabled modules (any order; the API sorts them).
    fn enabled_modules(&self) -> Vec<String>;

    /// Modules their `enabled` script disabled with a reason (`$MODULE_ENABLED_REASON`), by name.
    fn disabled_reasons(&self) -> std::collections::BTreeMap<String, String> {
        std::collections::BTreeMap::new()
    }

    /// Effective values of a module (contents of its values key); `None` when no such module exists.
    fn module_values(&self, module: &str) -> Option<Value>;

    /// Config values of a module; `None` when no such module exists.
    fn module_config(&self, module: &str) -> Option<Value>;

    /// JSON patches hooks applied to global values.
    fn global_patches(&self) -> Option<Value> {
        None
    }

    /// Kubernetes snapshots of the global hooks, by hook name.
    fn global_snapshots(&self) -> Option<Value> {
        None
    }

    /// JSON patches hooks applied to a module's values.
    fn module_patches(&self, _module: &str) -> Option<Value> {
        None
    }

    /// Kubernetes snapshots of a module's hooks, by hook name.
    fn module_snapshots(&self, _module: &str) -> Option<Value> {
        None
    }

    /// The objects of one hook's bindings (`module` `None`: a global hook), in binding order, as
    /// the caches hold them (shared texts, not parsed): the debug API renders them an object at
    /// a time. `None` when the source cannot tell.
    fn hook_snapshot_items(&self, _module: Option<&str>, _hook: &str) -> Option<Vec<BindingItems>> {
        None
    }

    /// Resources watched by the resource monitor, by enabled module.
    fn resource_monitor(&self) -> Option<Value> {
        None
    }

    /// Drift and health of each tracked module's release, by module (`/module/list`'s
    /// `releases`).
    fn releases(&self) -> Option<Value> {
        None
    }

    /// Every hook: `[{"name", "module" (absent for global hooks), "bindings": ["onStartup: 10", ...]}]`,
    /// global hooks first, then module hooks in module order.
    fn hooks(&self) -> Option<Value> {
        None
    }

    /// The last reload of the module tree (`--reload-tree`): its result, what changed, and its
    /// problems; `None` before the first reload.
    fn tree_reload(&self) -> Option<Value> {
        None
    }

    /// Enabled modules that do not run, each with the reason (a `module.yaml` requirement that
    /// does not hold), as the last discovery found them.
    fn modules_not_running(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The module graph (order and requirements) as Graphviz DOT; `None` when the source
    /// cannot tell.
    fn module_graph(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(startup: StartupConverge, converge_tasks: usize) -> ConvergeStatus {
        ConvergeStatus {
            startup,
            converge_tasks,
        }
    }

    #[test]
    fn converge_status_lines_follow_upstream() {
        use StartupConverge::*;
        assert_eq!(
            status(NotStarted, 0).lines(),
            ["STARTUP_CONVERGE_NOT_STARTED"]
        );
        assert_eq!(
            status(InProgress, 4).lines(),
            ["STARTUP_CONVERGE_IN_PROGRESS: 4 tasks"]
        );
        assert_eq!(status(InProgress, 0).lines(), ["STARTUP_CONVERGE_DONE"]);
        assert_eq!(
            status(Done, 2).lines(),
            ["STARTUP_CONVERGE_DONE", "CONVERGE_IN_PROGRESS: 2 tasks"]
        );
        assert_eq!(
            status(Done, 0).lines(),
            ["STARTUP_CONVERGE_DONE", "CONVERGE_WAIT_TASK"]
        );
    }

    #[test]
    fn converge_status_json_has_every_key() {
        assert_eq!(
            status(StartupConverge::Done, 2).to_json(),
            json!({
                "STARTUP_CONVERGE_NOT_STARTED": false,
                "STARTUP_CONVERGE_IN_PROGRESS": 0,
                "STARTUP_CONVERGE_DONE": true,
                "CONVERGE_IN_PROGRESS": 2,
                "CONVERGE_WAIT_TASK": false,
            })
        );
    }
}
