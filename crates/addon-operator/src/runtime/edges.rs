//! The runtime's view of the outside world: hook processes, Kubernetes watches and the config
//! store, each a small object-safe trait, with the real implementations used by `start`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use addon_core::config::{Config, ConfigErrors};
use addon_core::discovery::HookFile;
use addon_core::error::error_chain;
use addon_core::hook_config::{KubernetesBinding, WatchEvent};
use addon_core::hook_output::kube_patch::KubeOperation;
use addon_core::names::{HookName, ModuleName};
use addon_core::values::store::HookValues;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::edges::config::{ConfigEvent, FileConfigStore, splice};
use crate::edges::exec::hook_run::HookRunSettings;
use crate::edges::exec::hook_run::{
    self, EnabledScriptInvocation, HookInvocation, HookOutputs, HookOwner,
};
use crate::edges::exec::process::ResourceUsage;
use crate::edges::helm::Helm;
use crate::edges::kube::crds::CrdWaitError;
use crate::edges::kube::patcher::PatchError;
pub use addon_core::config_change::ConfigKeyChange;

/// One hook run to make.
#[derive(Debug, Clone)]
pub struct HookRequest<'a> {
    pub module: Option<&'a ModuleName>,
    pub hook: &'a HookFile,
    /// The binding name for log lines.
    pub binding: &'a str,
    pub binding_context: &'a Value,
    pub values: &'a HookValues,
}

/// A hook or `enabled` script that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookFailure {
    pub message: String,
    /// What the failed run used (zero when it did not start).
    pub usage: ResourceUsage,
}

impl HookFailure {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            usage: ResourceUsage::default(),
        }
    }
}

impl From<&str> for HookFailure {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<String> for HookFailure {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

/// A successful hook run: the raw output files and what the run used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookSuccess {
    pub outputs: HookOutputs,
    pub usage: ResourceUsage,
}

/// The answer of an `enabled` script: the `$MODULE_ENABLED_RESULT` content and the last stdout line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnabledAnswer {
    pub result_file: String,
    pub stdout_last_line: String,
}

/// Runs hooks and `enabled` scripts.
pub trait HookExecutor: Send + Sync {
    fn run_hook<'a>(
        &'a self,
        req: HookRequest<'a>,
    ) -> BoxFuture<'a, Result<HookSuccess, HookFailure>>;
    fn run_enabled<'a>(
        &'a self,
        module: &'a ModuleName,
        script: &'a Path,
        values: &'a HookValues,
    ) -> BoxFuture<'a, Result<EnabledAnswer, HookFailure>>;
}

/// Which watch a kubernetes binding owns: the hook's module (none for global hooks), the hook,
/// and the index of the binding in the hook's config.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MonitorKey {
    pub module: Option<ModuleName>,
    pub hook: HookName,
    pub binding: usize,
}

/// A watch event for a monitor.
#[derive(Debug, Clone)]
pub struct KubeEvent {
    pub key: MonitorKey,
    pub event: WatchEvent,
    pub object: Value,
}

/// A watch that could not be started.
#[derive(Debug, Clone, thiserror::Error)]
#[error("start watching {kind} for binding '{binding}': {message}")]
pub struct KubeError {
    pub kind: String,
    pub binding: String,
    pub message: String,
}

/// Starts and stops the watches of kubernetes bindings. Events go to the channel the
/// implementation was built with.
pub trait KubeEvents: Send + Sync {
    /// Starts the watch (idempotent) and returns the objects that exist now.
    fn start<'a>(
        &'a self,
        key: &'a MonitorKey,
        binding: &'a KubernetesBinding,
    ) -> BoxFuture<'a, Result<Vec<Value>, KubeError>>;
    /// [`KubeEvents::start`] handing the objects to `pages` a page at a time, so that the
    /// caller can filter and drop them before the next page arrives.
    fn start_paged<'a>(
        &'a self,
        key: &'a MonitorKey,
        binding: &'a KubernetesBinding,
        pages: mpsc::Sender<Vec<Value>>,
    ) -> BoxFuture<'a, Result<(), KubeError>> {
        Box::pin(async move {
            let objects = self.start(key, binding).await?;
            // a closed receiver means the caller gave up on the listing
            let _ = pages.send(objects).await;
            Ok(())
        })
    }
    fn stop(&self, key: &MonitorKey);
}

