//! [`StartupStatus`]: the status the HTTP server shows from the moment it starts: not ready with
//! the reason while the operator starts (reading its config, say), then the runtime's own.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use addon_core::queue::{Backoff, QueueListDump, QueueSet, QueueTask};
use serde_json::Value;

use crate::runtime::edges::status::BindingItems;
use crate::runtime::edges::status::{ConvergeStatus, StartupConverge, StatusSource};

enum Phase {
    Starting(String),
    Running(Arc<dyn StatusSource>),
}

/// A [`StatusSource`] that answers "not ready: <reason>" until [`StartupStatus::running`] hands
/// it the runtime's source, and delegates everything to that source afterwards.
pub struct StartupStatus {
    phase: RwLock<Phase>,
    /// The last reload of the module tree, whichever runtime runs.
    reload: RwLock<Option<Value>>,
}

/// No task: the queue dump of an operator whose runtime does not exist yet.
struct NoTask;

impl QueueTask for NoTask {
    fn description(&self) -> String {
        String::new()
    }
}

impl StartupStatus {
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            phase: RwLock::new(Phase::Starting(reason.into())),
            reload: RwLock::new(None),
        }
    }

    /// What the operator waits for now (ignored once the runtime runs).
    pub fn starting(&self, reason: impl Into<String>) {
        let mut phase = self.phase.write().unwrap_or_else(PoisonError::into_inner);
        if let Phase::Starting(current) = &mut *phase {
            *current = reason.into();
        }
    }

    /// From now on every answer comes from `source`.
    pub fn running(&self, source: Arc<dyn StatusSource>) {
        *self.phase.write().unwrap_or_else(PoisonError::into_inner) = Phase::Running(source);
    }

    /// Records the last reload of the module tree (shown by the debug API).
    pub fn tree_reloaded(&self, record: Value) {
        *self.reload.write().unwrap_or_else(PoisonError::into_inner) = Some(record);
    }

    /// The runtime's source once it runs.
    fn source(&self) -> Option<Arc<dyn StatusSource>> {
        match &*self.phase.read().unwrap_or_else(PoisonError::into_inner) {
            Phase::Starting(_) => None,
            Phase::Running(source) => Some(Arc::clone(source)),
        }
    }
}

impl StatusSource for StartupStatus {
    fn converge_status(&self) -> ConvergeStatus {
        self.source().map_or(
            ConvergeStatus {
                startup: StartupConverge::NotStarted,
                converge_tasks: 0,
            },
            |s| s.converge_status(),
        )
    }

    fn ready(&self) -> bool {
        self.source().is_some_and(|s| s.ready())
    }

    fn not_ready_reason(&self) -> Option<String> {
        let source = match &*self.phase.read().unwrap_or_else(PoisonError::into_inner) {
            Phase::Starting(reason) => return Some(reason.clone()),
            Phase::Running(source) => Arc::clone(source),
        };
        source.not_ready_reason()
    }

    fn queue_list(&self, show_empty: bool) -> QueueListDump {
        match self.source() {
            Some(source) => source.queue_list(show_empty),
            None => QueueSet::<NoTask>::new(Backoff::default()).dump(Duration::ZERO, show_empty),
        }
    }

    fn global_hooks(&self) -> Vec<String> {
        self.source().map(|s| s.global_hooks()).unwrap_or_default()
    }

    fn global_values(&self) -> Value {
        self.source().map(|s| s.global_values()).unwrap_or_default()
    }

    fn global_config(&self) -> Value {
        self.source().map(|s| s.global_config()).unwrap_or_default()
    }

    fn enabled_modules(&self) -> Vec<String> {
        self.source()
            .map(|s| s.enabled_modules())
            .unwrap_or_default()
    }

    fn module_values(&self, module: &str) -> Option<Value> {
        self.source()?.module_values(module)
    }

    fn module_config(&self, module: &str) -> Option<Value> {
        self.source()?.module_config(module)
    }

    fn global_patches(&self) -> Option<Value> {
        self.source()?.global_patches()
    }

    fn global_snapshots(&self) -> Option<Value> {
        self.source()?.global_snapshots()
    }

    fn module_patches(&self, module: &str) -> Option<Value> {
        self.source()?.module_patches(module)
    }

