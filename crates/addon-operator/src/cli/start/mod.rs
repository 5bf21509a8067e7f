//! `addon-operator start`: loads the tree, asks every hook for its config, chooses the cluster
//! (none, the embedded emulator, or a kubeconfig / in-cluster), builds the runtime with the real
//! edges, serves metrics and the debug API, and runs until SIGINT or SIGTERM.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use addon_core::config::Config;
use addon_core::hook_output::kube_patch::KubeOperation;
use addon_core::queue::Backoff;
use anyhow::Context as _;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cli::support::parse_duration;
use crate::cli::webhook_flags::WithoutCertificate;
use crate::edges::config::FileConfigStore;
use crate::edges::config::backend::FileConfig;
use crate::edges::config::memory::MemoryConfig;
use crate::edges::exec::hook_run::HookRunSettings;
use crate::edges::exec::hooks::ProcessHooks;
use crate::edges::exec::inherited_env;
use crate::edges::exec::tmp_pool::TmpPool;
use crate::edges::helm::Helm;
use crate::edges::helm::binary::{BinaryHelm, HelmSettings};
use crate::edges::helm::post_render::PostRenderer;
use crate::edges::helm::template::TemplateHelm;
use crate::edges::http::{StartupStatus, StatusSource};
use crate::edges::jq::{JqRunner, SandboxSettings};
use crate::edges::kube::leader::{LeaderElection, LeaderSettings};
use crate::edges::kube::no_cluster::NoCluster;
use crate::edges::kube::recorder::{KubeReporter, RecorderSettings};
use crate::edges::kube::{ApiSettings, KubeEdge, ObjectPatcher, PatcherSettings};
use crate::edges::tree::dirs::DirFlags;
use crate::edges::tree::runnable::StagedTree;
use crate::edges::tree::watch::TreeWatch;
use crate::edges::webhook::WebhookSettings;
use crate::env::shell_operator_default;
use crate::runtime::edges::{ConfigBackend, Edges, KubeEvent, ObjectPatches, ObjectsError};
use crate::runtime::metrics::Metrics;
use crate::runtime::startup_config::wait_for_config;
use crate::runtime::{Runtime, RuntimeSettings};
use addon_core::error::error_chain;

/// How long file edits are gathered before the config is re-read.
const CONFIG_DEBOUNCE: Duration = Duration::from_millis(200);
/// How long the tree's files must be quiet before the tree is loaded again.
const TREE_SETTLE: Duration = crate::edges::tree::watch::DEFAULT_SETTLE;

mod cluster;
mod running;
use cluster::{Cluster, KubeClients, choose_cluster, cluster_target};
use running::{Reloads, lead_unless_broken, run_reloading};

pub fn run_cli(args: &StartArgs) -> anyhow::Result<ExitCode> {
    crate::cli::support::block_on(run(args))?
}

