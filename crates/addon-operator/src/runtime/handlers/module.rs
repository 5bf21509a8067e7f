//! Module tasks: run (CRDs of `crds/`, onStartup and Synchronization on startup, beforeHelm,
//! Helm, afterHelm), delete (beforeDeleteHelm, uninstall, afterDeleteHelm) and purge of releases
//! without a module.

use std::path::{Path, PathBuf};

use addon_core::binding_context::{ContextBuilder, Snapshots};
use addon_core::error::error_chain;
use addon_core::hook_config::BindingType;
use addon_core::hook_output::kube_patch::{CreateMode, KubeOperation, ObjectRef};
use addon_core::lifecycle::{self, DeletePhase, RunPhase};
use addon_core::names::{ModuleName, QueueName};
use addon_core::values::patch::Scope;

use super::global::start_monitor;
use std::sync::PoisonError;

use crate::runtime::Shared;
use crate::runtime::admin;
use crate::runtime::decisions;
use crate::runtime::edges::MonitorKey;
use crate::runtime::edges::helm::UpgradeRequest;
use crate::runtime::error::{HookError, ModuleError, TaskError};
use crate::runtime::hooks::{self, RunContext};
use crate::runtime::metrics::HelmOperation;
use crate::runtime::state::{
    HookDef, ModuleState, PendingHooks, hooks_by_order, hooks_with_kubernetes,
};
use crate::runtime::task::{HookTask, Outcome, Task};

/// Runs a module as one task from `queue` (`main`, or a parallel lane of a group), retried as a
/// whole on any failure.
pub async fn run(
    shared: &Shared,
    queue: &QueueName,
    module: &ModuleName,
    startup: bool,
    reason: &str,
) -> Outcome {
    let started = tokio::time::Instant::now();
    let outcome = run_steps(shared, queue, module, startup, reason).await;
    let success = matches!(outcome, Outcome::Done { .. });
    shared
        .metrics
        .module_run(module.as_str(), reason, started.elapsed(), success);
    if !success && queue.is_parallel() && disabled_by_config(shared, module) {
        tracing::info!(module = %module, "module run failed after the config disabled the module: dropped from its parallel run, not retried");
        return Outcome::done();
    }
    outcome
}

/// Whether the module's `*Enabled` flags (static values and config) disable it now.
fn disabled_by_config(shared: &Shared, module: &ModuleName) -> bool {
    let st = shared.lock();
    st.store
        .flag_layers(module)
        .is_ok_and(|flags| !flags.enabled())
}

async fn run_steps(
    shared: &Shared,
    queue: &QueueName,
    module: &ModuleName,
    startup: bool,
    reason: &str,
) -> Outcome {
    let Some((state, pending)) = take_state(shared, module, startup) else {
        return Outcome::Failed(unknown(module));
    };
    let enabled = shared.lock().enabled.contains(module) && !state.removed;
    let has_chart = state.source.has_chart;
    let starts = Starting::of(&state, startup, &pending);
    let phases = lifecycle::module_run_phases(enabled, starts.is_some(), has_chart);
    let Some(phases) = phases else {
        tracing::info!(module = %module, "module is disabled now or left the tree; its run is skipped");
        return Outcome::done();
    };
    admin::running(shared, module);
    let upgraded = std::sync::Mutex::new(None);
    let steps = async {
        let mut changed = false;
        for phase in phases {
            let run = PhaseRun {
                queue,
                module,
                state: &state,
                starts: starts.as_ref(),
                startup,
                reason,
                upgraded: &upgraded,
            };
            changed |= run_phase(shared, run, phase).await?;
        }
        Ok::<bool, ModuleError>(changed)
    };
    match steps.await {
        Err(source) => {
            if let Some(m) = shared.lock().modules.get_mut(module) {
                m.pending.merge(pending);
            }
            Outcome::Failed(failed(module, source))
        }
        Ok(changed) => {
            let upgraded = upgraded
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            admin::module_ready(shared, module, upgraded);
            let decision = lifecycle::module_run_finished(module, changed, queue.is_parallel());
            decisions::outcome(shared, shared.lock(), decision)
        }
    }
}