    fn module_snapshots(&self, module: &str) -> Option<Value> {
        self.source()?.module_snapshots(module)
    }

    fn hook_snapshot_items(&self, module: Option<&str>, hook: &str) -> Option<Vec<BindingItems>> {
        self.source()?.hook_snapshot_items(module, hook)
    }

    fn resource_monitor(&self) -> Option<Value> {
        self.source()?.resource_monitor()
    }

    fn releases(&self) -> Option<Value> {
        self.source()?.releases()
    }

    fn hooks(&self) -> Option<Value> {
        self.source()?.hooks()
    }

    fn modules_not_running(&self) -> Vec<(String, String)> {
        self.source()
            .map(|s| s.modules_not_running())
            .unwrap_or_default()
    }

    fn module_graph(&self) -> Option<String> {
        self.source()?.module_graph()
    }

    fn tree_reload(&self) -> Option<Value> {
        self.reload
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starting_is_not_ready_with_the_latest_reason_and_no_queues() {
        let status = StartupStatus::new("starting");
        status.starting("reading the config: 500 Internal Server Error");
        assert!(!status.ready());
        assert_eq!(
            status.not_ready_reason().as_deref(),
            Some("reading the config: 500 Internal Server Error")
        );
        assert_eq!(
            status.converge_status().startup,
            StartupConverge::NotStarted
        );
        assert_eq!(status.queue_list(true).summary.total_tasks, 0);
        assert!(status.enabled_modules().is_empty() && status.module_values("a").is_none());
    }

    #[test]
    fn the_last_tree_reload_is_shown_once_recorded() {
        let status = StartupStatus::new("starting");
        assert_eq!(status.tree_reload(), None);
        status.tree_reloaded(serde_json::json!({"result": "failed"}));
        status.tree_reloaded(serde_json::json!({"result": "applied"}));
        assert_eq!(
            status.tree_reload(),
            Some(serde_json::json!({"result": "applied"}))
        );
    }

    /// A running source that answers every optional question.
    struct Answers;

    impl StatusSource for Answers {
        fn converge_status(&self) -> ConvergeStatus {
            ConvergeStatus {
                startup: StartupConverge::Done,
                converge_tasks: 0,
            }
        }
        fn queue_list(&self, show_empty: bool) -> QueueListDump {
            QueueSet::<NoTask>::new(Backoff::default()).dump(Duration::ZERO, show_empty)
        }
        fn global_hooks(&self) -> Vec<String> {
            vec!["hooks/a".into()]
        }
        fn global_values(&self) -> Value {
            serde_json::json!({"a": 1})
        }
        fn global_config(&self) -> Value {
            serde_json::json!({"a": 2})
        }
        fn enabled_modules(&self) -> Vec<String> {
            vec!["m".into()]
        }
        fn module_values(&self, _module: &str) -> Option<Value> {
            Some(serde_json::json!({}))
        }
        fn module_config(&self, _module: &str) -> Option<Value> {
            Some(serde_json::json!({}))
        }
        fn global_patches(&self) -> Option<Value> {
            Some(serde_json::json!([]))
        }
        fn global_snapshots(&self) -> Option<Value> {
            Some(serde_json::json!({}))
        }
        fn module_patches(&self, _module: &str) -> Option<Value> {
            Some(serde_json::json!([]))
        }
        fn module_snapshots(&self, _module: &str) -> Option<Value> {
            Some(serde_json::json!({}))
        }
        fn resource_monitor(&self) -> Option<Value> {
            Some(serde_json::json!({}))
        }
        fn hooks(&self) -> Option<Value> {
            Some(serde_json::json!([{"name": "hooks/a"}]))
        }
    }

    #[test]
    fn once_running_every_optional_answer_comes_from_the_runtime() {
        let status = StartupStatus::new("starting");
        status.running(Arc::new(Answers));
        assert!(status.ready());
        assert!(status.hooks().is_some(), "hook list");
        assert!(status.global_patches().is_some() && status.global_snapshots().is_some());
        assert!(status.module_patches("m").is_some() && status.module_snapshots("m").is_some());
        assert!(status.resource_monitor().is_some());
        assert_eq!(status.enabled_modules(), vec!["m".to_string()]);
    }
}
