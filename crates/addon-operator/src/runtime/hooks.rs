//! Runs one hook: fresh snapshots and values in, the hook process, then its patches applied to
//! the values store (config patches saved to the config store first, then applied to memory) and
//! its other outputs checked.

use addon_core::binding_context::{BindingContext, ContextBuilder, ContextDocument};
use addon_core::hook_config::BindingType;
use addon_core::hook_output::kube_patch::{self, KubeOperation};
use addon_core::hook_output::metrics::{self, MetricOperation};
use addon_core::names::{HookName, ModuleName, QueueName};
use addon_core::values::patch::{HookRef, PatchKind, ValuesPatch};
use addon_core::values::store::{ConfigPatchOutcome, HookValues, ValuesStore};

use super::Shared;
use super::config_writer::save_config_patch;
use super::edges::HookRequest;
use super::error::HookError;
use super::state::HookDef;
use crate::runtime::edges::HookOutputs;
use crate::runtime::metrics::{HookOutcome, HookRunRecord};

pub use addon_core::lifecycle::HookEffect;

/// Where and how a hook runs, for its log lines and metrics.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    pub queue: &'a QueueName,
    pub allow_failure: bool,
}

/// Runs `hook` with `contexts`; an error says which step of the run failed.
pub async fn run(
    shared: &Shared,
    at: RunContext<'_>,
    module: Option<&ModuleName>,
    hook: &HookName,
    binding: BindingType,
    mut contexts: Vec<BindingContext>,
) -> Result<HookEffect, HookError> {
    let (def, values) = prepare(shared, module, hook, binding, &mut contexts)?;
    let binding_name = contexts
        .first()
        .map_or(binding.as_str(), |c| c.binding.as_str());
    let request = HookRequest {
        module,
        hook: &def.file,
        binding: binding_name,
        binding_context: ContextDocument::Contexts(&contexts),
        values: &values,
        webhook_response: false,
    };
    let started = tokio::time::Instant::now();
    let (usage, result) = match shared.edges.hooks.run_hook(request).await {
        Err(failure) => {
            if failure.timed_out {
                (shared.metrics).hook_timeout(module.map(ModuleName::as_str), hook.as_str());
            }
            (failure.usage, Err(HookError::Run(failure)))
        }
        Ok(success) => {
            let applied = apply_outputs(shared, module, &def, &success.outputs).await;
            (success.usage, applied)
        }
    };
    if let (Err(error), false) = (&result, at.allow_failure) {
        super::admin::hook_failed(shared, module, hook.as_str(), binding_name, error);
    }
    let outcome = match (&result, at.allow_failure) {
        (Ok(_), _) => HookOutcome::Success,
        (Err(_), true) => HookOutcome::AllowedFailure,
        (Err(_), false) => HookOutcome::Failure,
    };
    shared.metrics.hook_run(&HookRunRecord {
        hook: hook.as_str(),
        module: module.map(ModuleName::as_str),
        binding: binding_name,
        queue: at.queue.as_str(),
        activation: binding.as_str(),
        duration: started.elapsed(),
        user_cpu: usage.user,
        sys_cpu: usage.sys,
        max_rss_bytes: usage.max_rss_kb.saturating_mul(1024),
        outcome,
    });
    result
}

/// Under the state lock: the hook's definition, fresh snapshots in its contexts, and the values
/// it reads; the run is recorded in the history.
fn prepare(
    shared: &Shared,
    module: Option<&ModuleName>,
    hook: &HookName,
    binding: BindingType,
    contexts: &mut [BindingContext],
) -> Result<(HookDef, HookValues), HookError> {
    let mut st = shared.lock();
    let def = st
        .hook(module, hook)
        .cloned()
        .ok_or_else(|| HookError::Unknown { hook: hook.clone() })?;
    let names = contexts
        .iter()
        .flat_map(|c| c.snapshot_names.iter().flatten())
        .map(String::as_str)
        .collect();
    let snapshots = st.snapshots(module, hook, &names);
    let builder = ContextBuilder::new(&def.config, &snapshots);
    for ctx in contexts.iter_mut() {
        builder.refresh(ctx);
    }
    let values = match module {
        None => st.store.global_hook_values(),
        Some(m) => st.store.module_hook_values(m, &st.enabled)?,
    };
    st.record(|| {
        let owner = module.map_or(String::new(), |m| format!("{m}/"));
        format!("run {owner}{hook} {}", binding.as_str())
    });
    Ok((def, values))
}

