//! Helm against a cluster: the `helm` binary (3.x or 4.x) installs, upgrades and uninstalls
//! releases; the Kubernetes API tells the state of every release (helm's storage, watched) and
//! which objects of a release are absent.

mod argv;
mod chart;
mod cluster;
mod command;
pub mod kube_cache;
mod release;
mod release_cache;
mod storage;
mod version;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use addon_core::error::error_chain;
use futures::future::BoxFuture;

use self::argv::Target;
pub use self::cluster::ClusterError;
use self::cluster::{Kinds, ManifestObject, Storage, manifest_objects, manifest_values};
use self::command::{Output, RunError, Runner};
use self::kube_cache::KubeCache;
use self::release::{ReleaseState, is_in_progress, is_not_found, names_from_list_json};
use self::storage::StorageWatch;
pub use self::version::HelmVersion;
use super::post_render::{EXTRA_LABELS_ENV, MAINTENANCE_LABEL, PostRenderError, PostRenderer};
use super::{Drift, Helm, HelmError, UpgradeRequest};

/// How to run helm; build with [`HelmSettings::new`] and adjust the public fields.
#[derive(Debug, Clone)]
pub struct HelmSettings {
    /// The `helm` binary (`--helm-binary`, `HELM_BINARY`, or `helm` from `PATH`).
    pub binary: PathBuf,
    /// Namespace of every release (`ADDON_OPERATOR_NAMESPACE`); empty means `default`.
    pub namespace: String,
    /// Kubeconfig for helm and the API client; `None` lets both infer it (in-cluster, ~/.kube).
    pub kubeconfig: Option<PathBuf>,
    /// `--kube-context` and `--kube-server` of the API client (helm gets them as
    /// `HELM_KUBECONTEXT` / `HELM_KUBEAPISERVER` in `extra_env`).
    pub kube_context: Option<String>,
    pub kube_server: Option<String>,
    /// The request rate limit of the API client (the resource monitor's:
    /// `--helm-monitor-kube-client-qps` / `-burst`); `None`: no limit.
    pub monitor_rate: Option<crate::edges::kube::RateLimit>,
    /// Private directory for values files, synthesised charts and helm's cache/config/data.
    pub tmp_dir: PathBuf,
    /// `--history-max`.
    pub history_max: u32,
    /// `--timeout` of upgrade and uninstall (helm waits this long for hooks).
    pub timeout: Duration,
    /// Time limit of the read-only helm commands (`version`, and `list`/`status` with the
    /// `memory` or `sql` driver) and of the first list of helm's storage a decision waits for.
    pub query_timeout: Duration,
    /// Extra environment of every helm process, set last.
    pub extra_env: Vec<(String, String)>,
    /// Where helm's private discovery cache (`KUBECACHEDIR`) is made, the first usable one
    /// wins: RAM (`/dev/shm`) by default; `<tmp_dir>/helm/kube-cache` when none is usable.
    pub kube_cache_parents: Vec<PathBuf>,
    /// The post-renderer that labels every release object (`heritage: addon-operator`, as
    /// upstream); `None` installs the chart's objects as rendered.
    pub post_renderer: Option<PostRenderer>,
}

impl HelmSettings {
    /// Defaults: no kubeconfig, history of 10 revisions, 20 minutes timeout, 60 s for queries.
    pub fn new(binary: PathBuf, namespace: String, tmp_dir: PathBuf) -> Self {
        Self {
            binary,
            namespace,
            kubeconfig: None,
            kube_context: None,
            kube_server: None,
            monitor_rate: None,
            tmp_dir,
            history_max: 10,
            timeout: Duration::from_secs(20 * 60),
            query_timeout: Duration::from_secs(60),
            extra_env: Vec::new(),
            kube_cache_parents: kube_cache::RAM_DIRS.iter().map(PathBuf::from).collect(),
            post_renderer: None,
        }
    }
}