async fn run(args: &StartArgs) -> anyhow::Result<ExitCode> {
    crate::edges::exec::reaper::start();
    args.upstream.log_without_effect();
    // the module hooks' `--config` runs go on beside global hooks and `enabled` scripts
    let staged = crate::edges::tree::runnable::load_staged(&args.dirs, args.hook_timeout).await;
    let StagedTree { tree, module_hooks } = match staged {
        Ok(staged) => staged,
        Err(errors) => return Ok(fail("start", &errors)),
    };
    if args.upstream.strict_check_values_mode_enabled {
        let problems = crate::cli::upstream_flags::strict_values_problems(&tree.found);
        if !problems.is_empty() {
            return Ok(fail("start", &problems));
        }
    }
    crate::edges::exec::tmp_files::private_dir(&args.tmp_dir)?;
    // hook files made ahead and removed behind, unless they are kept for debugging
    let pool = match args.debug_keep_tmp_files {
        true => None,
        false => TmpPool::start(&args.tmp_dir)
            .inspect_err(|error| {
                let error = addon_core::error::error_chain(error);
                tracing::warn!(%error, "hook files are made by each run");
            })
            .ok(),
    };
    let cluster = choose_cluster(args).await?;
    let cancel_hooks = CancellationToken::new();
    // metrics, health and the signals are served from the start, so a start that waits for
    // the API server is seen as not ready (with the reason) and can be stopped
    let shutdown = CancellationToken::new();
    tokio::spawn(wait_for_signal(shutdown.clone(), cancel_hooks.clone()));
    let metrics = Arc::new(Metrics::new(&args.http.prometheus_metrics_prefix));
    let status = Arc::new(StartupStatus::new("starting"));
    serve_http(args, &metrics, &status, &shutdown).await;
    let (kube_tx, kube_events) = crate::runtime::edges::kube_event_channel();
    let (mut edges, client, reporter) = edges(
        args,
        &cluster,
        kube_tx,
        cancel_hooks.clone(),
        &metrics,
        pool.as_ref(),
    )
    .await?;
    if args.ha && client.is_none() {
        let problem = "--ha needs a cluster (--kube-config, in-cluster, or --embedded-cluster)";
        return Ok(fail("start", &[problem.into()]));
    }
    if client.is_some() && args.config_file.is_none() {
        status.starting(format!("reading the ConfigMap {}", args.config_map));
        let backoff = settings(args, &metrics).backoff;
        let starting = |reason: String| status.starting(reason);
        match wait_for_config(edges.config.clone(), backoff, &starting, &shutdown).await {
            Some(config) => edges.config = config,
            None => return Ok(ExitCode::SUCCESS),
        }
    }
    let mut settings = settings(args, &metrics);
    settings.kept_releases = kept_releases(args, client.as_ref()).await;
    settings.kubernetes_version = kubernetes_version(client.as_ref(), &tree.found).await;
    // written only when a hook has a webhook binding (known once the module hooks are)
    let webhooks = webhook_settings(args, &cluster)?;
    if client.is_some() {
        settings.webhook_objects = Some(crate::cli::webhook_flags::objects(
            &webhooks,
            &namespace(args),
            matches!(cluster, Cluster::Embedded { .. }),
        ));
    }
    let election = client
        .clone()
        .filter(|_| args.ha)
        .map(|client| LeaderElection::new(client, leader_settings(args)));
    settings.leadership = election
        .as_ref()
        .map(|e| e.leadership() as Arc<dyn crate::runtime::edges::Leading>);
    if let (Some(reporter), Some(leading)) = (&reporter, &settings.leadership) {
        reporter.lead_with(Arc::clone(leading));
    }
    let built = Runtime::build(
        &tree.found,
        &tree.configs,
        edges,
        kube_events,
        settings.clone(),
    );
    let runtime = match built.await {
        Ok(runtime) => runtime,
        Err(e) => return Ok(fail("start", &e.errors)),
    };
    tracing::info!(
        global_hooks = tree.found.global.hooks.len(),
        modules = tree.found.modules.len(),
        "addon-operator started"
    );
    inherited_env::warn_if_linked_services();
    let lost = CancellationToken::new();
    let mut holding = None;
    let mut module_hooks = futures::future::maybe_done(module_hooks);
    // a standby says 0 until it holds the lease, and says 0 again once it lost it
    metrics.leader(election.is_none());
    if let Some(election) = election {
        status.starting("waiting for the leader lease (a standby)");
        let stop = [shutdown.clone(), cancel_hooks.clone()];
        match lead_unless_broken(election, &stop, &lost, &mut module_hooks).await {
            Ok(Some(hold)) => {
                metrics.leader(true);
                let (metrics, lost) = (Arc::clone(&metrics), lost.clone());
                tokio::spawn(async move {
                    lost.cancelled().await;
                    metrics.leader(false);
                });
                holding = Some(hold);
            }
            Ok(None) => return Ok(ExitCode::SUCCESS),
            Err(problems) => return Ok(fail("start", &problems)),
        }
    }
    let watch = reload_tree(args, &cluster);
    let mut reloads = Reloads::new(args, webhooks, watch, &status, &metrics, tree);
    let stop = [shutdown.clone(), cancel_hooks.clone()];
    let problems = run_reloading(runtime, &mut reloads, module_hooks, &stop).await;
    if let Some((stop_holding, held)) = holding {
        stop_holding.cancel();
        let _ = held.await;
    }
    drop(cluster);
    if let Some(pool) = pool {
        pool.shutdown();
    }
    if let Some(problems) = problems {
        return Ok(fail("start", &problems));
    }
    if lost.is_cancelled() {
        tracing::error!("stopped after losing the leader lease");
        return Ok(ExitCode::FAILURE);
    }
    tracing::info!("addon-operator stopped");
    Ok(ExitCode::SUCCESS)
}

