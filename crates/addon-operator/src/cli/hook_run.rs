//! `addon-operator hook run HOOK`: runs one hook of a tree locally with the binding context of a
//! chosen binding and the tree's values (static files, config file, schema defaults), then prints
//! the context, the hook's patches and the values after them. Nothing is written anywhere.

use std::path::Path;
use std::process::ExitCode;

use addon_core::binding_context::{
    BindingContext, ContextBuilder, ContextDocument, ObjectAndFilterResult, Snapshots, render,
};
use addon_core::discovery::HookFile;
use addon_core::hook_config::{
    BindingType, FilteredObject, HookConfig, KubernetesBinding, WatchEvent,
};
use addon_core::monitor::MonitorCache;
use addon_core::names::ModuleName;
use addon_core::values::patch::HookRef;
use addon_core::values::store::{HookValues, ValuesStore};
use anyhow::Context as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use std::path::PathBuf;

use crate::cli::start::fail;
use crate::cli::support::LocalRunFlags;
use crate::cli::values::evaluate;
use crate::edges::exec::hook_run::{HookOutputs, HookRunSettings};
use crate::edges::exec::hooks::ProcessHooks;
use crate::edges::jq::{DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_TIMEOUT, JqRunner, SandboxSettings};
use crate::edges::tree::dirs::DirFlags;
use crate::runtime::edges::{HookExecutor, HookRequest};
use crate::runtime::hooks::ReadOutputs;
use addon_core::error::error_chain;

pub fn run_cli(args: &HookRunArgs) -> anyhow::Result<ExitCode> {
    crate::cli::support::block_on(run(args))?
}

async fn run(args: &HookRunArgs) -> anyhow::Result<ExitCode> {
    let what = "run the hook";
    let module = match &args.module {
        Some(name) => Some(ModuleName::new(name).map_err(|e| anyhow::anyhow!(e))?),
        None => None,
    };
    let tree = match crate::edges::tree::runnable::load(&args.dirs, args.local.hook_timeout).await {
        Ok(tree) => tree,
        Err(errors) => return Ok(fail(what, &errors)),
    };
    let Some(hook) = find_hook(&tree.found, module.as_ref(), &args.hook) else {
        let owner = module
            .as_ref()
            .map_or("the global hooks".into(), |m| format!("module '{m}'"));
        return Ok(fail(what, &[format!("no hook '{}' in {owner}", args.hook)]));
    };
    let Some(config) = tree.configs.get(&hook.config_key()) else {
        return Ok(fail(what, &[format!("hook '{}' has no config", args.hook)]));
    };
    let contexts = match contexts(config, &args.binding, args.objects.as_deref()).await {
        Ok(contexts) => contexts,
        Err(problem) => return Ok(fail(what, &[problem])),
    };
    let tmp = tempfile::tempdir().context("create a temporary directory")?;
    let settings = HookRunSettings {
        tmp_dir: tmp.path().to_path_buf(),
        timeout: args.local.hook_timeout,
        ..HookRunSettings::default()
    };
    let mut stage = evaluate(&tree.found, args.local.config_file.as_deref(), &settings).await;
    if !stage.errors.is_empty() {
        return Ok(fail(what, &stage.errors));
    }
    let values = match hook_values(&stage.store, module.as_ref(), &stage.enabled) {
        Ok(values) => values,
        Err(problem) => return Ok(fail(what, &[problem])),
    };
    let executor = ProcessHooks {
        settings,
        extra_env: Vec::new(),
        cancel: CancellationToken::new(),
    };
    let request = HookRequest {
        module: module.as_ref(),
        hook,
        binding: &args.binding,
        binding_context: ContextDocument::Contexts(&contexts),
        values: &values,
        webhook_response: false,
    };
    let outputs = match executor.run_hook(request).await {
        Ok(success) => success.outputs,
        Err(failure) => return Ok(fail(what, &[failure.message])),
    };
    let hook_ref = crate::runtime::hooks::hook_ref(module.as_ref(), &hook.name);
    match report(
        &mut stage.store,
        &hook_ref,
        module.as_ref(),
        &stage.enabled,
        &outputs,
    ) {
        Ok(mut report) => {
            report["bindingContext"] = render(&contexts);
            let text = serde_json::to_string_pretty(&report).unwrap_or_default();
            crate::cli::support::print_out(&format!("{text}\n"));
            Ok(ExitCode::SUCCESS)
        }
        Err(problem) => Ok(fail(what, &[problem])),
    }
}

pub(crate) fn find_hook<'a>(
    found: &'a addon_core::discovery::Discovered,
    module: Option<&ModuleName>,
    name: &str,
) -> Option<&'a HookFile> {
    let hooks = match module {
        None => &found.global.hooks,
        Some(m) => &found.modules.iter().find(|s| &s.name == m)?.hooks,
    };
    hooks.iter().find(|h| h.name.as_str() == name)
}

/// The binding context of `binding` for `hook run`: `objects` are the Synchronization objects
/// of a kubernetes binding.
async fn contexts(
    config: &HookConfig,
    binding: &str,
    objects: Option<&Path>,
) -> Result<Vec<BindingContext>, String> {
    let mut snapshots = Snapshots::new();
    if let (Some(path), Some(kube)) = (objects, config.kubernetes_binding(binding)) {
        snapshots.insert(kube.name.clone(), read_objects(path, kube).await?);
    }
    Ok(vec![binding_context(config, binding, &snapshots, None)?])
}

