//! Runs one hook: fresh snapshots and values in, the hook process, then its patches applied to
//! the values store (config patches saved to the config store right away) and its other outputs
//! checked.

use addon_core::binding_context::{BindingContext, ContextBuilder, render};
use addon_core::hook_config::BindingType;
use addon_core::hook_output::kube_patch::{self, KubeOperation};
use addon_core::hook_output::metrics;
use addon_core::names::{HookName, ModuleName};
use addon_core::values::patch::{HookRef, PatchKind, ValuesPatch};

use super::Shared;
use super::edges::HookRequest;
use super::state::HookDef;
use crate::check::error_chain;
use crate::exec::hook_run::HookOutputs;

/// What a successful hook run changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HookEffect {
    /// The merged values of the hook's scope changed.
    pub values_changed: bool,
    /// A `*Enabled` flag changed (global hooks: dynamic flags or config flags).
    pub enabled_changed: bool,
}

/// Runs `hook` with `contexts`; an error is the failure message of the run.
pub async fn run(
    shared: &Shared,
    module: Option<&ModuleName>,
    hook: &HookName,
    binding: BindingType,
    mut contexts: Vec<BindingContext>,
) -> Result<HookEffect, String> {
    let (def, values) = {
        let st = shared.lock();
        let def = st
            .hook(module, hook)
            .cloned()
            .ok_or_else(|| format!("hook '{hook}' is not known"))?;
        let snapshots = st.snapshots(module, hook);
        let builder = ContextBuilder::new(&def.config, &snapshots);
        for ctx in &mut contexts {
            builder.refresh(ctx);
        }
        let values = match module {
            None => st.store.global_hook_values(),
            Some(m) => st
                .store
                .module_hook_values(m, &st.enabled)
                .map_err(|e| error_chain(&e))?,
        };
        (def, values)
    };
    let context_json = render(&contexts);
    let binding_name = contexts
        .first()
        .map_or(binding.as_str(), |c| c.binding.as_str());
    {
        let mut st = shared.lock();
        let owner = module.map_or(String::new(), |m| format!("{m}/"));
        st.record(format!("run {owner}{hook} {}", binding.as_str()));
    }
    let request = HookRequest {
        module,
        hook: &def.file,
        binding: binding_name,
        binding_context: &context_json,
        values: &values,
    };
    let outputs = shared
        .edges
        .hooks
        .run_hook(request)
        .await
        .map_err(|e| e.message)?;
    apply_outputs(shared, module, &def, &outputs).await
}

/// Applies a successful run's outputs.
async fn apply_outputs(
    shared: &Shared,
    module: Option<&ModuleName>,
    def: &HookDef,
    outputs: &HookOutputs,
) -> Result<HookEffect, String> {
    let hook_ref = match module {
        None => HookRef::global(def.name().clone()),
        Some(m) => HookRef::module(m.clone(), def.name().clone()),
    };
    let parse = |kind, text: &str| ValuesPatch::parse(&hook_ref, kind, text);
    let config_patch =
        parse(PatchKind::Config, &outputs.config_values_patch).map_err(|e| error_chain(&e))?;
    let values_patch =
        parse(PatchKind::Values, &outputs.values_patch).map_err(|e| error_chain(&e))?;
    for warning in config_patch.warnings.iter().chain(&values_patch.warnings) {
        tracing::warn!(hook = %def.name(), "{warning}");
    }
    let kube_ops = check_other_outputs(def, outputs)?;
    let (effect, to_save) = {
        let mut st = shared.lock();
        let config = st
            .store
            .apply_config_patch(&hook_ref, &config_patch)
            .map_err(|e| error_chain(&e))?;
        let values = st
            .store
            .apply_values_patch(&hook_ref, &values_patch)
            .map_err(|e| error_chain(&e))?;
        let effect = HookEffect {
            values_changed: config.values_changed || values.values_changed,
            enabled_changed: !values.enabled_changed.is_empty()
                || !config.config_change.enabled_changed.is_empty(),
        };
        let save = !config.config_change.is_empty();
        (effect, save.then(|| st.store.config().clone()))
    };
    if let Some(config) = to_save {
        shared
            .edges
            .config
            .save(&config)
            .await
            .map_err(|e| format!("hook '{}': {}", def.name(), error_chain(&e)))?;
    }
    if !kube_ops.is_empty() {
        shared
            .edges
            .objects
            .apply(&kube_ops)
            .await
            .map_err(|e| format!("hook '{}': $KUBERNETES_PATCH_PATH: {e}", def.name()))?;
    }
    Ok(effect)
}

/// `$METRICS_PATH` and `$KUBERNETES_PATCH_PATH` must be valid; returns the Kubernetes operations.
/// Metric operations are validated only (no metrics endpoint in this version).
fn check_other_outputs(def: &HookDef, outputs: &HookOutputs) -> Result<Vec<KubeOperation>, String> {
    let hook = def.name();
    let metric_ops = metrics::parse(&outputs.metrics)
        .map_err(|e| format!("hook '{hook}': $METRICS_PATH: {}", error_chain(&e)))?;
    if !metric_ops.is_empty() {
        tracing::debug!(hook = %hook, operations = metric_ops.len(), "hook metrics received");
    }
    kube_patch::parse(&outputs.kubernetes_patch)
        .map_err(|e| format!("hook '{hook}': $KUBERNETES_PATCH_PATH: {}", error_chain(&e)))
}
