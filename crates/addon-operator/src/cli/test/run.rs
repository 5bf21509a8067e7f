//! Runs one case as the operator runs its hook: the tree's values (as `check` computes them)
//! with the case's starting values over them, the binding context built from the case's objects
//! by the monitor cache and the jq sandbox, the hook process in the case's own tmp dir, then its
//! patches applied to the values store.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use addon_core::binding_context::{ContextDocument, ObjectAndFilterResult, Snapshots, render};
use addon_core::discovery::{Discovered, HookFile};
use addon_core::error::error_chain;
use addon_core::hook_config::{HookConfig, WatchEvent};
use addon_core::hook_output::kube_patch;
use addon_core::monitor::MonitorCache;
use addon_core::names::{HookName, ModuleName};
use addon_core::values::merge::deep_merge;
use addon_core::values::patch::{HookRef, PatchKind, ValuesPatch};
use addon_core::values::store::ValuesStore;
use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::spec::{Case, EventKind};
use super::target::Target;
use crate::cli::hook_run::{apply_outputs, binding_context, filter, hook_values, monitor_cache};
use crate::cli::values::{ValuesStage, evaluate};
use crate::edges::exec::hook_run::{HookOutputs, HookRunSettings};
use crate::edges::exec::hooks::ProcessHooks;
use crate::runtime::edges::{HookExecutor, HookRequest};
use crate::runtime::hooks::ReadOutputs;

/// What every case of a run shares.
pub struct Inputs<'a> {
    pub found: &'a Discovered,
    /// The config file the tree's values start from (`--config-file`).
    pub config_file: Option<&'a Path>,
    pub timeout: Duration,
}

/// What a run gave, in the terms of the expectations.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Actual {
    /// The values document the hook saw, after its patches.
    pub values: Value,
    pub config_values: Value,
    pub values_patch: Vec<Value>,
    pub config_values_patch: Vec<Value>,
    pub kubernetes_operations: Vec<Value>,
    pub metrics: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Why the run failed (the hook exited with an error, or its outputs were refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Actual {
    /// The run wrote no patch, no Kubernetes operation and no metric.
    pub fn unchanged(&self) -> bool {
        self.values_patch.is_empty()
            && self.config_values_patch.is_empty()
            && self.kubernetes_operations.is_empty()
            && self.metrics.is_empty()
    }
}

/// Runs `case` on `target`. An error is a case that could not be set up (its starting values
/// are refused, its objects cannot be filtered, ...); a failing hook is an [`Actual::error`].
pub async fn run_case(
    inputs: &Inputs<'_>,
    case: &Case,
    target: &Target<'_>,
) -> Result<Actual, String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("create a tmp dir: {e}"))?;
    let settings = HookRunSettings {
        tmp_dir: tmp.path().to_path_buf(),
        timeout: inputs.timeout,
        ..HookRunSettings::default()
    };
    let mut stage = evaluate(inputs.found, inputs.config_file, &settings).await;
    if !stage.errors.is_empty() {
        return Err(format!("the tree's values: {}", stage.errors.join("; ")));
    }
    let env: Vec<(String, String)> = case.env.clone().into_iter().collect();
    let writer = match target {
        Target::Hook { hook, .. } => hook.name.clone(),
        Target::Enabled { .. } => HookName::new("enabled").map_err(|e| e.to_string())?,
    };
    start_state(&mut stage.store, case, target.module(), &writer)?;
    match target {
        Target::Hook {
            module,
            hook,
            config,
            binding,
        } => {
            let enabled = enabled_modules(case, &stage.enabled)?;
            let run = HookRun {
                module: module.as_ref(),
                hook,
                config,
                binding,
                enabled: &enabled,
            };
            run.run(&mut stage.store, case, settings, env).await
        }
        Target::Enabled { module } => {
            run_enabled(inputs.found, &mut stage, case, module, &settings, &env).await
        }
    }
}

/// `global.enabledModules`: the case's list, else the modules the tree enables.
fn enabled_modules(case: &Case, tree: &[ModuleName]) -> Result<Vec<ModuleName>, String> {
    match &case.enabled_modules {
        None => Ok(tree.to_vec()),
        Some(names) => names
            .iter()
            .map(|n| ModuleName::new(n).map_err(|e| format!("enabledModules: {e}")))
            .collect(),
    }
}

/// Puts the case's config values (whole sections) and values (merged over the tree's) into the
/// store; both are validated as the operator validates them.
fn start_state(
    store: &mut ValuesStore,
    case: &Case,
    module: Option<&ModuleName>,
    writer: &HookName,
) -> Result<(), String> {
    if let Some(Value::Object(sections)) = &case.config_values {
        let mut config = store.config().clone();
        for (key, section) in sections {
            match module {
                Some(m) if key != "global" => config.set_module_values(m, section.clone()),
                _ => config.set_global(section.clone()),
            }
        }
        store.set_config(config.clone());
        let modules: Vec<ModuleName> = module.into_iter().cloned().collect();
        store
            .check_config(&config, &modules)
            .map_err(|e| format!("configValues: {}", error_chain(&e)))?;
    }
    if let Some(Value::Object(sections)) = &case.values {
        for (key, given) in sections {
            let (hook, mut current) = match module {
                Some(m) if key != "global" => (
                    HookRef::module(m.clone(), writer.clone()),
                    store.module_values(m).map_err(|e| error_chain(&e))?,
                ),
                _ => (HookRef::global(writer.clone()), store.global_values()),
            };
            deep_merge(&mut current, given);
            let ops = json!([{"op": "add", "path": format!("/{key}"), "value": current}]);
            let patch = ValuesPatch::parse(&hook, PatchKind::Values, &ops.to_string())
                .map_err(|e| format!("values: {}", error_chain(&e)))?;
            store
                .apply_values_patch(&hook, &patch)
                .map_err(|e| format!("values: {}", error_chain(&e)))?;
        }
    }
    Ok(())
}