/// The module's state for a run, and the hooks a reload left for it to start (taken: a run
/// that fails gives them back). A startup run starts every hook: nothing is left pending.
fn take_state(
    shared: &Shared,
    module: &ModuleName,
    startup: bool,
) -> Option<(ModuleState, PendingHooks)> {
    let mut st = shared.lock();
    let m = st.modules.get_mut(module)?;
    let pending = std::mem::take(&mut m.pending);
    let state = m.clone();
    Some((
        state,
        if startup {
            PendingHooks::default()
        } else {
            pending
        },
    ))
}

/// The hooks a run starts: every hook on the module's startup, else the hooks a reload added
/// (onStartup) or rebound (bindings). `None`: the run starts nothing.
struct Starting {
    on_startup: Vec<HookDef>,
    bindings: Vec<HookDef>,
    /// The module starts: its schedules start as a whole.
    all: bool,
}

impl Starting {
    fn of(state: &ModuleState, startup: bool, pending: &PendingHooks) -> Option<Self> {
        if startup {
            let all = state.hooks.to_vec();
            return Some(Self {
                on_startup: all.clone(),
                bindings: all,
                all: true,
            });
        }
        if pending.is_empty() {
            return None;
        }
        let pick = |names: &std::collections::BTreeSet<addon_core::names::HookName>| {
            (state.hooks.iter())
                .filter(|h| names.contains(h.name()))
                .cloned()
                .collect::<Vec<_>>()
        };
        Some(Self {
            on_startup: pick(&pending.first_run),
            bindings: pick(&pending.bind),
            all: false,
        })
    }
}

/// One phase of a module run and what it runs on.
#[derive(Clone, Copy)]
struct PhaseRun<'a> {
    queue: &'a QueueName,
    module: &'a ModuleName,
    state: &'a ModuleState,
    starts: Option<&'a Starting>,
    startup: bool,
    reason: &'a str,
    /// Set when Helm installed or upgraded the release (with its revision when known).
    upgraded: &'a std::sync::Mutex<Option<Option<u64>>>,
}

/// Runs one phase of a module run; `true` when afterHelm hooks changed the module's values.
async fn run_phase(
    shared: &Shared,
    run: PhaseRun<'_>,
    phase: RunPhase,
) -> Result<bool, ModuleError> {
    let PhaseRun {
        queue,
        module,
        state,
        starts,
        startup,
        reason,
        upgraded,
    } = run;
    let hooks = &state.hooks;
    let none = Vec::new();
    let (on_startup, bindings) = starts.map_or((&none, &none), |s| (&s.on_startup, &s.bindings));
    match phase {
        RunPhase::EnsureCrds => ensure_crds(shared, module, &state.source.path, startup).await?,
        RunPhase::OnStartup => {
            let at = lifecycle_run(queue);
            run_lifecycle(shared, at, module, on_startup, BindingType::OnStartup).await?
        }
        RunPhase::Synchronize => synchronize(shared, queue, module, bindings).await?,
        RunPhase::StartSchedules => match starts {
            Some(s) if !s.all => shared.start_schedules(Some(module), &s.bindings),
            _ => shared.start_module_schedules(module),
        },
        RunPhase::BeforeHelm => {
            let at = lifecycle_run(queue);
            run_lifecycle(shared, at, module, hooks, BindingType::BeforeHelm).await?
        }
        RunPhase::Helm => {
            let helm_started = tokio::time::Instant::now();
            if let Some(revision) = helm_upgrade(shared, module, &state.source.path, reason).await?
            {
                *upgraded.lock().unwrap_or_else(PoisonError::into_inner) = Some(revision);
            }
            let elapsed = helm_started.elapsed();
            shared.metrics.module_helm(module.as_str(), reason, elapsed);
        }
        RunPhase::AfterHelm => {
            let before = module_checksum(shared, module);
            let at = lifecycle_run(queue);
            run_lifecycle(shared, at, module, hooks, BindingType::AfterHelm).await?;
            return Ok(module_checksum(shared, module) != before);
        }
    }
    Ok(false)
}