/// The webhook servers' settings: without certificates, local mode and the embedded cluster get
/// throwaway ones (a module author's webhook works with no setting); a cluster needs them given.
fn webhook_settings(args: &StartArgs, cluster: &Cluster) -> anyhow::Result<WebhookSettings> {
    let without = match cluster {
        Cluster::External(_) => WithoutCertificate::Defaults,
        Cluster::None | Cluster::Embedded { .. } => WithoutCertificate::Generate {
            dir: args.tmp_dir.join("webhook-certs"),
            namespace: namespace(args),
        },
    };
    (args.webhooks.settings(&without)).context("make the webhook servers' throwaway certificates")
}

/// The watch of the tree's directories when `--reload-tree` is on (by default without a cluster
/// and with the embedded one).
fn reload_tree(args: &StartArgs, cluster: &Cluster) -> Option<TreeWatch> {
    let on = args
        .reload_tree
        .unwrap_or(!matches!(cluster, Cluster::External(_)));
    if !on {
        return None;
    }
    let dirs = crate::edges::tree::dirs::resolve(&args.dirs, &|name| std::env::var(name).ok());
    let mut roots = dirs.modules_dirs;
    roots.push(dirs.global_hooks_dir);
    match TreeWatch::start(roots, TREE_SETTLE) {
        Ok(watch) => {
            tracing::info!("the module tree is reloaded when its files change (--reload-tree)");
            Some(watch)
        }
        Err(e) => {
            let error = error_chain(&e);
            tracing::warn!(%error, "the module tree is not reloaded");
            None
        }
    }
}

fn settings(args: &StartArgs, metrics: &Arc<Metrics>) -> RuntimeSettings {
    RuntimeSettings {
        backoff: Backoff {
            initial: args.retry_initial_delay,
            max: args.retry_max_delay,
            factor: 2,
        },
        metrics_prefix: args.http.prometheus_metrics_prefix.clone(),
        resource_monitor_interval: Some(args.resources_monitor_interval)
            .filter(|interval| !interval.is_zero()),
        guard: crate::runtime::GuardSettings {
            mode: args.drift_mode,
            health_timeout: args.release_health_timeout,
            ..crate::runtime::GuardSettings::default()
        },
        record_history: false,
        kept_releases: Vec::new(),
        crd_extra_labels: args.upstream.crd_labels(),
        crd_filters: args.upstream.crd_filter_prefixes(),
        leadership: None,
        metrics: Some(Arc::clone(metrics)),
        jq: jq_runner(args),
        parallel_module_runs: usize::try_from(args.parallel_module_runs).unwrap_or(1),
        webhook_objects: None,
        module_hooks_later: true,
        kubernetes_version: None,
    }
}

fn parse_drift_mode(text: &str) -> Result<addon_core::drift::DriftMode, String> {
    addon_core::drift::DriftMode::parse(text)
        .ok_or_else(|| format!("'{text}' is not a drift mode (off, warn, enforce)"))
}

/// API call limits: retries wait at most the queues' retry delay (and never over 30 s).
fn api_settings(args: &StartArgs) -> ApiSettings {
    ApiSettings {
        max_delay: args.retry_max_delay,
        ..ApiSettings::default()
    }
}

/// A jq sandbox bounded by `--jq-timeout` and `--jq-memory-limit-mib`.
fn jq_runner(args: &StartArgs) -> JqRunner {
    let memory = args.jq_memory_limit_mib.saturating_mul(1 << 20);
    JqRunner::sandbox(SandboxSettings::for_current_exe(args.jq_timeout, memory))
}