/// Why [`BinaryHelm::new`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BinaryHelmError {
    #[error("cannot create the helm temp dir {}", path.display())]
    TmpDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`helm version` failed: {message}")]
    Version { message: String },
    #[error("helm {version} is not supported (helm 3 or 4 is)")]
    Unsupported { version: String },
    #[error("cannot build the Kubernetes client of the helm edge")]
    Cluster(#[from] ClusterError),
    #[error("cannot set up helm's post-renderer")]
    PostRenderer(#[source] PostRenderError),
}

impl BinaryHelmError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::TmpDir { .. } => "helm_tmp_dir",
            Self::Version { .. } => "helm_version",
            Self::Unsupported { .. } => "helm_unsupported",
            Self::Cluster(e) => e.category(),
            Self::PostRenderer(e) => e.category(),
        }
    }
}

/// [`Helm`] with the real `helm` binary and a Kubernetes client.
///
/// ```text
/// let mut settings = HelmSettings::new(helm_binary, namespace, tmp_dir);
/// settings.kubeconfig = kubeconfig;            // None: in-cluster or ~/.kube/config
/// let helm: Arc<dyn Helm> = Arc::new(BinaryHelm::new(settings).await?);
/// ```
pub struct BinaryHelm {
    settings: HelmSettings,
    runner: Runner,
    version: HelmVersion,
    client: kube::Client,
    /// Helm's storage, watched; `None` for the `memory` and `sql` drivers (then `helm status`).
    storage: Option<StorageWatch>,
    /// Kinds of manifest objects already discovered.
    kinds: Kinds,
    /// release → the state the last decision that asked for an upgrade read, for the upgrade
    /// that follows it (so a module run reads the release once).
    decided: Mutex<HashMap<String, Option<ReleaseState>>>,
    /// helm's discovery cache, shared by every helm process of this operator only.
    kube_cache: KubeCache,
    /// The release namespace was seen to exist: helm is never asked to create it again.
    namespace_seen: AtomicBool,
}

/// The latest revision of a release and the objects of its manifest.
struct Current {
    state: ReleaseState,
    objects: Arc<Vec<ManifestObject>>,
}

impl BinaryHelm {
    /// Detects the helm version (`helm version`) and builds the API client; nothing is sent to
    /// the cluster yet.
    pub async fn new(settings: HelmSettings) -> Result<Self, BinaryHelmError> {
        std::fs::create_dir_all(&settings.tmp_dir).map_err(|source| BinaryHelmError::TmpDir {
            path: settings.tmp_dir.clone(),
            source,
        })?;
        let kube_cache = KubeCache::create(&settings.tmp_dir, &settings.kube_cache_parents)
            .map_err(|source| BinaryHelmError::TmpDir {
                path: settings.tmp_dir.join("helm").join("kube-cache"),
                source,
            })?;
        let runner = Runner::new(
            settings.binary.clone(),
            &settings.tmp_dir,
            kube_cache.path(),
            settings.kubeconfig.as_deref(),
            &settings.extra_env,
        );
        let version = detect_version(&runner, settings.query_timeout).await?;
        if let Some(renderer) = &settings.post_renderer
            && version.major >= 4
        {
            // helm 4 runs post-renderers only as plugins; HELM_DATA_HOME is private to us
            let plugins = settings.tmp_dir.join("helm").join("data").join("plugins");
            renderer
                .write_plugin(&plugins)
                .map_err(BinaryHelmError::PostRenderer)?;
        }
        let target = crate::edges::kube::ClusterTarget {
            kubeconfig: settings.kubeconfig.clone(),
            context: settings.kube_context.clone(),
            server: settings.kube_server.clone(),
        };
        let client = cluster::client(&target, settings.monitor_rate).await?;
        let driver = runner.driver();
        let namespace = non_empty_namespace(&settings.namespace);
        let storage = Storage::from_driver(&driver)
            .map(|kind| StorageWatch::start(client.clone(), kind, namespace));
        tracing::info!(
            binary = %settings.binary.display(),
            helm_version = %version,
            namespace = %settings.namespace,
            driver,
            storage_watched = storage.is_some(),
            kube_cache = %kube_cache.path().display(),
            "using the helm binary"
        );
        Ok(Self {
            settings,
            runner,
            version,
            client,
            storage,
            kinds: Kinds::default(),
            decided: Mutex::new(HashMap::new()),
            kube_cache,
            namespace_seen: AtomicBool::new(false),
        })
    }