/// Creates or updates the CRDs of the module's `crds/` before its kubernetes bindings start and
/// its release runs (upstream's ModuleEnsureCRDs), on the module's first run and whenever the
/// files changed.
async fn ensure_crds(
    shared: &Shared,
    module: &ModuleName,
    dir: &Path,
    startup: bool,
) -> Result<(), ModuleError> {
    let dir = dir.to_path_buf();
    let filters = shared.lock().crd_filters.clone();
    let files = shared.edges.files.clone();
    let read = tokio::task::spawn_blocking(move || files.read_crds(&dir, &filters));
    let crds = read.await.map_err(ModuleError::ReadCrdsTask)??;
    let Some(crds) = crds else {
        return Ok(());
    };
    let applied = shared.lock().crds_applied.get(module) == Some(&crds.checksum);
    if applied && !startup {
        return Ok(());
    }
    let names: Vec<String> = crds
        .objects
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let api_versions: Vec<String> = crds.objects.iter().flat_map(crd_api_versions).collect();
    let labels = shared.lock().crd_extra_labels.clone();
    let ops: Vec<KubeOperation> = crds
        .objects
        .into_iter()
        .map(|crd| with_labels(crd, &labels))
        .flat_map(crd_operations)
        .collect();
    shared.lock().record(|| format!("ensure crds {module}"));
    shared
        .edges
        .objects
        .apply(&ops)
        .await
        .map_err(ModuleError::ApplyCrds)?;
    shared
        .edges
        .objects
        .wait_crds_established(&names)
        .await
        .map_err(ModuleError::WaitCrds)?;
    let mut st = shared.lock();
    st.crds_applied.insert(module.clone(), crds.checksum);
    st.store.add_discovered_api_versions(api_versions);
    Ok(())
}

/// The CRD with `labels` (`--crd-extra-labels`) over its own, as upstream's installer overlays
/// them.
fn with_labels(
    mut crd: serde_json::Value,
    labels: &std::collections::BTreeMap<String, String>,
) -> serde_json::Value {
    if labels.is_empty() || crd.get("metadata").is_none_or(|m| !m.is_object()) {
        return crd;
    }
    let labels = labels.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    addon_core::labels::overlay_labels(&mut crd, labels);
    crd
}

/// `group/version/Kind` of each version of a CRD, as upstream lists them in
/// `global.discovery.apiVersions`.
fn crd_api_versions(crd: &serde_json::Value) -> Vec<String> {
    let spec = &crd["spec"];
    let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
        return Vec::new();
    };
    spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .map(|version| format!("{group}/{version}/{kind}"))
        .collect()
}

/// Creates a CRD of `crds/` when it is missing, else merge-patches only what the file sets (its
/// `spec` fields, labels and annotations): a `conversion` block, labels or annotations that other
/// tools added to an existing CRD (a CA bundle injector, say) are kept, as the Go operator keeps them.
fn crd_operations(object: serde_json::Value) -> [KubeOperation; 2] {
    let meta = &object["metadata"];
    let mut patch = serde_json::json!({ "spec": object["spec"].clone() });
    for key in ["labels", "annotations"] {
        if meta[key].is_object() {
            patch["metadata"][key] = meta[key].clone();
        }
    }
    let target = ObjectRef {
        api_version: object["apiVersion"].as_str().map(str::to_string),
        kind: "CustomResourceDefinition".to_string(),
        namespace: None,
        name: meta["name"].as_str().unwrap_or_default().to_string(),
        subresource: None,
    };
    let create = KubeOperation::Create {
        mode: CreateMode::CreateIfNotExists,
        object,
        subresource: None,
    };
    let update = KubeOperation::MergePatch {
        target,
        patch,
        ignore_missing_object: false,
    };
    [create, update]
}

fn module_checksum(shared: &Shared, module: &ModuleName) -> String {
    shared
        .lock()
        .store
        .checksum(&Scope::Module(module.clone()))
        .unwrap_or_default()
}

/// A lifecycle hook run of a module task taken from `queue`.
fn lifecycle_run(queue: &QueueName) -> RunContext<'_> {
    RunContext {
        queue,
        allow_failure: false,
    }
}