/// Releases the startup purge keeps: `--helm-ignore-release` and the release that deployed this
/// pod (`--pod-name`, or the host name in a pod; found from its controllers' Helm annotations).
async fn kept_releases(args: &StartArgs, client: Option<&kube::Client>) -> Vec<String> {
    let mut kept: Vec<String> = Some(args.helm_ignore_release.clone())
        .filter(|r| !r.is_empty())
        .into_iter()
        .collect();
    // in a pod the host name is the pod name
    let in_pod = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    if let (Some(client), true) = (client, in_pod || !args.pod_name.is_empty()) {
        let (namespace, pod) = (namespace(args), identity(args));
        let own = crate::edges::kube::own_release::own_release(client, &namespace, &pod);
        kept.extend(own.await);
    }
    kept
}

/// How long the start waits for the API server's `/version`.
const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The cluster's Kubernetes version for the modules' `requirements.kubernetes`: read only when
/// a module has one; without a cluster (or when `/version` does not answer) it is not checked,
/// and the log says so.
async fn kubernetes_version(
    client: Option<&kube::Client>,
    found: &addon_core::discovery::Discovered,
) -> Option<addon_core::module_definition::Version> {
    let wanted = found
        .modules
        .iter()
        .filter(|m| m.definition.kubernetes.is_some());
    let wanted: Vec<&str> = wanted.map(|m| m.name.as_str()).collect();
    if wanted.is_empty() {
        return None;
    }
    let modules = wanted.join(", ");
    let Some(client) = client else {
        tracing::info!(%modules, "requirements.kubernetes not checked: no cluster");
        return None;
    };
    let info = tokio::time::timeout(VERSION_TIMEOUT, client.apiserver_version()).await;
    let version = match info {
        Ok(Ok(info)) => addon_core::module_definition::Version::parse(&info.git_version),
        Ok(Err(e)) => {
            tracing::warn!(%modules, error = %e, "requirements.kubernetes not checked: /version failed");
            None
        }
        Err(_) => {
            tracing::warn!(%modules, "requirements.kubernetes not checked: /version did not answer");
            None
        }
    };
    if let Some(version) = &version {
        tracing::info!(%version, %modules, "Kubernetes version for requirements.kubernetes");
    }
    version
}

fn leader_settings(args: &StartArgs) -> LeaderSettings {
    let identity = identity(args);
    let lease = args.ha_lease_duration;
    LeaderSettings {
        name: args.ha_lease_name.clone(),
        ..LeaderSettings::with_lease_duration(&namespace(args), &identity, lease)
    }
}

/// The replica's name in the Lease: `--pod-name`, else the host name.
fn identity(args: &StartArgs) -> String {
    if !args.pod_name.is_empty() {
        return args.pod_name.clone();
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| format!("addon-operator-{}", std::process::id()))
}

/// Prints every problem that stops `what` (e.g. "start") and gives exit code 1. With a JSON log
/// it is one `error` line of the log (the problems in `errors`), as every other line there.
pub(crate) fn fail(what: &str, errors: &[String]) -> ExitCode {
    if crate::logging::json_lines() {
        tracing::error!(errors = %errors.join("; "), "cannot {what}, {} problem(s)", errors.len());
        return ExitCode::FAILURE;
    }
    let mut text = format!(
        "addon-operator: cannot {what}, {} problem(s):",
        errors.len()
    );
    for e in errors {
        text.push_str(&format!("\n  {e}"));
    }
    crate::cli::support::print_err(&text);
    ExitCode::FAILURE
}