    /// `(decisions read from the watched storage, targeted storage lists)` since construction;
    /// `None` when the storage driver is out of reach of the API (`memory`, `sql`).
    pub fn storage_counters(&self) -> Option<(u64, u64)> {
        self.storage.as_ref().map(StorageWatch::counters)
    }

    /// helm's private discovery cache directory (`KUBECACHEDIR` of every helm process).
    pub fn kube_cache_dir(&self) -> &Path {
        self.kube_cache.path()
    }

    /// The detected helm version.
    pub fn version(&self) -> HelmVersion {
        self.version
    }

    fn namespace(&self) -> &str {
        non_empty_namespace(&self.settings.namespace)
    }

    /// Whether the release namespace is missing; asked until it is seen to exist.
    async fn namespace_missing(&self) -> bool {
        if self.namespace_seen.load(Ordering::Relaxed) {
            return false;
        }
        let missing = cluster::namespace_missing(&self.client, self.namespace()).await;
        if !missing {
            self.namespace_seen.store(true, Ordering::Relaxed);
        }
        missing
    }

    /// Runs helm; a failure to start or a timeout becomes `HelmError` for `operation`.
    async fn run(
        &self,
        operation: &'static str,
        release: &str,
        args: &[OsString],
        limit: Duration,
    ) -> Result<Output, HelmError> {
        self.run_with_env(operation, release, args, &[], limit)
            .await
    }

    async fn run_with_env(
        &self,
        operation: &'static str,
        release: &str,
        args: &[OsString],
        env: &[(OsString, OsString)],
        limit: Duration,
    ) -> Result<Output, HelmError> {
        self.runner
            .run_with_env(args, env, limit)
            .await
            .map_err(|error| match error {
                RunError::Spawn { binary, source } => HelmError::Spawn { binary, source },
                timed_out @ RunError::TimedOut { .. } => HelmError::Command {
                    operation,
                    release: release.to_string(),
                    message: timed_out.to_string(),
                },
            })
    }