/// Runs the module's hooks that have `binding`, by ORDER, one after another.
async fn run_lifecycle(
    shared: &Shared,
    at: RunContext<'_>,
    module: &ModuleName,
    hooks: &[HookDef],
    binding: BindingType,
) -> Result<(), HookError> {
    for def in hooks_by_order(hooks, binding) {
        let snapshots = Snapshots::new();
        let ctx = ContextBuilder::new(&def.config, &snapshots).ordered(binding);
        hooks::run(shared, at, Some(module), def.name(), binding, vec![ctx]).await?;
    }
    Ok(())
}

/// Starts every kubernetes binding of the module's hooks (hooks by name, bindings in order) and
/// runs the Synchronization of each.
async fn synchronize(
    shared: &Shared,
    queue: &QueueName,
    module: &ModuleName,
    hooks: &[HookDef],
) -> Result<(), ModuleError> {
    for def in hooks_with_kubernetes(hooks) {
        for index in 0..def.config.kubernetes.len() {
            let key = MonitorKey {
                module: Some(module.clone()),
                hook: def.name().clone(),
                binding: index,
            };
            let Some(Task::Hook(task)) = start_monitor(shared, &key).await? else {
                continue;
            };
            run_synchronization(shared, queue, &key, task).await?;
        }
    }
    Ok(())
}

async fn run_synchronization(
    shared: &Shared,
    queue: &QueueName,
    key: &MonitorKey,
    task: HookTask,
) -> Result<(), HookError> {
    let at = RunContext {
        queue,
        allow_failure: task.allow_failure,
    };
    let result = hooks::run(
        shared,
        at,
        key.module.as_ref(),
        &task.hook,
        task.binding,
        task.contexts,
    )
    .await;
    match result {
        Ok(_) => {}
        Err(error) if task.allow_failure => {
            tracing::warn!(hook = %task.hook, error = %error_chain(&error), "Synchronization failed, but it is allowed to fail");
        }
        Err(error) => return Err(error),
    }
    if let Some(monitor) = shared.lock().monitors.get_mut(key) {
        monitor.synced = true;
    }
    Ok(())
}

/// Checks the Helm values (with `x-required-for-helm`) and runs `helm upgrade --install` when the
/// values or the chart changed or Helm says so; `Some` (with the release's revision when Helm
/// can tell) when it ran.
async fn helm_upgrade(
    shared: &Shared,
    module: &ModuleName,
    chart: &Path,
    activation: &str,
) -> Result<Option<Option<u64>>, ModuleError> {
    let request = upgrade_request(shared, module, chart).await?;
    if request.maintenance && shared.lock().maintenance_labelled.contains(module) {
        tracing::info!(module = %module, "module is in maintenance (NoResourceReconciliation): helm upgrade skipped");
        shared
            .lock()
            .record(|| format!("helm skipped {module} (maintenance)"));
        return Ok(None);
    }
    let helm = &shared.edges.helm;
    let timed = |operation, started: tokio::time::Instant| {
        let elapsed = started.elapsed();
        shared
            .metrics
            .helm_operation(module.as_str(), activation, operation, elapsed);
    };
    let started = tokio::time::Instant::now();
    let upgrade = helm.should_upgrade(&request).await?;
    timed(HelmOperation::CheckUpgrade, started);
    let mut revision = None;
    if upgrade {
        shared.lock().record(|| format!("helm upgrade {module}"));
        // the upgrade changes the release's objects on purpose: no drift until it is re-read
        shared.guard.pause(module);
        let started = tokio::time::Instant::now();
        helm.upgrade(&request).await?;
        timed(HelmOperation::Upgrade, started);
        shared.guard.track(module);
        let known = helm.revision(&request.release).await;
        let known = known.inspect_err(|e| {
            tracing::debug!(module = %module, error = %error_chain(e), "release revision not known");
        });
        revision = Some(known.ok().flatten());
    } else {
        shared.guard.ensure(module);
    }
    // as upstream: once the release carries the maintenance label, later runs leave it alone
    let mut st = shared.lock();
    if request.maintenance {
        st.maintenance_labelled.insert(module.clone());
    } else {
        st.maintenance_labelled.remove(module);
    }
    Ok(revision)
}