/// The context the operator gives `binding`: a lifecycle binding type, or a schedule or
/// kubernetes binding by name, with the current `snapshots` of the hook's kubernetes bindings.
/// A kubernetes binding gets a Synchronization of its snapshot, or the watch `event`.
pub(crate) fn binding_context(
    config: &HookConfig,
    binding: &str,
    snapshots: &Snapshots,
    event: Option<(WatchEvent, &ObjectAndFilterResult)>,
) -> Result<BindingContext, String> {
    let builder = ContextBuilder::new(config, snapshots);
    if let Some(kind) = BindingType::ORDERED
        .into_iter()
        .find(|t| t.as_str() == binding)
    {
        if config.order(kind).is_none() {
            return Err(format!("the hook has no '{binding}' binding"));
        }
        return Ok(builder.ordered(kind));
    }
    if let Some(schedule) = config.schedules.iter().find(|s| s.name == binding) {
        return Ok(builder.schedule(schedule));
    }
    let Some(kube) = config.kubernetes_binding(binding) else {
        let known: Vec<String> = config.binding_summary();
        return Err(format!(
            "the hook has no binding '{binding}' (it has: {})",
            known.join(", ")
        ));
    };
    Ok(match event {
        Some((event, object)) => builder.event(kube, event, object),
        None => {
            let items = snapshots.get(binding).map(Vec::as_slice).unwrap_or(&[]);
            builder.synchronization(kube, items)
        }
    })
}

/// The objects of `path` as the binding's monitor would hold them.
async fn read_objects(
    path: &Path,
    binding: &KubernetesBinding,
) -> Result<Vec<ObjectAndFilterResult>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let value = addon_core::yaml::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let Value::Array(objects) = value else {
        return Err(format!("{}: expected a list of objects", path.display()));
    };
    Ok(monitor_cache(binding, objects).await?.items())
}

/// A monitor's cache holding `objects` (filter results, full objects only when the binding
/// keeps them), filtered in the jq sandbox with the default bounds.
pub(crate) async fn monitor_cache(
    binding: &KubernetesBinding,
    objects: Vec<Value>,
) -> Result<MonitorCache, String> {
    let filtered = filter(binding, &objects).await?;
    let mut cache = MonitorCache::new(binding);
    cache.reset_filtered(objects.into_iter().zip(filtered).collect());
    Ok(cache)
}

/// `objects` as `binding` sees them, filtered in the jq sandbox with the default bounds. One
/// sandbox per thread serves the whole command (a `test` run filters for every case and event);
/// per thread, because the sandbox's pipes belong to the runtime that started it.
pub(crate) async fn filter(
    binding: &KubernetesBinding,
    objects: &[Value],
) -> Result<Vec<FilteredObject>, String> {
    thread_local! {
        static JQ: JqRunner = JqRunner::sandbox(SandboxSettings::for_current_exe(
            DEFAULT_TIMEOUT,
            DEFAULT_MEMORY_LIMIT_BYTES,
        ));
    }
    let jq = JQ.with(JqRunner::clone);
    let filtered = jq.filter_objects(binding, objects).await;
    filtered.map_err(|e| format!("jqFilter of binding '{}': {e}", binding.name))
}

pub(crate) fn hook_values(
    store: &ValuesStore,
    module: Option<&ModuleName>,
    enabled: &[ModuleName],
) -> Result<HookValues, String> {
    match module {
        None => Ok(store.global_hook_values()),
        Some(m) => store
            .module_hook_values(m, enabled)
            .map_err(|e| error_chain(&e)),
    }
}

/// Applies the hook's outputs to the store (as the runtime does) and describes them.
fn report(
    store: &mut ValuesStore,
    hook: &HookRef,
    module: Option<&ModuleName>,
    enabled: &[ModuleName],
    outputs: &HookOutputs,
) -> Result<Value, String> {
    let read = apply_outputs(store, hook, outputs)?;
    let after = hook_values(store, module, enabled)?;
    let warnings: Vec<&String> = read.warnings().collect();
    Ok(json!({
        "hook": hook.to_string(),
        "configValuesPatch": read.config_patch.ops,
        "valuesPatch": read.values_patch.ops,
        "kubernetesOperations": read.kube_ops.len(),
        "metricOperations": read.metric_ops.len(),
        "configValues": after.config_values,
        "values": after.values,
        "warnings": warnings,
    }))
}

/// Reads a successful run's outputs and applies its config and values patches to `store`, as
/// the runtime does.
pub(crate) fn apply_outputs(
    store: &mut ValuesStore,
    hook: &HookRef,
    outputs: &HookOutputs,
) -> Result<ReadOutputs, String> {
    let read = ReadOutputs::parse(hook, outputs).map_err(|e| error_chain(&e))?;
    read.apply_patches(store, hook)
        .map_err(|e| error_chain(&e))?;
    Ok(read)
}

#[derive(Debug, Clone, clap::Args)]
pub struct HookRunArgs {
    /// The hook's name as `check` shows it (e.g. `hooks/prepare-greeting`)
    pub hook: String,
    /// The hook's module (kebab-case); without it the hook is a global hook
    #[arg(long)]
    pub module: Option<String>,
    /// The binding to run: onStartup, beforeAll, afterAll, beforeHelm, afterHelm,
    /// beforeDeleteHelm, afterDeleteHelm, or the name of a schedule or kubernetes binding
    #[arg(long, default_value = "onStartup")]
    pub binding: String,
    /// For a kubernetes binding: a JSON or YAML list of objects for its Synchronization context
    #[arg(long, value_name = "FILE")]
    pub objects: Option<PathBuf>,
    #[command(flatten)]
    pub dirs: DirFlags,
    #[command(flatten)]
    pub local: LocalRunFlags,
}