    fn target(&self) -> Target<'_> {
        Target {
            namespace: self.namespace(),
            version: self.version,
            history_max: self.settings.history_max,
            timeout: self.settings.timeout,
        }
    }

    /// The chart of `req`, copied off the async threads when it must be synthesised.
    async fn prepare_chart(&self, req: &UpgradeRequest) -> Result<chart::Chart, HelmError> {
        let (dir, release, tmp) = (
            req.chart_dir.clone(),
            req.release.clone(),
            self.settings.tmp_dir.clone(),
        );
        tokio::task::spawn_blocking(move || chart::prepare(&dir, &release, &tmp))
            .await
            .map_err(std::io::Error::other)
            .and_then(|prepared| prepared)
            .map_err(|e| write_failed(&req.release, "chart", &e))
    }

    /// Limit of commands that wait for the cluster (`--timeout` plus a margin for helm itself).
    fn long_limit(&self) -> Duration {
        self.settings.timeout + Duration::from_secs(30)
    }

    /// The latest revision of `release`, or `None` when there is no release: one read of the
    /// watched storage (or one `helm status` when the driver is out of the API's reach).
    async fn current(&self, release: &str) -> Result<Option<Current>, HelmError> {
        let Some(storage) = &self.storage else {
            return Ok(self.status(release).await?.map(|state| Current {
                objects: Arc::new(manifest_objects(&state.manifest)),
                state,
            }));
        };
        let latest = storage
            .latest(release, self.settings.query_timeout)
            .await
            .map_err(|e| read_failed(release, &e))?;
        Ok(latest.map(|latest| Current {
            state: latest.state(),
            objects: latest.objects,
        }))
    }

    /// `helm status` of `release`, for the drivers whose storage the API cannot read.
    async fn status(&self, release: &str) -> Result<Option<ReleaseState>, HelmError> {
        let argv = argv::status(release, self.namespace());
        let out = self
            .run("status", release, &argv, self.settings.query_timeout)
            .await?;
        if !out.success {
            if is_not_found(&out.stderr) {
                return Ok(None);
            }
            return Err(self.failed("status", release, out));
        }
        ReleaseState::from_status_json(&out.stdout)
            .map(Some)
            .map_err(|e| HelmError::Command {
                operation: "status",
                release: release.to_string(),
                message: format!("unexpected `helm status -o json` output: {e}"),
            })
    }

    /// Re-reads `release` from the storage after one of our helm commands changed it; a failure
    /// only delays the change until the watch delivers it.
    async fn refresh(&self, release: &str) {
        if let Some(storage) = &self.storage
            && let Err(error) = storage.refresh(release).await
        {
            tracing::warn!(module = %release, release, error = %error_chain(&error), "cannot re-read the release after a helm command; waiting for the watch");
        }
    }

    fn decided(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<ReleaseState>>> {
        self.decided
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Logs helm's stderr and turns it into the error.
    fn failed(&self, operation: &'static str, release: &str, out: Output) -> HelmError {
        tracing::error!(
            module = %release,
            release = %release,
            operation,
            stderr = %out.stderr,
            "helm failed"
        );
        HelmError::Command {
            operation,
            release: release.to_string(),
            message: out.stderr,
        }
    }

    fn cluster_failed(&self, release: &str, error: ClusterError) -> HelmError {
        HelmError::Command {
            operation: "check resources",
            release: release.to_string(),
            message: error_chain(&error),
        }
    }

    async fn should_upgrade_now(&self, req: &UpgradeRequest) -> Result<bool, HelmError> {
        let release = req.release.as_str();
        let current = self.current(release).await?;
        let reason = self.upgrade_reason(req, current.as_ref()).await?;
        let Some(reason) = reason else {
            self.decided().remove(release);
            tracing::debug!(module = %release, release, "helm upgrade not needed");
            return Ok(false);
        };
        tracing::info!(module = %release, release, %reason, "helm upgrade needed");
        self.decided()
            .insert(release.to_string(), current.map(|c| c.state));
        Ok(true)
    }

    /// Why `req` needs an upgrade given the release's latest revision, or `None`.
    async fn upgrade_reason(
        &self,
        req: &UpgradeRequest,
        current: Option<&Current>,
    ) -> Result<Option<String>, HelmError> {
        let Some(current) = current else {
            return Ok(Some("no release".to_string()));
        };
        if let Some(reason) = current.state.upgrade_reason(&req.checksum) {
            return Ok(Some(reason));
        }
        let absent = cluster::first_absent(
            &self.client,
            &self.kinds,
            &current.objects,
            self.namespace(),
        )
        .await
        .map_err(|e| self.cluster_failed(&req.release, e))?;
        Ok(absent.map(|resource| format!("resource {resource} is absent")))
    }

    /// The resource monitor's question: why the release drifted, if it did (from the release
    /// cache and metadata-only lists, never a helm process).
    async fn drift_now(&self, req: &UpgradeRequest) -> Result<Option<Drift>, HelmError> {
        let release = req.release.as_str();
        let Some(current) = self.current(release).await? else {
            return Ok(Some(Drift::Other));
        };
        let state = &current.state;
        if state.status != "deployed" {
            return Ok(Some(Drift::UnexpectedStatus(state.status.clone())));
        }
        if state.upgrade_reason(&req.checksum).is_some() {
            return Ok(Some(Drift::Other));
        }
        let (kinds, objects) = (&self.kinds, &current.objects);
        let absent = cluster::absent(&self.client, kinds, objects, self.namespace(), false)
            .await
            .map_err(|e| self.cluster_failed(release, e))?;
        Ok((!absent.is_empty()).then_some(Drift::AbsentResources(absent)))
    }

    /// The objects of `release`'s latest manifest, from the storage (or `helm status`).
    async fn release_objects_now(
        &self,
        release: &str,
    ) -> Result<Option<Vec<serde_json::Value>>, HelmError> {
        let manifest = match &self.storage {
            Some(storage) => storage
                .latest_manifest(release)
                .await
                .map_err(|e| read_failed(release, &e))?,
            None => self.status(release).await?.map(|state| state.manifest),
        };
        Ok(manifest.map(|m| manifest_values(&m, self.namespace())))
    }

    /// A revision left `pending-*` by a helm process that died blocks every later upgrade
    /// ("another operation is in progress"); like the Go operator, drop that revision from helm's
    /// storage (Secret or ConfigMap) so helm continues from the revision before it (or installs
    /// afresh). With the `memory` or `sql` driver the release is left to helm's error.
    async fn unstick(&self, release: &str) -> Result<bool, HelmError> {
        let decided = self.decided().remove(release);
        let state = match decided {
            Some(state) => state,
            None => self.current(release).await?.map(|c| c.state),
        };
        let Some(state) = state else {
            return Ok(false);
        };
        if !state.is_pending() {
            return Ok(false);
        }
        let driver = self.runner.driver();
        let Some(storage) = Storage::from_driver(&driver) else {
            tracing::warn!(
                module = %release,
                release,
                status = %state.status,
                driver,
                "release is stuck and its storage driver is out of reach; not unsticking it"
            );
            return Ok(false);
        };
        tracing::warn!(
            module = %release,
            release,
            status = %state.status,
            revision = state.revision,
            "release is stuck; deleting its latest revision before the upgrade"
        );
        let deleted = cluster::delete_revision(
            &self.client,
            storage,
            self.namespace(),
            release,
            state.revision,
        )
        .await;
        self.refresh(release).await;
        deleted.map(|()| true).map_err(|e| HelmError::Command {
            operation: "upgrade",
            release: release.to_string(),
            message: error_chain(&e),
        })
    }

    async fn upgrade_now(&self, req: &UpgradeRequest) -> Result<(), HelmError> {
        let release = req.release.as_str();
        self.unstick(release).await?;
        let started = std::time::Instant::now();
        let mut out = self.run_upgrade(req).await?;
        if !out.success && is_in_progress(&out.stderr) && self.unstick(release).await? {
            // the decision read the release before the watch delivered its stuck revision
            out = self.run_upgrade(req).await?;
        }
        if !out.success {
            return Err(self.failed("upgrade", release, out));
        }
        tracing::info!(
            module = %release,
            release,
            checksum = %req.checksum,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "helm upgrade done"
        );
        Ok(())
    }

    /// One `helm upgrade --install` with the chart and values of `req`; the release is re-read
    /// from the storage afterwards, whatever the outcome.
    async fn run_upgrade(&self, req: &UpgradeRequest) -> Result<Output, HelmError> {
        let release = req.release.as_str();
        let chart = self.prepare_chart(req).await?;
        let files = chart::write_values(
            &self.settings.tmp_dir,
            release,
            &req.values_yaml,
            &req.checksum,
        )
        .map_err(|e| write_failed(release, "values file", &e))?;
        let mut argv = argv::upgrade(
            self.target(),
            release,
            chart.path(),
            &[files.values.path(), files.checksum.path()],
        );
        if let Some(renderer) = &self.settings.post_renderer {
            argv.extend(argv::post_renderer(self.version, renderer));
        }
        argv.extend(argv::maintenance_label(req.maintenance));
        if self.namespace_missing().await {
            // a namespace of its own for a local tree against a cluster (`--config-file`);
            // never asked otherwise: least-privilege RBAC cannot create namespaces
            argv.push("--create-namespace".into());
        }
        // as upstream: the objects of a release in maintenance carry the label too
        let env: Vec<(OsString, OsString)> = req
            .maintenance
            .then(|| {
                (
                    EXTRA_LABELS_ENV.into(),
                    format!("{MAINTENANCE_LABEL}=").into(),
                )
            })
            .into_iter()
            .collect();
        let limit = self.long_limit();
        let out = (self.run_with_env("upgrade", release, &argv, &env, limit)).await;
        self.refresh(release).await;
        out
    }

    async fn uninstall_now(&self, release: &str) -> Result<(), HelmError> {
        let argv = argv::uninstall(self.target(), release);
        let out = self
            .run("uninstall", release, &argv, self.long_limit())
            .await;
        self.refresh(release).await;
        let out = out?;
        if out.success {
            tracing::info!(module = %release, release, "helm release uninstalled");
            return Ok(());
        }
        if is_not_found(&out.stderr) {
            tracing::debug!(module = %release, release, "no release to uninstall");
            return Ok(());
        }
        Err(self.failed("uninstall", release, out))
    }

    async fn list(&self) -> Result<Vec<String>, HelmError> {
        if let Some(storage) = &self.storage {
            return storage
                .names(self.settings.query_timeout)
                .await
                .map_err(|e| HelmError::List {
                    message: error_chain(&e),
                });
        }
        let argv = argv::list(self.namespace(), self.version);
        let out = self
            .runner
            .run(&argv, self.settings.query_timeout)
            .await
            .map_err(|e| HelmError::List {
                message: e.to_string(),
            })?;
        if !out.success {
            tracing::error!(stderr = %out.stderr, "helm list failed");
            return Err(HelmError::List {
                message: out.stderr,
            });
        }
        names_from_list_json(&out.stdout).map_err(|e| HelmError::List {
            message: format!("unexpected `helm list -o json` output: {e}"),
        })
    }
}

async fn detect_version(runner: &Runner, limit: Duration) -> Result<HelmVersion, BinaryHelmError> {
    let out = runner
        .run(&argv::version(), limit)
        .await
        .map_err(|e| BinaryHelmError::Version {
            message: error_chain(&e),
        })?;
    if !out.success {
        return Err(BinaryHelmError::Version {
            message: out.stderr,
        });
    }
    let version = HelmVersion::parse(&out.stdout).ok_or_else(|| BinaryHelmError::Version {
        message: format!("unexpected output {:?}", out.stdout.trim()),
    })?;
    if !version.is_supported() {
        return Err(BinaryHelmError::Unsupported {
            version: out.stdout.trim().to_string(),
        });
    }
    Ok(version)
}

fn non_empty_namespace(namespace: &str) -> &str {
    if namespace.is_empty() {
        "default"
    } else {
        namespace
    }
}

fn read_failed(release: &str, error: &dyn std::error::Error) -> HelmError {
    HelmError::Command {
        operation: "read release",
        release: release.to_string(),
        message: error_chain(error),
    }
}

fn write_failed(release: &str, what: &str, error: &std::io::Error) -> HelmError {
    HelmError::Command {
        operation: "upgrade",
        release: release.to_string(),
        message: format!("cannot write the {what}: {error}"),
    }
}

impl Helm for BinaryHelm {
    fn releases(&self) -> BoxFuture<'_, Result<Vec<String>, HelmError>> {
        Box::pin(self.list())
    }

    fn should_upgrade<'a>(
        &'a self,
        req: &'a UpgradeRequest,
    ) -> BoxFuture<'a, Result<bool, HelmError>> {
        Box::pin(self.should_upgrade_now(req))
    }

    fn drift<'a>(
        &'a self,
        req: &'a UpgradeRequest,
    ) -> BoxFuture<'a, Result<Option<Drift>, HelmError>> {
        Box::pin(self.drift_now(req))
    }

    fn release_objects<'a>(
        &'a self,
        release: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<serde_json::Value>>, HelmError>> {
        Box::pin(self.release_objects_now(release))
    }

    fn upgrade<'a>(&'a self, req: &'a UpgradeRequest) -> BoxFuture<'a, Result<(), HelmError>> {
        Box::pin(self.upgrade_now(req))
    }

    fn uninstall<'a>(&'a self, release: &'a str) -> BoxFuture<'a, Result<(), HelmError>> {
        Box::pin(self.uninstall_now(release))
    }

    fn revision<'a>(&'a self, release: &'a str) -> BoxFuture<'a, Result<Option<u64>, HelmError>> {
        Box::pin(async move { Ok(self.current(release).await?.map(|c| c.state.revision)) })
    }
}
