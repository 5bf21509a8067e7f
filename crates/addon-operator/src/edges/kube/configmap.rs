//! [`ConfigMapStore`]: the `addon-operator` ConfigMap as the runtime's [`ConfigBackend`] (load, key-level saves onto the current object with conflict retries, watch for edits by others).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use addon_core::config::Config;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc;

use crate::runtime::edges::{
    ConfigBackend, ConfigBackendError, ConfigKeyChange, ConfigUpdate, ParsedConfig, SavedConfig,
};

/// The upstream default ConfigMap name.
pub const DEFAULT_CONFIGMAP_NAME: &str = "addon-operator";

/// How often a save re-reads the ConfigMap after a `409 Conflict` before giving up.
const SAVE_ATTEMPTS: usize = 5;

/// A ConfigMap problem (wrapped in [`ConfigBackendError`] for the runtime).
#[derive(Debug, thiserror::Error)]
pub enum ConfigMapError {
    #[error("get ConfigMap {namespace}/{name}")]
    Get {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("write ConfigMap {namespace}/{name}")]
    Write {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("write ConfigMap {namespace}/{name}: still conflicting after {attempts} attempts")]
    Conflicts {
        namespace: String,
        name: String,
        attempts: usize,
    },
}

impl ConfigMapError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::Get { .. } => "configmap_get",
            Self::Write { .. } => "configmap_write",
            Self::Conflicts { .. } => "configmap_conflict",
        }
    }
}

type Data = BTreeMap<String, String>;

/// How many resourceVersions of our own writes are remembered until the watch echoes them.
const OWN_WRITES_KEPT: usize = 64;

/// The ConfigMap as the operator last knew it: from a load, a write, or the watch.
#[derive(Debug, Default)]
struct Known {
    /// Grows with every new state; orders watch reports against saves (see `ConfigUpdate`).
    version: u64,
    /// The resourceVersion of `data`; `None` when the ConfigMap did not exist.
    rv: Option<String>,
    data: Data,
    /// resourceVersions our writes returned that the watch has not echoed yet.
    own: VecDeque<String>,
}

impl Known {
    /// Records a state read at `rv`; true when it is newer than what was known.
    fn observe(&mut self, rv: Option<String>, data: Data) -> bool {
        if rv.is_some() && !newer(rv.as_deref(), self.rv.as_deref()) {
            return false;
        }
        let changed = data != self.data;
        self.rv = rv;
        self.data = data;
        if changed {
            self.version += 1;
        }
        changed
    }

    fn wrote(&mut self, rv: Option<String>, data: Data) {
        if let Some(rv) = &rv {
            if self.own.len() == OWN_WRITES_KEPT {
                self.own.pop_front();
            }
            self.own.push_back(rv.clone());
        }
        self.rv = rv;
        self.data = data;
        self.version += 1;
    }

    /// True (and forgotten) when `rv` is the resourceVersion of one of our writes.
    fn is_own(&mut self, rv: Option<&str>) -> bool {
        let Some(pos) = rv.and_then(|rv| self.own.iter().position(|o| o == rv)) else {
            return false;
        };
        self.own.drain(..=pos);
        true
    }
}

/// Whether resourceVersion `a` is later than `b`. Kubernetes resourceVersions are opaque, but
/// every API server (and the emulator) hands out growing integers; anything else compares by
/// equality only.
fn newer(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(a), Ok(b)) => a > b,
            _ => a != b,
        },
    }
}

/// The config in ConfigMap `name` of `namespace`: every data key is a YAML string (see
/// `addon_core::config`). A missing ConfigMap is an empty config. A save writes only the keys of
/// its change onto the ConfigMap as read right before (re-read on conflicts); the watch reports
/// states newer than the last known one, and our own writes (by the resourceVersion they
/// returned) as echoes.
pub struct ConfigMapStore {
    api: Api<ConfigMap>,
    namespace: String,
    name: String,
    /// Held across a whole save, so the watch sees our write only once it is recorded.
    known: Arc<tokio::sync::Mutex<Known>>,
}

