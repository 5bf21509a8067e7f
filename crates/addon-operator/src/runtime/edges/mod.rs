//! The runtime's view of the outside world: hook processes, Kubernetes watches, the config
//! store, Helm, the files it reads, jq evaluation, the leader lease, and what the HTTP and
//! webhook servers ask of it; each a small object-safe trait (the ports) with its data types,
//! owned here. The implementations live in `edges/`, which imports this module, never the
//! reverse: hook processes (`exec::hooks`), no cluster (`kube::no_cluster`), the config file and
//! the in-memory config (`config::backend`, `config::memory`), `files::DiskFiles`; Helm, the jq
//! sandbox and the kube-rs watches in their folders.

use std::path::Path;
use std::sync::Arc;

use addon_core::binding_context::{ContextDocument, KeptObject};
use addon_core::config::{Config, ConfigErrors};
use addon_core::discovery::HookFile;
use addon_core::hook_config::{KubernetesBinding, WatchEvent};
use addon_core::hook_output::kube_patch::{KubeOperation, ObjectRef};
use addon_core::names::{HookName, ModuleName};
use addon_core::values::store::HookValues;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

pub mod files;
pub mod helm;
pub mod jq;
pub mod release_objects;
pub mod report;
pub mod status;
pub mod webhook;

pub use addon_core::config_change::ConfigKeyChange;
pub use files::Files;
pub use helm::Helm;
pub use release_objects::{ObjectChange, WatchedKind};
pub use report::{
    AdminEvent, LastError, NoReports, Owner, Reporter, Severity, StatusCondition, StatusUpdate,
    Subject,
};
pub use status::StatusSource;
pub use webhook::{Answerer, Reply};

/// The raw text of the files the hook wrote; parsing belongs to the core.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookOutputs {
    pub config_values_patch: String,
    pub values_patch: String,
    pub metrics: String,
    pub kubernetes_patch: String,
    /// The response file of a webhook run (empty for other runs).
    pub webhook_response: String,
}

/// CPU and memory used by one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResourceUsage {
    pub user: std::time::Duration,
    pub sys: std::time::Duration,
    /// `ru_maxrss`: the peak resident memory of the process or of the largest child it waited
    /// for, in KiB; 0 when unknown, and the metrics leave their gauge alone.
    pub max_rss_kb: u64,
}

/// Whether this replica holds the leader lease (`edges/kube/leader`): a follower's workers take
/// no task.
pub trait Leading: Send + Sync + std::fmt::Debug {
    fn is_leading(&self) -> bool;
}

/// One hook run to make.
#[derive(Debug, Clone)]
pub struct HookRequest<'a> {
    pub module: Option<&'a ModuleName>,
    pub hook: &'a HookFile,
    /// The binding name for log lines.
    pub binding: &'a str,
    pub binding_context: ContextDocument<'a>,
    pub values: &'a HookValues,
    /// A webhook run: the hook gets a response file (see `HookInvocation::webhook_response`).
    pub webhook_response: bool,
}

/// A hook or `enabled` script that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookFailure {
    pub message: String,
    /// What the failed run used (zero when it did not start).
    pub usage: ResourceUsage,
    /// The run was stopped by the hook timeout (`hook_timeouts_total`).
    pub timed_out: bool,
    /// How the process ended (`exit status 3`, `timed out`); empty when it did not start.
    pub exit: String,
    /// The end of what the process wrote to stderr (the exec edge keeps a bounded tail).
    pub stderr_tail: String,
}

impl HookFailure {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            usage: ResourceUsage::default(),
            timed_out: false,
            exit: String::new(),
            stderr_tail: String::new(),
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

/// The answer of an `enabled` script: the `$MODULE_ENABLED_RESULT` content, the last stdout
/// line, and the `$MODULE_ENABLED_REASON` content (why it said `false`, as upstream reads it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnabledAnswer {
    pub result_file: String,
    pub stdout_last_line: String,
    pub reason: String,
    /// What the script's run used.
    pub usage: ResourceUsage,
}

/// The answer of a module's settings check (module-sdk's `hook check`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct SettingsVerdict {
    pub valid: bool,
    pub message: String,
    #[serde(deserialize_with = "null_as_empty")]
    pub warnings: Vec<String>,
}

impl SettingsVerdict {
    pub fn valid() -> Self {
        Self {
            valid: true,
            ..Self::default()
        }
    }
}

/// Go's `null` slice is an empty list.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    use serde::Deserialize as _;
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
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
    /// Asks `program` (a batch executable with `has_settings_check`) whether `settings` (the
    /// module's config section) may be stored. By default every setting is valid.
    fn check_settings<'a>(
        &'a self,
        module: &'a ModuleName,
        program: &'a Path,
        settings: &'a Value,
    ) -> BoxFuture<'a, Result<SettingsVerdict, HookFailure>> {
        let _ = (module, program, settings);
        Box::pin(async { Ok(SettingsVerdict::valid()) })
    }
}