/// Object operations the cluster did not accept, or CRDs it did not establish.
#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    #[error(transparent)]
    Apply(#[from] PatchError),
    #[error(transparent)]
    WaitCrds(#[from] CrdWaitError),
}

/// Applies hooks' `$KUBERNETES_PATCH_PATH` operations to the cluster.
pub trait ObjectPatches: Send + Sync {
    /// Applies `ops` in order; an error names the failed operation.
    fn apply<'a>(&'a self, ops: &'a [KubeOperation]) -> BoxFuture<'a, Result<(), ObjectsError>>;
    /// Waits until the API server serves the kinds of the CRDs `names` (a module's `crds/`);
    /// without a cluster there is nothing to wait for.
    fn wait_crds_established<'a>(
        &'a self,
        names: &'a [String],
    ) -> BoxFuture<'a, Result<(), ObjectsError>> {
        let _ = names;
        Box::pin(async { Ok(()) })
    }
}

/// A config store problem.
#[derive(Debug, thiserror::Error)]
pub enum ConfigBackendError {
    #[error("read the config")]
    Load(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the config is invalid: {0}")]
    Parse(ConfigErrors),
    #[error("render the config")]
    Render(#[source] addon_core::config::ConfigError),
    #[error("save the config")]
    Save(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ConfigBackendError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::Load(_) => "config_load",
            Self::Parse(_) => "config_invalid",
            Self::Render(_) => "config_render",
            Self::Save(_) => "config_save",
        }
    }
}

/// A config as the store holds it, parsed (or why it could not be).
pub type ParsedConfig = Result<Config, ConfigBackendError>;

/// What the watch of the config store reports.
#[derive(Debug)]
pub enum ConfigUpdate {
    /// Someone else changed the store. `version` orders reports and saves of one backend (higher
    /// is newer): a report older than a save the writer already applied is skipped.
    Edited { version: u64, config: ParsedConfig },
    /// One of our own writes came back (recognised by its resourceVersion or file content):
    /// nothing to reload.
    OwnWrite,
}

/// The store after a key change was written.
#[derive(Debug)]
pub struct SavedConfig {
    /// The backend's version of this state (see [`ConfigUpdate::Edited`]).
    pub version: u64,
    /// Everything the store holds now: the change plus any edit by others made before it.
    pub stored: ParsedConfig,
}

/// Where the config lives (a local file, or the `addon-operator` ConfigMap). The runtime's
/// config writer is the only caller of `apply`.
pub trait ConfigBackend: Send + Sync {
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>>;
    /// Writes `change` to the current content of the store: only the keys it names, re-read and
    /// re-applied on a conflict. The watch reports this write as [`ConfigUpdate::OwnWrite`] at most.
    fn apply<'a>(
        &'a self,
        change: &'a ConfigKeyChange,
    ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>>;
    /// Edits by others from now on. Called once by the runtime.
    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate>;
}

/// Everything the runtime talks to.
#[derive(Clone)]
pub struct Edges {
    pub hooks: Arc<dyn HookExecutor>,
    pub helm: Arc<dyn Helm>,
    pub kube: Arc<dyn KubeEvents>,
    pub objects: Arc<dyn ObjectPatches>,
    pub config: Arc<dyn ConfigBackend>,
}

// ---- real implementations ---------------------------------------------------------------------

/// Hooks as child processes (the `exec` edge).
pub struct ProcessHooks {
    pub settings: HookRunSettings,
    /// Added to every run (e.g. `KUBECONFIG`).
    pub extra_env: Vec<(String, String)>,
    pub cancel: CancellationToken,
}

impl HookExecutor for ProcessHooks {
    fn run_hook<'a>(
        &'a self,
        req: HookRequest<'a>,
    ) -> BoxFuture<'a, Result<HookSuccess, HookFailure>> {
        Box::pin(async move {
            let owner = req
                .module
                .map_or(HookOwner::Global, |m| HookOwner::Module(m.to_string()));
            let invocation = HookInvocation {
                owner,
                hook_name: req.hook.name.as_str(),
                hook_path: &req.hook.path,
                working_dir: &req.hook.working_dir,
                binding: req.binding,
                binding_context: req.binding_context,
                config_values: &req.values.config_values,
                values: &req.values.values,
                extra_env: &self.extra_env,
                hook_args: &req.hook.args,
            };
            let run = hook_run::run_hook(&self.settings, &invocation, &self.cancel)
                .await
                .map_err(|e| failure(&e))?;
            let usage = &run.process.usage;
            tracing::debug!(
                hook = %req.hook.name,
                binding = req.binding,
                exit = %run.process.exit,
                duration_ms = run.process.duration.as_millis() as u64,
                user_cpu_ms = usage.user.as_millis() as u64,
                sys_cpu_ms = usage.sys.as_millis() as u64,
                max_rss_kb = usage.max_rss_kb,
                "hook run finished"
            );
            match run.outputs {
                Some(outputs) if run.process.succeeded() => Ok(HookSuccess {
                    outputs,
                    usage: *usage,
                }),
                _ => Err(HookFailure {
                    message: format!(
                        "hook '{}' failed ({}): {}",
                        req.hook.name,
                        run.process.exit,
                        run.process.failure_message()
                    ),
                    usage: *usage,
                }),
            }
        })
    }

    fn run_enabled<'a>(
        &'a self,
        module: &'a ModuleName,
        script: &'a Path,
        values: &'a HookValues,
    ) -> BoxFuture<'a, Result<EnabledAnswer, HookFailure>> {
        Box::pin(async move {
            let invocation = EnabledScriptInvocation {
                module: module.as_str(),
                script_path: script,
                config_values: &values.config_values,
                values: &values.values,
                extra_env: &self.extra_env,
            };
            let out = hook_run::run_enabled_script(&self.settings, &invocation, &self.cancel)
                .await
                .map_err(|e| failure(&e))?;
            if !out.process.succeeded() {
                return Err(HookFailure::new(format!(
                    "enabled script of module '{module}' failed ({}): {}",
                    out.process.exit,
                    out.process.failure_message()
                )));
            }
            Ok(EnabledAnswer {
                result_file: out.result.unwrap_or_default(),
                stdout_last_line: out.stdout_last_line.unwrap_or_default(),
            })
        })
    }
}

