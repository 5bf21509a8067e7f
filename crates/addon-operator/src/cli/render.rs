//! `addon-operator module render NAME`: runs the tree locally the way the operator would (global
//! hooks, discovery, the modules' hooks; no cluster, the config never written) until the first
//! 'reload all modules' is done, then prints the manifests Helm would install for the module.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use addon_core::config::Config;
use addon_core::names::ModuleName;
use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use std::path::PathBuf;

use crate::cli::progress::Progress;
use crate::cli::start::fail;
use crate::cli::support::{LocalRunFlags, parse_duration};
use crate::edges::config::memory::MemoryConfig;
use crate::edges::exec::hook_run::HookRunSettings;
use crate::edges::exec::hooks::ProcessHooks;
use crate::edges::helm::template::TemplateHelm;
use crate::edges::kube::no_cluster::NoCluster;
use crate::edges::tree::dirs::DirFlags;
use crate::runtime::edges::Edges;
use crate::runtime::{Runtime, RuntimeHandle, RuntimeSettings};
use addon_core::error::error_chain;

/// How often the run is checked for its end.
const POLL: Duration = Duration::from_millis(50);

pub fn run_cli(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let progress = Progress::on_stderr("module render");
    let rendered = crate::cli::support::block_on(render(args, &progress));
    progress.finish();
    rendered?
}

async fn render(args: &RenderArgs, progress: &Progress) -> anyhow::Result<ExitCode> {
    let module = ModuleName::new(&args.module).map_err(|e| anyhow::anyhow!(e))?;
    progress.phase("loading the tree (--config of every hook)");
    let tree = match crate::edges::tree::runnable::load(&args.dirs, args.local.hook_timeout).await {
        Ok(tree) => tree,
        Err(errors) => return Ok(fail("render", &errors)),
    };
    let Some(source) = tree.found.modules.iter().find(|m| m.name == module) else {
        return Ok(fail(
            "render",
            &[format!("module '{module}' is not in the tree")],
        ));
    };
    if !source.has_chart {
        return Ok(fail(
            "render",
            &[format!(
                "module '{module}' has no chart (no Chart.yaml or templates/)"
            )],
        ));
    }
    let tmp = tempfile::tempdir().context("create a temporary directory")?;
    let (edges, helm) = local_edges(args, tmp.path())?;
    let (_kube_tx, kube_events) = crate::runtime::edges::kube_event_channel();
    let built = Runtime::build(
        &tree.found,
        &tree.configs,
        edges,
        kube_events,
        RuntimeSettings::default(),
    );
    let runtime = match built.await {
        Ok(runtime) => runtime,
        Err(e) => return Ok(fail("render", &e.errors)),
    };
    let handle = runtime.handle();
    let stop = CancellationToken::new();
    let running = tokio::spawn(runtime.run(stop.clone()));
    let outcome = wait_for_converge(&handle, args.timeout, progress).await;
    stop.cancel();
    let _ = running.await;
    if let Err(problem) = outcome {
        return Ok(fail("render", &[problem]));
    }
    if !handle.enabled_modules().contains(&module) {
        let why = match handle.disabled_reasons().get(module.as_str()) {
            Some(reason) => format!(" (its enabled script says: {reason})"),
            None => String::new(),
        };
        return Ok(fail(
            "render",
            &[format!(
                "module '{module}' is disabled with this tree and config{why}"
            )],
        ));
    }
    match helm.manifest(module.as_str()) {
        Some(manifest) => {
            crate::cli::support::print_out(&manifest);
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(fail(
            "render",
            &[format!("module '{module}' was not rendered")],
        )),
    }
}

/// Local-mode edges (no cluster, config in memory) and the Helm that keeps rendered manifests.
fn local_edges(args: &RenderArgs, tmp: &Path) -> anyhow::Result<(Edges, Arc<TemplateHelm>)> {
    let helm = Arc::new(TemplateHelm::new(
        args.helm_binary.clone(),
        args.namespace.clone(),
        tmp.to_path_buf(),
    ));
    let hooks = ProcessHooks {
        settings: HookRunSettings {
            tmp_dir: tmp.to_path_buf(),
            timeout: args.local.hook_timeout,
            ..HookRunSettings::default()
        },
        extra_env: Vec::new(),
        cancel: CancellationToken::new(),
    };
    let edges = Edges {
        hooks: Arc::new(hooks),
        helm: helm.clone(),
        kube: Arc::new(NoCluster),
        objects: Arc::new(NoCluster),
        config: Arc::new(MemoryConfig::new(read_config(args)?)),
        files: Arc::new(crate::edges::files::DiskFiles),
        report: Arc::new(crate::runtime::edges::NoReports),
    };
    Ok((edges, helm))
}

fn read_config(args: &RenderArgs) -> anyhow::Result<Config> {
    let Some(path) = &args.local.config_file else {
        return Ok(Config::empty());
    };
    let text = crate::edges::config::read_text(path)?;
    Config::from_file(&path.display().to_string(), &text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), error_chain(&e)))
}

/// Waits until the first converge is done and nothing is queued; the first failing task (its
/// error included) ends the wait at once, since render does not retry.
async fn wait_for_converge(
    handle: &RuntimeHandle,
    timeout: Duration,
    progress: &Progress,
) -> Result<(), String> {
    let started = tokio::time::Instant::now();
    loop {
        let queues = handle.queues_json();
        let head = queues["active"][0]["tasks"][0]["description"].as_str();
        progress.phase(format!("running the tree: {}", head.unwrap_or("idle")));
        if let Some(failed) = handle.first_failure() {
            return Err(format!("a task failed: {failed}"));
        }
        if handle.first_converge_done() && handle.is_idle() {
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(format!(
                "the first 'reload all modules' did not finish within {timeout:?}:\n{}",
                handle.queues_text()
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct RenderArgs {
    /// The module (kebab-case name)
    pub module: String,
    #[command(flatten)]
    pub dirs: DirFlags,
    #[command(flatten)]
    pub local: LocalRunFlags,
    /// Give up when the first 'reload all modules' has not finished by then
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Namespace passed to helm template
    #[arg(long, env = "ADDON_OPERATOR_NAMESPACE", default_value = "")]
    pub namespace: String,
    /// The helm binary (3.x or 4.x)
    #[arg(long, env = "HELM_BINARY", default_value = "helm")]
    pub helm_binary: PathBuf,
}