/// One hook run of a case.
struct HookRun<'a> {
    module: Option<&'a ModuleName>,
    hook: &'a HookFile,
    config: &'a HookConfig,
    binding: &'a str,
    enabled: &'a [ModuleName],
}

impl HookRun<'_> {
    async fn run(
        &self,
        store: &mut ValuesStore,
        case: &Case,
        settings: HookRunSettings,
        extra_env: Vec<(String, String)>,
    ) -> Result<Actual, String> {
        let (snapshots, event) = snapshots(case, self.config, self.binding).await?;
        let event = event.as_ref().map(|(w, item)| (*w, item));
        let context = binding_context(self.config, self.binding, &snapshots, event)?;
        let context_json = render(&[context]);
        let values = hook_values(store, self.module, self.enabled)?;
        let executor = ProcessHooks {
            settings,
            extra_env,
            cancel: CancellationToken::new(),
        };
        let request = HookRequest {
            module: self.module,
            hook: self.hook,
            binding: self.binding,
            binding_context: ContextDocument::Json(&context_json),
            values: &values,
            webhook_response: false,
        };
        let failed = |error: String| Actual {
            values: values.values.clone(),
            config_values: values.config_values.clone(),
            error: Some(error),
            ..Actual::default()
        };
        let outputs = match executor.run_hook(request).await {
            Ok(success) => success.outputs,
            Err(failure) => return Ok(failed(failure.message)),
        };
        let hook_ref = crate::runtime::hooks::hook_ref(self.module, &self.hook.name);
        let read = match apply_outputs(store, &hook_ref, &outputs) {
            Ok(read) => read,
            Err(error) => return Ok(failed(error)),
        };
        let after = hook_values(store, self.module, self.enabled)?;
        Ok(written(&read, &outputs, after.values, after.config_values))
    }
}

/// What a successful run wrote: its patches, and its operations and metrics as written.
fn written(
    read: &ReadOutputs,
    outputs: &HookOutputs,
    values: Value,
    config_values: Value,
) -> Actual {
    let metrics = serde_json::Deserializer::from_str(&outputs.metrics)
        .into_iter::<Value>()
        .filter_map(Result::ok)
        .collect();
    Actual {
        values,
        config_values,
        values_patch: as_list(&read.values_patch.ops),
        config_values_patch: as_list(&read.config_patch.ops),
        kubernetes_operations: kube_patch::documents(&outputs.kubernetes_patch).unwrap_or_default(),
        metrics,
        enabled: None,
        error: None,
    }
}

