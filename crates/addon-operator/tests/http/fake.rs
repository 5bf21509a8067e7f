//! A fake runtime status: two queues, global hooks, two modules with values, a settable readiness.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use addon_core::names::QueueName;
use addon_core::queue::{Backoff, QueueListDump, QueueSet, QueueTask};
use addon_operator::edges::http::{BindingItems, ConvergeStatus, StartupConverge, StatusSource};
use serde_json::{Value, json};

pub struct Desc(pub &'static str);

impl QueueTask for Desc {
    fn description(&self) -> String {
        self.0.to_string()
    }
}

pub struct FakeStatus {
    pub ready: AtomicBool,
    pub queues: Mutex<QueueSet<Desc>>,
    pub with_snapshots: bool,
    /// What `disabled_reasons` answers (none by default).
    pub disabled: std::collections::BTreeMap<String, String>,
}

impl FakeStatus {
    pub fn new() -> Self {
        let mut queues = QueueSet::new(Backoff::default());
        let main = QueueName::main();
        queues
            .push_back(&main, Desc("ModuleRun:main:module-alpha"))
            .unwrap();
        queues
            .push_back(
                &main,
                Desc("GlobalHookRun:main:schedule:global-hooks/hook.sh:every-minute"),
            )
            .unwrap();
        queues.ensure(QueueName::new("idle-queue").unwrap());
        Self {
            ready: AtomicBool::new(false),
            queues: Mutex::new(queues),
            with_snapshots: false,
            disabled: Default::default(),
        }
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }
}

impl StatusSource for FakeStatus {
    fn converge_status(&self) -> ConvergeStatus {
        if self.ready.load(Ordering::SeqCst) {
            ConvergeStatus {
                startup: StartupConverge::Done,
                converge_tasks: 0,
            }
        } else {
            ConvergeStatus {
                startup: StartupConverge::InProgress,
                converge_tasks: 1,
            }
        }
    }

    fn queue_list(&self, show_empty: bool) -> QueueListDump {
        self.queues.lock().unwrap().dump(Duration::ZERO, show_empty)
    }

    fn global_hooks(&self) -> Vec<String> {
        vec!["global-hooks/hook.sh".into()]
    }

    fn global_values(&self) -> Value {
        json!({"enabledModules": ["module-alpha"], "discovery": {"ready": true}})
    }

    fn global_config(&self) -> Value {
        json!({"param": 1})
    }

    fn enabled_modules(&self) -> Vec<String> {
        vec!["module-beta".into(), "module-alpha".into()]
    }

    fn disabled_reasons(&self) -> std::collections::BTreeMap<String, String> {
        self.disabled.clone()
    }

    fn module_values(&self, module: &str) -> Option<Value> {
        match module {
            "module-alpha" => Some(json!({"replicas": 2})),
            "module-beta" => Some(json!({})),
            _ => None,
        }
    }

    fn module_config(&self, module: &str) -> Option<Value> {
        (module == "module-alpha").then(|| json!({"replicas": 1}))
    }

    fn module_snapshots(&self, _module: &str) -> Option<Value> {
        self.with_snapshots
            .then(|| json!({"hooks/pods": {"pods": []}}))
    }

    fn hook_snapshot_items(&self, module: Option<&str>, hook: &str) -> Option<Vec<BindingItems>> {
        let known = self.with_snapshots && module == Some("module-alpha") && hook == "hooks/pods";
        known.then(|| vec![("pods".to_string(), Vec::new())])
    }

    fn hooks(&self) -> Option<Value> {
        Some(json!([
            {"name": "global-hooks/hook.sh", "bindings": ["onStartup: 1", "schedule: every-minute (*/1 * * * *)"]},
            {"name": "hooks/pods", "module": "module-alpha", "bindings": ["kubernetes: pods (Pod)"]},
        ]))
    }
}