fn failure(err: &dyn std::error::Error) -> HookFailure {
    HookFailure::new(error_chain(err))
}

/// No cluster: kubernetes bindings see no objects and no events.
pub struct NoCluster;

impl KubeEvents for NoCluster {
    fn start<'a>(
        &'a self,
        key: &'a MonitorKey,
        binding: &'a KubernetesBinding,
    ) -> BoxFuture<'a, Result<Vec<Value>, KubeError>> {
        tracing::info!(
            hook = %key.hook,
            binding = %binding.name,
            kind = %binding.kind,
            "local mode: the binding sees no objects (use --embedded-cluster or --kube-config)"
        );
        Box::pin(async { Ok(Vec::new()) })
    }

    fn stop(&self, _key: &MonitorKey) {}
}

impl ObjectPatches for NoCluster {
    fn apply<'a>(&'a self, ops: &'a [KubeOperation]) -> BoxFuture<'a, Result<(), ObjectsError>> {
        tracing::debug!(
            operations = ops.len(),
            "local mode: the hook's Kubernetes operations are validated, not applied"
        );
        Box::pin(async { Ok(()) })
    }
}

/// The local config file (`--config-file`), parsed with the file format of `addon_core::config`.
pub struct FileConfig {
    store: Arc<FileConfigStore>,
    path: PathBuf,
}

impl FileConfig {
    pub fn new(store: FileConfigStore) -> Self {
        let path = store.path().to_path_buf();
        Self {
            store: Arc::new(store),
            path,
        }
    }

    fn parse(path: &Path, text: &str) -> ParsedConfig {
        Config::from_file(&path.display().to_string(), text).map_err(ConfigBackendError::Parse)
    }
}