/// A serializable list as JSON values.
fn as_list<T: Serialize>(items: &T) -> Vec<Value> {
    match serde_json::to_value(items) {
        Ok(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

type Event = (WatchEvent, ObjectAndFilterResult);

/// The snapshots of the case's objects as the monitors would hold them, and the event of the
/// run binding applied to its snapshot (an event that changes nothing the hook can see is one
/// the operator would not run the hook for).
async fn snapshots(
    case: &Case,
    config: &HookConfig,
    binding: &str,
) -> Result<(Snapshots, Option<Event>), String> {
    let mut caches: BTreeMap<String, MonitorCache> = BTreeMap::new();
    for (name, objects) in &case.snapshots {
        let Some(kube) = config.kubernetes_binding(name) else {
            return Err(format!("'{name}' is not a kubernetes binding of the hook"));
        };
        caches.insert(name.clone(), monitor_cache(kube, objects.clone()).await?);
    }
    let watch = match case.event {
        Some(EventKind::Added) => Some(WatchEvent::Added),
        Some(EventKind::Modified) => Some(WatchEvent::Modified),
        Some(EventKind::Deleted) => Some(WatchEvent::Deleted),
        Some(EventKind::Synchronization) | None => None,
    };
    let mut event = None;
    if let (Some(watch), Some(object), Some(kube)) =
        (watch, &case.object, config.kubernetes_binding(binding))
    {
        let filtered = filter(kube, std::slice::from_ref(object)).await?;
        let Some(filtered) = filtered.into_iter().next() else {
            return Err("the object was not filtered".into());
        };
        let cache = caches
            .entry(binding.to_string())
            .or_insert_with(|| MonitorCache::new(kube));
        let Some(item) = cache.apply_filtered(watch, object.clone(), filtered) else {
            return Err(format!(
                "the {} event changes nothing the hook sees: the operator would not run it",
                watch.as_str()
            ));
        };
        event = Some((watch, item));
    }
    let snapshots = caches.into_iter().map(|(n, c)| (n, c.items())).collect();
    Ok((snapshots, event))
}

/// Runs the module's `enabled` script as the enablement pass does.
async fn run_enabled(
    found: &Discovered,
    stage: &mut ValuesStage,
    case: &Case,
    module: &ModuleName,
    settings: &HookRunSettings,
    env: &[(String, String)],
) -> Result<Actual, String> {
    let so_far = match &case.enabled_modules {
        Some(_) => enabled_modules(case, &[])?,
        None => enabled_before(found, &stage.enabled, module),
    };
    let values = stage
        .store
        .enabled_script_values(module, &so_far)
        .map_err(|e| error_chain(&e))?;
    let errors_before = stage.errors.len();
    let verdict = stage
        .run_script(found, module, &so_far, settings, env)
        .await;
    let errors = stage.errors.split_off(errors_before);
    let (enabled, error) = if errors.is_empty() {
        (Some(verdict), None)
    } else {
        (None, Some(errors.join("; ")))
    };
    Ok(Actual {
        values: values.values,
        config_values: values.config_values,
        enabled,
        error,
        ..Actual::default()
    })
}

/// The modules of `enabled` that come before `module` in the tree's order.
fn enabled_before(
    found: &Discovered,
    enabled: &[ModuleName],
    module: &ModuleName,
) -> Vec<ModuleName> {
    found
        .modules
        .iter()
        .take_while(|m| &m.name != module)
        .filter(|m| enabled.contains(&m.name))
        .map(|m| m.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::hook_config::HookScope;
    use serde_json::json;

    fn config() -> HookConfig {
        let text = "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n- name: nodes\n  kind: Node\n  group: g\n- name: zones\n  kind: Zone\n  group: g\n";
        let name = HookName::new("hooks/h").unwrap();
        addon_core::hook_config::parse(&name, HookScope::Global, text).unwrap()
    }

    fn pod(name: &str) -> Value {
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "d"}})
    }

    fn names(snapshots: &Snapshots, binding: &str) -> Vec<String> {
        snapshots[binding]
            .iter()
            .map(|i| i.id.name.to_string())
            .collect()
    }

    #[tokio::test]
    async fn an_event_is_applied_to_the_snapshot_of_its_binding() {
        let mut case = Case {
            event: Some(EventKind::Added),
            object: Some(pod("b")),
            snapshots: [("pods".to_string(), vec![pod("a")])].into(),
            ..Case::default()
        };
        let (added, event) = snapshots(&case, &config(), "pods").await.unwrap();
        assert_eq!(names(&added, "pods"), ["a", "b"]);
        let (watch, item) = event.unwrap();
        assert_eq!((watch, &*item.id.name), (WatchEvent::Added, "b"));
        case.event = Some(EventKind::Deleted);
        case.object = Some(pod("a"));
        let (after, _) = snapshots(&case, &config(), "pods").await.unwrap();
        assert!(names(&after, "pods").is_empty());
    }

    #[tokio::test]
    async fn an_event_the_hook_would_not_see_is_refused() {
        let case = Case {
            event: Some(EventKind::Deleted),
            object: Some(pod("gone")),
            ..Case::default()
        };
        let err = snapshots(&case, &config(), "pods").await.unwrap_err();
        assert!(err.contains("the operator would not run it"), "{err}");
    }

    #[tokio::test]
    async fn a_grouped_binding_sees_the_groups_snapshots() {
        let node = json!({"kind": "Node", "metadata": {"name": "n1"}});
        let case = Case {
            snapshots: [("nodes".to_string(), vec![node])].into(),
            ..Case::default()
        };
        let (held, event) = snapshots(&case, &config(), "zones").await.unwrap();
        let context = binding_context(&config(), "zones", &held, None).unwrap();
        let rendered = render(&[context]);
        assert!(event.is_none());
        assert_eq!(rendered[0]["type"], "Group");
        assert_eq!(
            rendered[0]["snapshots"]["nodes"][0]["object"]["metadata"]["name"],
            "n1"
        );
        assert_eq!(rendered[0]["snapshots"]["zones"], json!([]));
    }

    #[test]
    fn the_enabled_script_sees_the_modules_enabled_before_it() {
        let mut found = Discovered::default();
        for (order, name) in [(1, "a"), (2, "b"), (3, "c")] {
            found.modules.push(addon_core::discovery::ModuleSource {
                name: ModuleName::new(name).unwrap(),
                order,
                path: std::path::PathBuf::from(name),
                modules_dir: None,
                values_yaml: None,
                enabled_script: None,
                openapi: Default::default(),
                definition: Default::default(),
                has_chart: false,
                settings_check: None,
                hooks: Vec::new(),
            });
        }
        let enabled = [ModuleName::new("a").unwrap(), ModuleName::new("c").unwrap()];
        let before = enabled_before(&found, &enabled, &ModuleName::new("c").unwrap());
        assert_eq!(before, [ModuleName::new("a").unwrap()]);
    }
}