/// The edges for `cluster`, and, when there is a cluster, the client of the leader lease and
/// the start's few reads, and the reporter of Events and status objects.
async fn edges(
    args: &StartArgs,
    cluster: &Cluster,
    kube_tx: mpsc::Sender<KubeEvent>,
    cancel_hooks: CancellationToken,
    metrics: &Arc<Metrics>,
    pool: Option<&Arc<TmpPool>>,
) -> anyhow::Result<(Edges, Option<kube::Client>, Option<KubeReporter>)> {
    let kubeconfig = cluster.kubeconfig().map(Path::to_path_buf);
    let extra_env: Vec<(String, String)> = kubeconfig
        .iter()
        .map(|p| ("KUBECONFIG".to_string(), p.display().to_string()))
        .collect();
    let hooks = Arc::new(ProcessHooks {
        settings: HookRunSettings {
            tmp_dir: args.tmp_dir.clone(),
            keep_tmp_files: args.debug_keep_tmp_files,
            timeout: args.hook_timeout,
            kill_grace: args.hook_kill_grace,
            pool: pool.cloned(),
        },
        extra_env: extra_env.clone(),
        cancel: cancel_hooks,
    });
    let file_config = match &args.config_file {
        Some(path) => {
            let store = FileConfigStore::open(path, CONFIG_DEBOUNCE)
                .await
                .with_context(|| format!("open the config file {}", path.display()))?;
            Some(Arc::new(FileConfig::new(store)) as Arc<dyn ConfigBackend>)
        }
        None => None,
    };
    if let Cluster::None = cluster {
        let helm = TemplateHelm::new(
            args.helm_binary.clone(),
            args.namespace.clone(),
            args.tmp_dir.clone(),
        );
        let config = file_config.unwrap_or_else(|| Arc::new(MemoryConfig::new(Config::empty())));
        let edges = Edges {
            hooks,
            helm: Arc::new(helm),
            kube: Arc::new(NoCluster),
            objects: Arc::new(NoCluster),
            config,
            files: Arc::new(crate::edges::files::DiskFiles),
            report: Arc::new(crate::runtime::edges::NoReports),
        };
        return Ok((edges, None, None));
    }
    let namespace = namespace(args);
    let target = cluster_target(args, cluster);
    let clients = KubeClients::connect(args, &target)
        .await
        .context("connect to the Kubernetes API")?;
    let kube = KubeEdge::new(clients.main);
    let mut helm_settings = HelmSettings::new(
        args.helm_binary.clone(),
        namespace.clone(),
        args.tmp_dir.clone(),
    );
    helm_settings.history_max = args.upstream.helm_history_max;
    helm_settings.timeout = args.upstream.helm_timeout;
    helm_settings.kubeconfig = kubeconfig;
    helm_settings.extra_env = extra_env;
    helm_settings.monitor_rate = args.upstream.helm_monitor_rate();
    helm_settings.kube_context.clone_from(&target.context);
    helm_settings.kube_server.clone_from(&target.server);
    // helm reads the context and the API server from its own environment variables
    let helm_env = [
        ("HELM_KUBECONTEXT", &target.context),
        ("HELM_KUBEAPISERVER", &target.server),
    ];
    for (name, value) in helm_env {
        if let Some(value) = value {
            (helm_settings.extra_env).push((name.to_string(), value.clone()));
        }
    }
    helm_settings.post_renderer = Some(PostRenderer::of_binary(
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
    ));
    let helm = BinaryHelm::new(helm_settings)
        .await
        .context("prepare helm")?;
    let config =
        file_config.unwrap_or_else(|| Arc::new(kube.config_store(&namespace, &args.config_map)));
    let reporter = reporter(args, &kube, &namespace, metrics);
    let edges = Edges {
        hooks,
        helm: Arc::new(helm) as Arc<dyn Helm>,
        kube: Arc::new(kube.watches(kube_tx).with_metrics(Arc::clone(metrics))),
        objects: Arc::new(Patcher(
            kube.patcher(PatcherSettings {
                jq: jq_runner(args),
                ..PatcherSettings::default()
            })
            .with_client(clients.patcher),
            kube.client.clone(),
            Arc::clone(&kube.resolver),
        )),
        config,
        files: Arc::new(crate::edges::files::DiskFiles),
        report: match &reporter {
            Some(reporter) => Arc::new(reporter.clone()),
            None => Arc::new(crate::runtime::edges::NoReports),
        },
    };
    Ok((edges, Some(clients.lease), reporter))
}

/// Events and module status objects, unless both are turned off.
fn reporter(
    args: &StartArgs,
    kube: &KubeEdge,
    namespace: &str,
    metrics: &Arc<Metrics>,
) -> Option<KubeReporter> {
    if !args.module_status_objects && !args.admin_events {
        return None;
    }
    let settings = RecorderSettings {
        namespace: namespace.to_string(),
        config_map: args.config_map.clone(),
        instance: identity(args),
        status_objects: args.module_status_objects,
        events: args.admin_events,
        ha: args.ha,
    };
    let (client, resolver) = (kube.client.clone(), Arc::clone(&kube.resolver));
    Some(KubeReporter::start(
        client,
        resolver,
        settings,
        Some(Arc::clone(metrics)),
    ))
}

