//! The runtime seen by the HTTP endpoints and the debug API: short snapshots under the state lock.

use addon_core::binding_context::ObjectAndFilterResult;
use addon_core::names::ModuleName;
use addon_core::queue::QueueListDump;
use addon_core::values::patch::Scope;
use serde_json::{Map, Value};

use super::RuntimeHandle;
use super::task::Task;
use crate::runtime::edges::status::{BindingItems, ConvergeStatus, StartupConverge, StatusSource};

impl RuntimeHandle {
    fn module_name(&self, name: &str) -> Option<ModuleName> {
        let module = ModuleName::new(name).ok()?;
        self.shared
            .lock()
            .modules
            .contains_key(&module)
            .then_some(module)
    }
}

fn is_converge_task(task: &Task) -> bool {
    matches!(
        task,
        Task::Converge { .. }
            | Task::DiscoverModules
            | Task::ConvergeDone { .. }
            | Task::ModuleRun { .. }
            | Task::ModuleGroup { .. }
            | Task::ModuleDelete { .. }
            | Task::ModulePurge { .. }
    )
}

impl StatusSource for RuntimeHandle {
    fn converge_status(&self) -> ConvergeStatus {
        let st = self.shared.lock();
        let converge_tasks = st
            .queues
            .iter()
            .flat_map(|q| q.iter())
            .filter(|t| is_converge_task(&t.task))
            .count();
        let startup = if st.first_converge_done {
            StartupConverge::Done
        } else if converge_tasks > 0 || !st.enabled.is_empty() {
            StartupConverge::InProgress
        } else {
            StartupConverge::NotStarted
        };
        ConvergeStatus {
            startup,
            converge_tasks,
        }
    }

    fn ready(&self) -> bool {
        self.shared.lock().first_converge_done
    }

    fn not_ready_reason(&self) -> Option<String> {
        self.first_failure()
            .map(|task| format!("startup converge in progress; failing: {task}"))
    }

    fn queue_list(&self, show_empty: bool) -> QueueListDump {
        let now = self.shared.now();
        self.shared.lock().queues.dump(now, show_empty)
    }

    fn global_hooks(&self) -> Vec<String> {
        let st = self.shared.lock();
        st.global_hooks
            .iter()
            .map(|h| h.name().to_string())
            .collect()
    }

    fn global_values(&self) -> Value {
        self.shared.lock().store.global_values()
    }

    fn global_config(&self) -> Value {
        self.shared.lock().store.global_config_values()
    }

    fn enabled_modules(&self) -> Vec<String> {
        let st = self.shared.lock();
        st.enabled.iter().map(ToString::to_string).collect()
    }

    fn modules_not_running(&self) -> Vec<(String, String)> {
        let st = self.shared.lock();
        (st.not_running.iter())
            .map(|(module, reason)| (module.to_string(), reason.clone()))
            .collect()
    }

    fn module_graph(&self) -> Option<String> {
        let st = self.shared.lock();
        let sources: Vec<&addon_core::discovery::ModuleSource> = (st.module_order.iter())
            .filter_map(|m| st.module(m))
            .filter(|m| !m.removed)
            .map(|m| &m.source)
            .collect();
        Some(addon_core::module_graph::to_dot(&sources))
    }

    fn disabled_reasons(&self) -> std::collections::BTreeMap<String, String> {
        RuntimeHandle::disabled_reasons(self)
    }

    fn module_values(&self, module: &str) -> Option<Value> {
        let module = self.module_name(module)?;
        self.shared.lock().store.module_values(&module).ok()
    }

    fn module_config(&self, module: &str) -> Option<Value> {
        let module = self.module_name(module)?;
        self.shared.lock().store.module_config_values(&module).ok()
    }

    fn global_patches(&self) -> Option<Value> {
        let st = self.shared.lock();
        let ops = st.store.values_patches(&Scope::Global).ok()?;
        serde_json::to_value(ops).ok()
    }

    fn module_patches(&self, module: &str) -> Option<Value> {
        let module = self.module_name(module)?;
        let st = self.shared.lock();
        let ops = st.store.values_patches(&Scope::Module(module)).ok()?;
        serde_json::to_value(ops).ok()
    }

    fn global_snapshots(&self) -> Option<Value> {
        Some(self.snapshots_of(None))
    }

    fn module_snapshots(&self, module: &str) -> Option<Value> {
        let module = self.module_name(module)?;
        Some(self.snapshots_of(Some(&module)))
    }

    fn releases(&self) -> Option<Value> {
        let summaries = self.shared.guard.summaries();
        let by_name: std::collections::BTreeMap<String, _> = summaries
            .into_iter()
            .map(|(module, summary)| (module.to_string(), summary))
            .collect();
        serde_json::to_value(by_name).ok()
    }

    fn hooks(&self) -> Option<Value> {
        let st = self.shared.lock();
        let describe = |module: Option<&ModuleName>, hook: &super::state::HookDef| {
            let mut entry = Map::new();
            entry.insert("name".into(), hook.name().to_string().into());
            if let Some(module) = module {
                entry.insert("module".into(), module.to_string().into());
            }
            entry.insert("bindings".into(), hook.config.binding_summary().into());
            Value::Object(entry)
        };
        let global = st.global_hooks.iter().map(|h| describe(None, h));
        let modules = st
            .module_order
            .iter()
            .filter_map(|m| Some((m, st.module(m)?)));
        let module_hooks = modules.flat_map(|(m, state)| state.hooks.iter().map(move |h| (m, h)));
        let all: Vec<Value> = global
            .chain(module_hooks.map(|(m, h)| describe(Some(m), h)))
            .collect();
        Some(Value::Array(all))
    }

    fn hook_snapshot_items(&self, module: Option<&str>, hook: &str) -> Option<Vec<BindingItems>> {
        let module = match module {
            Some(m) => Some(self.module_name(m)?),
            None => None,
        };
        let st = self.shared.lock();
        let bindings = (st.monitors.iter())
            .filter(|(key, _)| key.module == module && key.hook.as_str() == hook)
            .map(|(_, m)| (m.cache.binding().name.clone(), m.cache.items()))
            .collect();
        Some(bindings)
    }
}

impl RuntimeHandle {
    /// `{hook: {binding: [{object?, filterResult?}]}}` of a module's (or the global) hooks.
    fn snapshots_of(&self, module: Option<&ModuleName>) -> Value {
        let st = self.shared.lock();
        let mut out = Map::new();
        for (key, monitor) in &st.monitors {
            if key.module.as_ref() != module {
                continue;
            }
            let items: Vec<Value> = monitor
                .cache
                .items()
                .iter()
                .map(ObjectAndFilterResult::to_json)
                .collect();
            let hook = out
                .entry(key.hook.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(bindings) = hook {
                bindings.insert(monitor.cache.binding().name.clone(), Value::Array(items));
            }
        }
        Value::Object(out)
    }
}