impl ConfigBackend for FileConfig {
    /// A missing file is an empty config (like a missing ConfigMap); the first config patch
    /// creates it.
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
        Box::pin(async move {
            match self.store.load().await {
                Ok(Some(text)) => Self::parse(&self.path, &text),
                Ok(None) => {
                    tracing::info!(path = %self.path.display(), "config file does not exist yet: empty config");
                    Ok(Config::empty())
                }
                Err(e) => Err(ConfigBackendError::Load(Box::new(e))),
            }
        })
    }

    fn apply<'a>(
        &'a self,
        change: &'a ConfigKeyChange,
    ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>> {
        Box::pin(async move {
            let edit = |text: &str| {
                splice::patch_text(text, change)
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            };
            let (version, text) = self
                .store
                .apply(edit)
                .await
                .map_err(|e| ConfigBackendError::Save(Box::new(e)))?;
            Ok(SavedConfig {
                version,
                stored: Self::parse(&self.path, &text),
            })
        })
    }

    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut events = self.store.subscribe();
        let path = self.path.clone();
        tokio::spawn(async move {
            loop {
                // Every report carries the whole text: after a lag the next one is newer.
                let event = match events.recv().await {
                    Ok(event) => event,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                };
                let update = match event {
                    ConfigEvent::OwnWrite => ConfigUpdate::OwnWrite,
                    ConfigEvent::Changed { version, text } => ConfigUpdate::Edited {
                        version,
                        config: text
                            .map_err(|e| ConfigBackendError::Load(Box::new(e)))
                            .and_then(|text| Self::parse(&path, &text)),
                    },
                };
                if tx.send(update).is_err() {
                    break;
                }
            }
        });
        rx
    }
}

/// A config that lives only in memory (no `--config-file`): patches from hooks are kept for the
/// life of the process. Tests use it as the fake store: edits by others, failing saves.
#[derive(Default)]
pub struct MemoryConfig {
    state: std::sync::Mutex<MemoryState>,
}

#[derive(Default)]
struct MemoryState {
    config: Config,
    version: u64,
    failing_saves: usize,
    updates: Option<mpsc::UnboundedSender<ConfigUpdate>>,
}

impl MemoryConfig {
    pub fn new(config: Config) -> Self {
        Self {
            state: std::sync::Mutex::new(MemoryState {
                config,
                ..MemoryState::default()
            }),
        }
    }

    /// The config as last saved.
    pub fn current(&self) -> Config {
        lock(&self.state).config.clone()
    }

    /// Simulates an edit by someone else (tests).
    pub fn edit(&self, update: ParsedConfig) {
        let mut st = lock(&self.state);
        if let Ok(config) = &update {
            st.config = config.clone();
        }
        st.version += 1;
        let version = st.version;
        if let Some(tx) = st.updates.as_ref() {
            let _ = tx.send(ConfigUpdate::Edited {
                version,
                config: update,
            });
        }
    }

    /// The next `count` saves fail, as a store answering errors would (tests).
    pub fn fail_next_saves(&self, count: usize) {
        lock(&self.state).failing_saves = count;
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fake store's answer to a save it was told to fail.
#[derive(Debug, thiserror::Error)]
#[error("the config store answered an error (simulated)")]
struct SimulatedSaveError;

impl MemoryConfig {
    fn apply_now(&self, change: &ConfigKeyChange) -> Result<SavedConfig, ConfigBackendError> {
        let mut st = lock(&self.state);
        if st.failing_saves > 0 {
            st.failing_saves -= 1;
            return Err(ConfigBackendError::Save(Box::new(SimulatedSaveError)));
        }
        let mut data = st.config.to_data().map_err(ConfigBackendError::Render)?;
        change
            .apply_to_data(&mut data)
            .map_err(ConfigBackendError::Render)?;
        let config = Config::from_data(&data).map_err(ConfigBackendError::Parse)?;
        st.config = config.clone();
        st.version += 1;
        Ok(SavedConfig {
            version: st.version,
            stored: Ok(config),
        })
    }
}

impl ConfigBackend for MemoryConfig {
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
        let config = self.current();
        Box::pin(async move { Ok(config) })
    }

    fn apply<'a>(
        &'a self,
        change: &'a ConfigKeyChange,
    ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>> {
        let saved = self.apply_now(change);
        Box::pin(async move { saved })
    }

    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.state).updates = Some(tx);
        rx
    }
}