fn namespace(args: &StartArgs) -> String {
    let service_account = Path::new(crate::cli::upstream_flags::SERVICE_ACCOUNT_NAMESPACE);
    crate::cli::upstream_flags::resolve_namespace(&args.namespace, service_account)
}

/// The kube edge's object patcher (and its client, to wait for CRDs) as the runtime's
/// `ObjectPatches`.
struct Patcher(
    ObjectPatcher,
    kube::Client,
    Arc<crate::edges::kube::KindResolver>,
);

impl ObjectPatches for Patcher {
    fn apply<'a>(&'a self, ops: &'a [KubeOperation]) -> BoxFuture<'a, Result<(), ObjectsError>> {
        Box::pin(async move { Ok(self.0.apply(ops).await?) })
    }

    fn get_object<'a>(
        &'a self,
        target: &'a addon_core::hook_output::kube_patch::ObjectRef,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, ObjectsError>> {
        Box::pin(async move { Ok(self.0.get(target).await?) })
    }

    fn watch_kind<'a>(
        &'a self,
        kind: &'a crate::runtime::edges::WatchedKind,
        changes: tokio::sync::mpsc::Sender<crate::runtime::edges::ObjectChange>,
    ) -> BoxFuture<'a, Result<(), ObjectsError>> {
        Box::pin(async move {
            crate::edges::kube::release_watch::start(&self.2, kind, changes)
                .await
                .map_err(|e| ObjectsError::Apply(Box::new(e)))
        })
    }

    fn wait_crds_established<'a>(
        &'a self,
        names: &'a [String],
    ) -> BoxFuture<'a, Result<(), ObjectsError>> {
        let timeout = Duration::from_secs(30);
        Box::pin(async move {
            crate::edges::kube::crds::wait_established(&self.1, names, timeout).await?;
            Ok(())
        })
    }
}