/// Which watch a kubernetes binding owns: the hook's module (none for global hooks), the hook,
/// and the index of the binding in the hook's config.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MonitorKey {
    pub module: Option<ModuleName>,
    pub hook: HookName,
    pub binding: usize,
}

/// Watch events waiting for the intake, at most. A watch whose events the intake has not taken
/// yet waits (its connection holds the rest), so a burst of changes never piles up parsed
/// objects in memory faster than hooks can be queued for them.
pub const KUBE_EVENT_BACKLOG: usize = 512;

/// The channel of watch events, bounded by [`KUBE_EVENT_BACKLOG`]: the sender for the kubernetes
/// edge, the receiver for the runtime.
pub fn kube_event_channel() -> (mpsc::Sender<KubeEvent>, mpsc::Receiver<KubeEvent>) {
    mpsc::channel(KUBE_EVENT_BACKLOG)
}

/// A watch event for a monitor.
#[derive(Debug, Clone)]
pub struct KubeEvent {
    pub key: MonitorKey,
    pub event: WatchEvent,
    /// Parsed once per watch event and shared by every binding the watch reports it to.
    pub object: Arc<Value>,
    /// The object's compact JSON text when the watch keeps full objects: one copy shared by the
    /// watch and every binding it reports to (see [`Listed`]).
    pub kept: Option<KeptObject>,
}

/// An object of a watch's listing as the edge hands it over: parsed, and with its compact JSON
/// text when the watch keeps full objects. A watch shared by several bindings keeps that text
/// once; a binding that keeps full objects holds the same copy instead of making its own.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The object, or only what files it in a cache (`kind`, `metadata` namespace and name) when
    /// `stub` is set.
    pub object: Value,
    pub kept: Option<KeptObject>,
    /// `object` is the identity only and `kept` the whole object: a binding joining a running
    /// watch is listed from the bodies the watch keeps, and a body is parsed only for an object
    /// whose filter result no binding of the same filter holds already.
    pub stub: bool,
}

impl Listed {
    /// The whole object (parsed from the kept text when `object` is a stub).
    pub fn whole(&self) -> std::borrow::Cow<'_, Value> {
        match (&self.kept, self.stub) {
            (Some(kept), true) => std::borrow::Cow::Owned(kept.to_value()),
            _ => std::borrow::Cow::Borrowed(&self.object),
        }
    }
}

impl From<Value> for Listed {
    fn from(object: Value) -> Self {
        Self {
            object,
            kept: None,
            stub: false,
        }
    }
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
/// implementation was built with. Bindings that select the same objects may share one watch;
/// each still gets its own listing and its own events (tagged with its key).
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
        pages: mpsc::Sender<Vec<Listed>>,
    ) -> BoxFuture<'a, Result<(), KubeError>> {
        Box::pin(async move {
            let objects = self.start(key, binding).await?;
            // a closed receiver means the caller gave up on the listing
            let _ = pages
                .send(objects.into_iter().map(Listed::from).collect())
                .await;
            Ok(())
        })
    }
    fn stop(&self, key: &MonitorKey);
}

/// Object operations the cluster did not accept, or CRDs it did not establish (the kube
/// edge's `PatchError` and `CrdWaitError`).
#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    #[error(transparent)]
    Apply(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    WaitCrds(Box<dyn std::error::Error + Send + Sync>),
}

/// Applies hooks' `$KUBERNETES_PATCH_PATH` operations to the cluster.
pub trait ObjectPatches: Send + Sync {
    /// Applies `ops` in order; an error names the failed operation.
    fn apply<'a>(&'a self, ops: &'a [KubeOperation]) -> BoxFuture<'a, Result<(), ObjectsError>>;
    /// The object `target` names as the cluster has it, `None` when absent; without a cluster
    /// there is none.
    fn get_object<'a>(
        &'a self,
        target: &'a ObjectRef,
    ) -> BoxFuture<'a, Result<Option<Value>, ObjectsError>> {
        let _ = target;
        Box::pin(async { Ok(None) })
    }
    /// Reports every change to objects of `kind` to `changes` from now on (the current objects
    /// first), until `changes` is closed; without a cluster nothing is watched.
    fn watch_kind<'a>(
        &'a self,
        kind: &'a WatchedKind,
        changes: mpsc::Sender<ObjectChange>,
    ) -> BoxFuture<'a, Result<(), ObjectsError>> {
        let _ = (kind, changes);
        Box::pin(async { Ok(()) })
    }
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
    pub files: Arc<dyn Files>,
    /// Events and module status for admins ([`NoReports`] without a cluster).
    pub report: Arc<dyn Reporter>,
}