/// Applies a successful run's outputs.
async fn apply_outputs(
    shared: &Shared,
    module: Option<&ModuleName>,
    def: &HookDef,
    outputs: &HookOutputs,
) -> Result<HookEffect, HookError> {
    let hook_ref = hook_ref(module, def.name());
    let read = ReadOutputs::parse(&hook_ref, outputs)?;
    for warning in read.warnings() {
        tracing::warn!(hook = %def.name(), "{warning}");
    }
    shared
        .metrics
        .hook_metric_ops(
            def.name().as_str(),
            module.map(ModuleName::as_str),
            &read.metric_ops,
        )
        .map_err(|source| HookError::ApplyMetrics {
            hook: def.name().clone(),
            source,
        })?;
    let effect = save_config_patch(shared, &hook_ref, &read.config_patch, |store, config| {
        read.apply_values(store, &hook_ref, config)
    })
    .await?;
    if !read.kube_ops.is_empty() {
        shared
            .edges
            .objects
            .apply(&read.kube_ops)
            .await
            .map_err(|source| HookError::ApplyKubePatch {
                hook: def.name().clone(),
                source,
            })?;
    }
    Ok(effect)
}

/// Who wrote a patch: a global hook, or a module's hook.
pub fn hook_ref(module: Option<&ModuleName>, hook: &HookName) -> HookRef {
    match module {
        None => HookRef::global(hook.clone()),
        Some(m) => HookRef::module(m.clone(), hook.clone()),
    }
}

/// A successful run's output files, parsed and checked (nothing applied yet).
pub struct ReadOutputs {
    pub config_patch: ValuesPatch,
    pub values_patch: ValuesPatch,
    pub metric_ops: Vec<MetricOperation>,
    pub kube_ops: Vec<KubeOperation>,
}

impl ReadOutputs {
    pub fn parse(hook: &HookRef, outputs: &HookOutputs) -> Result<Self, HookError> {
        let patch = |kind, text: &str| ValuesPatch::parse(hook, kind, text);
        Ok(Self {
            config_patch: patch(PatchKind::Config, &outputs.config_values_patch)?,
            values_patch: patch(PatchKind::Values, &outputs.values_patch)?,
            metric_ops: metrics::parse(&outputs.metrics).map_err(|source| {
                HookError::ReadMetrics {
                    hook: hook.clone(),
                    source: Box::new(source),
                }
            })?,
            kube_ops: kube_patch::parse(&outputs.kubernetes_patch).map_err(|source| {
                HookError::ReadKubePatch {
                    hook: hook.clone(),
                    source: Box::new(source),
                }
            })?,
        })
    }

    /// Warnings about legacy patch forms.
    pub fn warnings(&self) -> impl Iterator<Item = &String> {
        self.config_patch
            .warnings
            .iter()
            .chain(&self.values_patch.warnings)
    }

    /// Applies the config patch, then the values patch, to `store`; returns what changed and
    /// whether the config changed (and must be saved).
    pub fn apply_patches(
        &self,
        store: &mut ValuesStore,
        hook: &HookRef,
    ) -> Result<(HookEffect, bool), HookError> {
        let config = store.apply_config_patch(hook, &self.config_patch)?;
        let effect = self.apply_values(store, hook, &config)?;
        Ok((effect, !config.config_change.is_empty()))
    }

    /// Applies the values patch to `store` after the config patch whose outcome is `config`;
    /// returns what both changed.
    pub fn apply_values(
        &self,
        store: &mut ValuesStore,
        hook: &HookRef,
        config: &ConfigPatchOutcome,
    ) -> Result<HookEffect, HookError> {
        let values = store.apply_values_patch(hook, &self.values_patch)?;
        Ok(HookEffect {
            values_changed: config.values_changed || values.values_changed,
            enabled_changed: !values.enabled_changed.is_empty()
                || !config.config_change.enabled_changed.is_empty(),
        })
    }
}