/// Metrics and health on TCP, the debug API on a unix socket (and TCP if asked). A listener that
/// cannot be bound is logged and skipped: the operator's work does not depend on it.
async fn serve_http(
    args: &StartArgs,
    metrics: &Arc<Metrics>,
    status: &Arc<StartupStatus>,
    shutdown: &CancellationToken,
) {
    let status: Arc<dyn StatusSource> = status.clone();
    let metrics = Arc::clone(metrics);
    tokio::spawn(crate::runtime::metrics::spawn_live_ticks(
        Arc::clone(&metrics),
        shutdown.clone(),
    ));
    match crate::edges::http::bind(args.http.listen_addr()).await {
        Ok(listener) => {
            let addr = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            tracing::info!(%addr, "serving /metrics, /healthz, /readyz");
            let (status, stop) = (Arc::clone(&status), shutdown.clone());
            tokio::spawn(crate::edges::http::serve_listener(
                listener, metrics, status, stop,
            ));
        }
        Err(e) => tracing::warn!(error = %error_chain(&e), "metrics and health server not started"),
    }
    let socket = args.http.debug_unix_socket.clone();
    match crate::edges::http::bind_debug_socket(&socket) {
        Ok(listener) => {
            tracing::info!(socket = %socket.display(), "serving the debug API");
            let (status, stop) = (Arc::clone(&status), shutdown.clone());
            tokio::spawn(async move {
                crate::edges::http::serve_debug_listener(listener, &socket, status, stop).await
            });
        }
        Err(e) => tracing::warn!(error = %error_chain(&e), "debug socket not started"),
    }
    if let Some(addr) = args.http.debug_http_addr {
        match crate::edges::http::bind(addr).await {
            Ok(listener) => {
                let (status, stop) = (Arc::clone(&status), shutdown.clone());
                tokio::spawn(crate::edges::http::serve_debug_tcp(listener, status, stop));
            }
            Err(e) => tracing::warn!(error = %error_chain(&e), "debug HTTP server not started"),
        }
    }
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

#[derive(Debug, Clone, clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    pub dirs: DirFlags,
    /// The local config store: a YAML file with what the addon-operator ConfigMap's data holds.
    /// It is watched; hooks' config patches are written back to it. Without it the config lives
    /// in memory only
    #[arg(long, env = "ADDON_OPERATOR_CONFIG_FILE", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Directory for the temporary files of hook runs [fallback env: SHELL_OPERATOR_TMP_DIR]
    #[arg(
        long,
        env = "ADDON_OPERATOR_TMP_DIR",
        default_value = shell_operator_default("SHELL_OPERATOR_TMP_DIR", "/tmp/addon-operator")
    )]
    pub tmp_dir: PathBuf,
    /// Keep the temporary files of hook runs (for debugging)
    #[arg(long, env = "DEBUG_KEEP_TMP_FILES", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub debug_keep_tmp_files: bool,
    /// Time limit of one hook run; the hook's process group is killed after it
    #[arg(long, env = "ADDON_OPERATOR_HOOK_TIMEOUT", default_value = "30m", value_parser = parse_duration)]
    pub hook_timeout: std::time::Duration,
    /// Between SIGTERM and SIGKILL when a hook times out or the operator stops
    #[arg(long, env = "ADDON_OPERATOR_HOOK_KILL_GRACE", default_value = "10s", value_parser = parse_duration)]
    pub hook_kill_grace: std::time::Duration,
    /// CPU time limit of one jq evaluation request (a binding's jqFilter on up to 256 objects, or
    /// a JQPatch), in whole seconds; past it the filter fails and its sandbox process is restarted
    #[arg(long, env = "ADDON_OPERATOR_JQ_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub jq_timeout: std::time::Duration,
    /// Address-space limit of the jq sandbox process, in MiB (at least 512)
    #[arg(
        long,
        env = "ADDON_OPERATOR_JQ_MEMORY_LIMIT_MIB",
        default_value_t = 1024,
        value_parser = clap::value_parser!(u64).range(512..)
    )]
    pub jq_memory_limit_mib: u64,
    /// First retry delay of a failed task; delays double up to --retry-max-delay
    #[arg(long, env = "ADDON_OPERATOR_RETRY_INITIAL_DELAY", default_value = "5s", value_parser = parse_duration)]
    pub retry_initial_delay: std::time::Duration,
    /// Longest retry delay of a failed task
    #[arg(long, env = "ADDON_OPERATOR_RETRY_MAX_DELAY", default_value = "30s", value_parser = parse_duration)]
    pub retry_max_delay: std::time::Duration,
    /// How many modules of one ORDER run at once, each in a parallel queue (modules without a
    /// number all have --unnumbered-modules-order); 1 runs every module one after another
    #[arg(
        long,
        env = "ADDON_OPERATOR_PARALLEL_MODULE_RUNS",
        default_value_t = crate::runtime::DEFAULT_PARALLEL_MODULE_RUNS as u64,
        value_parser = clap::value_parser!(u64).range(1..=64)
    )]
    pub parallel_module_runs: u64,
    /// How often each module's release is checked for drift (objects missing from the cluster,
    /// a failed release); a drifted module runs again. 0 turns the check off
    #[arg(long, env = "ADDON_OPERATOR_RESOURCES_MONITOR_INTERVAL", default_value = "4m30s", value_parser = parse_duration)]
    pub resources_monitor_interval: std::time::Duration,
    /// What a change to a field a module's release sets leads to: `off` (not watched), `warn`
    /// (a Warning Event and the drift metrics) or `enforce` (the fields are written back); an
    /// object's `drift.addon-operator.io/mode` annotation overrides it
    #[arg(long, env = "ADDON_OPERATOR_DRIFT_MODE", default_value = "warn", value_parser = parse_drift_mode)]
    pub drift_mode: addon_core::drift::DriftMode,
    /// How long a module's release may take to become ready after its Helm run before the
    /// module counts as unhealthy
    #[arg(long, env = "ADDON_OPERATOR_RELEASE_HEALTH_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    pub release_health_timeout: std::time::Duration,
    /// Namespace of Helm releases and of the addon-operator ConfigMap; without it, the pod's own
    /// namespace (in a cluster), else `default` [fallback env: SHELL_OPERATOR_NAMESPACE]
    #[arg(
        long,
        env = "ADDON_OPERATOR_NAMESPACE",
        default_value = shell_operator_default("SHELL_OPERATOR_NAMESPACE", "")
    )]
    pub namespace: String,
    /// The helm binary (3.x or 4.x)
    #[arg(long, env = "HELM_BINARY", default_value = "helm")]
    pub helm_binary: PathBuf,
    /// A Helm release in the namespace that is not a module's and is never purged at startup
    #[arg(long, env = "HELM_IGNORE_RELEASE", default_value = "")]
    pub helm_ignore_release: String,
    #[command(flatten)]
    pub upstream: crate::cli::upstream_flags::UpstreamArgs,
    /// Run against an in-process Kubernetes API emulator (no cluster needed): hooks, kubectl and
    /// helm get its KUBECONFIG
    #[arg(long, env = "ADDON_OPERATOR_EMBEDDED_CLUSTER", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub embedded_cluster: bool,
    /// Keep the embedded cluster's objects in this directory across restarts
    #[arg(
        long,
        env = "ADDON_OPERATOR_EMBEDDED_CLUSTER_DATA_DIR",
        value_name = "DIR"
    )]
    pub embedded_cluster_data_dir: Option<PathBuf>,
    /// Port of the embedded cluster on 127.0.0.1 (0 picks a free one)
    #[arg(
        long,
        env = "ADDON_OPERATOR_EMBEDDED_CLUSTER_PORT",
        default_value_t = 0
    )]
    pub embedded_cluster_port: u16,
    /// Kubeconfig of the cluster to manage (in a pod, the service account is used without it)
    #[arg(long, env = "KUBE_CONFIG", value_name = "FILE")]
    pub kube_config: Option<PathBuf>,
    /// Name of the config ConfigMap (used with a cluster and no --config-file)
    #[arg(
        long,
        env = "ADDON_OPERATOR_CONFIG_MAP",
        default_value = "addon-operator"
    )]
    pub config_map: String,
    /// Several replicas: only the holder of the Lease (--ha-lease-name) in --namespace
    /// works; the others wait (needs a cluster)
    #[arg(long, env = "ADDON_OPERATOR_HA", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub ha: bool,
    /// This replica's identity in the Lease (the pod name)
    #[arg(long, env = "ADDON_OPERATOR_POD", default_value = "")]
    pub pod_name: String,
    /// With --ha: a leader that has not renewed the Lease for this long loses it
    #[arg(long, env = "ADDON_OPERATOR_HA_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub ha_lease_duration: std::time::Duration,
    /// With --ha: the Lease in --namespace that replicas compete for (the Go operator's name by
    /// default, so that Go and Rust replicas never lead together)
    #[arg(
        long,
        env = "ADDON_OPERATOR_HA_LEASE_NAME",
        default_value = crate::edges::kube::leader::DEFAULT_LEASE_NAME
    )]
    pub ha_lease_name: String,
    /// Keep one cluster-scoped Module object per module (`kubectl get modules`) with its status:
    /// enabled, phase, Ready, the last error, the release revision. Off: Events about modules
    /// go on the config ConfigMap
    #[arg(long, env = "ADDON_OPERATOR_MODULE_STATUS_OBJECTS", num_args = 0..=1, default_value = "true",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub module_status_objects: bool,
    /// Send Kubernetes Events for admins (a hook failed, a module installed, upgraded or
    /// deleted, a config edit refused), aggregated as client-go does
    #[arg(long, env = "ADDON_OPERATOR_ADMIN_EVENTS", num_args = 0..=1, default_value = "true",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub admin_events: bool,
    /// Reload the module tree when its files change (modules and global hooks directories),
    /// without a restart; on by default without a cluster and with --embedded-cluster, off
    /// against a cluster
    #[arg(long, env = "ADDON_OPERATOR_RELOAD_TREE", num_args = 0..=1,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub reload_tree: Option<bool>,
    #[command(flatten)]
    pub http: crate::edges::http::HttpArgs,
    #[command(flatten)]
    pub webhooks: crate::cli::webhook_flags::WebhookArgs,
}