impl ConfigMapStore {
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            known: Arc::default(),
        }
    }

    fn get_error(&self, source: kube::Error) -> ConfigMapError {
        ConfigMapError::Get {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    fn write_error(&self, source: kube::Error) -> ConfigMapError {
        ConfigMapError::Write {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// Get → apply `change` to the data read → Update with the read resourceVersion (or Create);
    /// on a conflict, the same change is applied again to a fresh read. Returns the ConfigMap as
    /// stored (`None`: nothing to write, the read one already holds the change).
    async fn write(
        &self,
        known: &mut Known,
        change: &ConfigKeyChange,
    ) -> Result<(Option<String>, Data), ConfigBackendError> {
        let pp = PostParams::default();
        let save = |e: ConfigMapError| ConfigBackendError::Save(Box::new(e));
        for _ in 0..SAVE_ATTEMPTS {
            let current = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| save(self.get_error(e)))?;
            let read_rv = current
                .as_ref()
                .and_then(|cm| cm.metadata.resource_version.clone());
            let read_data = current
                .as_ref()
                .and_then(|cm| cm.data.clone())
                .unwrap_or_default();
            let mut data = read_data.clone();
            change
                .apply_to_data(&mut data)
                .map_err(ConfigBackendError::Render)?;
            if data == read_data {
                known.observe(read_rv.clone(), read_data.clone());
                return Ok((read_rv, read_data));
            }
            let result = match current {
                Some(mut cm) => {
                    cm.data = Some(data);
                    self.api.replace(&self.name, &pp, &cm).await
                }
                None => self.api.create(&pp, &self.new_configmap(data)).await,
            };
            match result {
                Ok(cm) => {
                    let rv = cm.metadata.resource_version;
                    let data = cm.data.unwrap_or_default();
                    known.wrote(rv.clone(), data.clone());
                    return Ok((rv, data));
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    tracing::debug!(configmap = %self.name, reason = %status.reason,
                        "ConfigMap changed while saving; applying the change to a fresh read");
                }
                Err(e) => return Err(save(self.write_error(e))),
            }
        }
        Err(save(ConfigMapError::Conflicts {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            attempts: SAVE_ATTEMPTS,
        }))
    }

    fn new_configmap(&self, data: Data) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..ConfigMap::default()
        }
    }
}

fn parse(data: &Data) -> ParsedConfig {
    Config::from_data(data).map_err(ConfigBackendError::Parse)
}

impl ConfigBackend for ConfigMapStore {
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
        Box::pin(async move {
            let mut known = self.known.lock().await;
            let cm = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| ConfigBackendError::Load(Box::new(self.get_error(e))))?;
            let rv = cm
                .as_ref()
                .and_then(|cm| cm.metadata.resource_version.clone());
            let data = cm.and_then(|cm| cm.data).unwrap_or_default();
            known.observe(rv, data.clone());
            parse(&data)
        })
    }

    fn apply<'a>(
        &'a self,
        change: &'a ConfigKeyChange,
    ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>> {
        Box::pin(async move {
            let mut known = self.known.lock().await;
            let (_, data) = self.write(&mut known, change).await?;
            Ok(SavedConfig {
                version: known.version,
                stored: parse(&data),
            })
        })
    }

    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
        let (tx, rx) = mpsc::unbounded_channel();
        let edits = Edits {
            name: self.name.clone(),
            known: self.known.clone(),
            tx,
            listed: false,
        };
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        tokio::spawn(edits.run(self.api.clone(), config));
        rx
    }
}

/// The watch of the ConfigMap, reporting newer states and echoes of our writes.
struct Edits {
    name: String,
    known: Arc<tokio::sync::Mutex<Known>>,
    tx: mpsc::UnboundedSender<ConfigUpdate>,
    /// Whether the current (re)list has seen the ConfigMap.
    listed: bool,
}

impl Edits {
    async fn run(mut self, api: Api<ConfigMap>, config: watcher::Config) {
        let mut stream = watcher(api, config).default_backoff().into_stream().boxed();
        loop {
            let (rv, data) = match stream.try_next().await {
                Ok(Some(event)) => match self.state_of(event) {
                    Some(state) => state,
                    None => continue,
                },
                Ok(None) => return,
                Err(error) => {
                    tracing::debug!(configmap = %self.name, %error,
                        "ConfigMap watch interrupted; it restarts by itself");
                    continue;
                }
            };
            let Some(update) = self.judge(rv, data).await else {
                continue;
            };
            if self.tx.send(update).is_err() {
                return;
            }
        }
    }

    /// What the store holds after `rv`: an echo of our write, a newer state, or nothing new.
    async fn judge(&self, rv: Option<String>, data: Data) -> Option<ConfigUpdate> {
        let mut known = self.known.lock().await;
        if known.is_own(rv.as_deref()) {
            return Some(ConfigUpdate::OwnWrite);
        }
        if !known.observe(rv, data) {
            return None;
        }
        tracing::info!(configmap = %self.name, keys = known.data.len(), "ConfigMap edited");
        Some(ConfigUpdate::Edited {
            version: known.version,
            config: parse(&known.data),
        })
    }

    /// The resourceVersion and data an event leaves in the ConfigMap (empty when it is gone;
    /// a deletion after a relist has no resourceVersion to compare).
    fn state_of(&mut self, event: watcher::Event<ConfigMap>) -> Option<(Option<String>, Data)> {
        let state = |cm: ConfigMap| (cm.metadata.resource_version, cm.data.unwrap_or_default());
        match event {
            watcher::Event::Apply(cm) => Some(state(cm)),
            watcher::Event::InitApply(cm) => {
                self.listed = true;
                Some(state(cm))
            }
            watcher::Event::Delete(cm) => Some((cm.metadata.resource_version, Data::new())),
            watcher::Event::Init => {
                self.listed = false;
                None
            }
            watcher::Event::InitDone => (!self.listed).then(|| (None, Data::new())),
        }
    }
}
