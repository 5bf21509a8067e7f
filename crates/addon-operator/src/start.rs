//! `addon-operator start`: loads the tree, asks every hook for its config, builds the runtime
//! with the real edges and runs it until SIGINT or SIGTERM.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use addon_core::config::Config;
use addon_core::queue::Backoff;
use anyhow::Context as _;
use tokio_util::sync::CancellationToken;

use crate::check::configs::HookConfigs;
use crate::check::error_chain;
use crate::cli::StartArgs;
use crate::config_file::FileConfigStore;
use crate::dirs;
use crate::exec::hook_run::HookRunSettings;
use crate::helm::template::TemplateHelm;
use crate::hook_configs::ConfigRunOptions;
use crate::loader::{self, LoaderConfig};
use crate::runtime::edges::{
    ConfigBackend, Edges, FileConfig, MemoryConfig, NoCluster, ProcessHooks,
};
use crate::runtime::{Runtime, RuntimeSettings};

/// How long file edits are gathered before the config is re-read.
const CONFIG_DEBOUNCE: Duration = Duration::from_millis(200);

pub fn run_cli(args: &StartArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: &StartArgs) -> anyhow::Result<ExitCode> {
    let dirs = dirs::resolve(&args.dirs, &|name| std::env::var(name).ok());
    let (found, load_errors) = loader::load(&LoaderConfig {
        modules_dirs: dirs.modules_dirs,
        global_hooks_dir: dirs.global_hooks_dir,
        unnumbered_order: dirs.unnumbered_order,
    });
    for warning in &found.warnings {
        tracing::warn!("{warning}");
    }
    let mut errors: Vec<String> = load_errors.iter().map(|e| error_chain(e)).collect();
    let configs = HookConfigs::fetch(&found, &ConfigRunOptions::new(args.hook_timeout)).await;
    errors.extend(configs.errors.iter().cloned());
    if !errors.is_empty() {
        return Ok(fail(&errors));
    }
    std::fs::create_dir_all(&args.tmp_dir)
        .with_context(|| format!("create the tmp dir {}", args.tmp_dir.display()))?;
    let cancel_hooks = CancellationToken::new();
    let edges = edges(args, cancel_hooks.clone()).await?;
    let (_kube_tx, kube_events) = tokio::sync::mpsc::unbounded_channel();
    let settings = RuntimeSettings {
        backoff: Backoff {
            initial: args.retry_initial_delay,
            max: args.retry_max_delay,
            factor: 2,
        },
        record_history: false,
    };
    let by_path: BTreeMap<_, _> = configs.by_path.into_iter().collect();
    let runtime = match Runtime::build(&found, &by_path, edges, kube_events, settings).await {
        Ok(runtime) => runtime,
        Err(e) => return Ok(fail(&e.errors)),
    };
    tracing::info!(
        global_hooks = found.global.hooks.len(),
        modules = found.modules.len(),
        "addon-operator started"
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(wait_for_signal(shutdown.clone(), cancel_hooks));
    runtime.run(shutdown).await;
    tracing::info!("addon-operator stopped");
    Ok(ExitCode::SUCCESS)
}

fn fail(errors: &[String]) -> ExitCode {
    eprintln!("addon-operator: cannot start, {} problem(s):", errors.len());
    for e in errors {
        eprintln!("  {e}");
    }
    ExitCode::FAILURE
}

async fn edges(args: &StartArgs, cancel_hooks: CancellationToken) -> anyhow::Result<Edges> {
    let config: Arc<dyn ConfigBackend> = match &args.config_file {
        Some(path) => {
            let store = FileConfigStore::open(path, CONFIG_DEBOUNCE)
                .await
                .with_context(|| format!("open the config file {}", path.display()))?;
            Arc::new(FileConfig::new(store))
        }
        None => Arc::new(MemoryConfig::new(Config::empty())),
    };
    let hooks = ProcessHooks {
        settings: HookRunSettings {
            tmp_dir: args.tmp_dir.clone(),
            keep_tmp_files: args.debug_keep_tmp_files,
            timeout: args.hook_timeout,
            kill_grace: args.hook_kill_grace,
        },
        extra_env: Vec::new(),
        cancel: cancel_hooks,
    };
    let helm = TemplateHelm::new(
        args.helm_binary.clone(),
        args.namespace.clone(),
        args.tmp_dir.clone(),
    );
    Ok(Edges {
        hooks: Arc::new(hooks),
        helm: Arc::new(helm),
        kube: Arc::new(NoCluster),
        objects: Arc::new(NoCluster),
        config,
    })
}

/// On SIGINT or SIGTERM: stop taking tasks and send SIGTERM to running hooks (SIGKILL follows
/// after the grace period).
async fn wait_for_signal(shutdown: CancellationToken, cancel_hooks: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM/SIGINT");
        return;
    };
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    tracing::info!(signal = name, "shutting down");
    shutdown.cancel();
    cancel_hooks.cancel();
}