/// What Helm gets for `module` now: its Helm values (checked with `x-required-for-helm`) and the
/// checksum of the values and of every file Helm loads for the chart (read off the executor).
pub async fn upgrade_request(
    shared: &Shared,
    module: &ModuleName,
    chart: &Path,
) -> Result<UpgradeRequest, ModuleError> {
    let (values, maintenance) = {
        let st = shared.lock();
        let maintenance = st.store.config().module_in_maintenance(module);
        (st.store.helm_values(module)?, maintenance)
    };
    let values_yaml = addon_core::yaml::to_string(&values)?;
    let mut checksum = chart_checksum(shared, chart.to_path_buf(), values_yaml.clone()).await?;
    if maintenance {
        // entering and leaving maintenance both change what is installed (the labels)
        checksum.push_str("-maintenance");
    }
    Ok(UpgradeRequest {
        release: module.to_string(),
        chart_dir: chart.to_path_buf(),
        checksum,
        values_yaml,
        maintenance,
    })
}

/// [`Files::chart_checksum`](crate::runtime::edges::Files::chart_checksum) of the values and
/// the chart, on the blocking pool.
async fn chart_checksum(
    shared: &Shared,
    chart: PathBuf,
    values_yaml: String,
) -> Result<String, ModuleError> {
    let files = shared.edges.files.clone();
    let digest =
        tokio::task::spawn_blocking(move || files.chart_checksum(&chart, values_yaml.as_bytes()));
    let digest = digest.await.map_err(ModuleError::ChartChecksumTask)?;
    digest.map_err(ModuleError::ChartChecksum)
}

fn unknown(module: &ModuleName) -> TaskError {
    TaskError::UnknownModule {
        module: module.clone(),
    }
}

fn failed(module: &ModuleName, source: ModuleError) -> TaskError {
    TaskError::Module {
        module: module.clone(),
        source,
    }
}

/// Deletes a disabled module: its release (with beforeDeleteHelm first), then afterDeleteHelm
/// hooks; its watches and schedules stop and its values patches are forgotten.
pub async fn delete(shared: &Shared, module: &ModuleName) -> Outcome {
    let Some(state) = shared.lock().module(module).cloned() else {
        return Outcome::Failed(unknown(module));
    };
    admin::running(shared, module);
    let steps = async {
        let release_exists = state.source.has_chart && {
            let releases = shared.edges.helm.releases().await?;
            releases.iter().any(|r| r == module.as_str())
        };
        for phase in lifecycle::module_delete_phases(release_exists) {
            delete_phase(shared, module, &state.hooks, phase).await?;
        }
        Ok::<bool, ModuleError>(release_exists)
    };
    let result = steps.await;
    shared
        .metrics
        .module_delete(module.as_str(), result.is_ok());
    match result {
        Err(source) => return Outcome::Failed(failed(module, source)),
        Ok(had_release) => admin::module_deleted(shared, module, had_release),
    }
    let decision = lifecycle::module_delete_finished(module);
    decisions::outcome(shared, shared.lock(), decision)
}

async fn delete_phase(
    shared: &Shared,
    module: &ModuleName,
    hooks: &[HookDef],
    phase: DeletePhase,
) -> Result<(), ModuleError> {
    let main = QueueName::main();
    match phase {
        DeletePhase::BeforeDeleteHelm => {
            let at = lifecycle_run(&main);
            run_lifecycle(shared, at, module, hooks, BindingType::BeforeDeleteHelm).await?
        }
        DeletePhase::Uninstall => {
            shared.lock().record(|| format!("helm uninstall {module}"));
            shared.guard.forget(module);
            shared.edges.helm.uninstall(module.as_str()).await?
        }
        DeletePhase::AfterDeleteHelm => {
            let at = lifecycle_run(&main);
            run_lifecycle(shared, at, module, hooks, BindingType::AfterDeleteHelm).await?
        }
    }
    Ok(())
}

/// Uninstalls a release that belongs to no module; a failure is only logged.
pub async fn purge(shared: &Shared, release: &str) -> Outcome {
    shared.lock().record(|| format!("helm uninstall {release}"));
    if let Err(e) = shared.edges.helm.uninstall(release).await {
        tracing::error!(release, error = %error_chain(&e), "purge of a release without a module failed");
    }
    Outcome::done()
}
