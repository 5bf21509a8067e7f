//! `addon-operator hook run HOOK`: runs one hook of a tree locally with the binding context of a
//! chosen binding and the tree's values (static files, config file, schema defaults), then prints
//! the context, the hook's patches and the values after them. Nothing is written anywhere.

use std::path::Path;
use std::process::ExitCode;

use addon_core::binding_context::{
    BindingContext, ContextBuilder, ContextDocument, ObjectAndFilterResult, Snapshots, render,
};
use addon_core::discovery::HookFile;
use addon_core::hook_config::{BindingType, HookConfig};
use addon_core::monitor::MonitorCache;
use addon_core::names::ModuleName;
use addon_core::values::patch::HookRef;
use addon_core::values::store::{HookValues, ValuesStore};
use anyhow::Context as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use std::path::PathBuf;

use crate::cli::check::values::evaluate;
use crate::cli::start::fail;
use crate::cli::support::LocalRunFlags;
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

fn find_hook<'a>(
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

/// The binding context of `binding`: a lifecycle binding type, or a schedule or kubernetes
/// binding by name (`objects` are the Synchronization objects of a kubernetes binding).
async fn contexts(
    config: &HookConfig,
    binding: &str,
    objects: Option<&Path>,
) -> Result<Vec<BindingContext>, String> {
    let empty = Snapshots::new();
    let builder = ContextBuilder::new(config, &empty);
    if let Some(kind) = BindingType::ORDERED
        .into_iter()
        .find(|t| t.as_str() == binding)
    {
        if config.order(kind).is_none() {
            return Err(format!("the hook has no '{binding}' binding"));
        }
        return Ok(vec![builder.ordered(kind)]);
    }
    if let Some(schedule) = config.schedules.iter().find(|s| s.name == binding) {
        return Ok(vec![builder.schedule(schedule)]);
    }
    let Some(kube) = config.kubernetes.iter().find(|k| k.name == binding) else {
        let known: Vec<String> = config.binding_summary();
        return Err(format!(
            "the hook has no binding '{binding}' (it has: {})",
            known.join(", ")
        ));
    };
    let items = match objects {
        Some(path) => read_objects(path, kube).await?,
        None => Vec::new(),
    };
    let mut snapshots = Snapshots::new();
    snapshots.insert(kube.name.clone(), items.clone());
    let ctx = ContextBuilder::new(config, &snapshots).synchronization(kube, &items);
    Ok(vec![ctx])
}

/// The objects of `path` as the binding's monitor would hold them (filter results, full objects
/// only when the binding keeps them), filtered in the jq sandbox with the default bounds.
async fn read_objects(
    path: &Path,
    binding: &addon_core::hook_config::KubernetesBinding,
) -> Result<Vec<ObjectAndFilterResult>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let value = addon_core::yaml::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let Value::Array(objects) = value else {
        return Err(format!("{}: expected a list of objects", path.display()));
    };
    let jq = JqRunner::sandbox(SandboxSettings::for_current_exe(
        DEFAULT_TIMEOUT,
        DEFAULT_MEMORY_LIMIT_BYTES,
    ));
    let filtered = jq.filter_objects(binding, &objects).await;
    let filtered = filtered.map_err(|e| e.to_string())?;
    let mut cache = MonitorCache::new(binding);
    cache.reset_filtered(objects.into_iter().zip(filtered).collect());
    Ok(cache.items())
}

fn hook_values(
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
    let read = ReadOutputs::parse(hook, outputs).map_err(|e| error_chain(&e))?;
    read.apply_patches(store, hook)
        .map_err(|e| error_chain(&e))?;
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
