//! [`ConfigMapStore`]: the `addon-operator` ConfigMap as the runtime's [`ConfigBackend`] (load, save with conflict retries, watch for edits by others).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use addon_core::config::Config;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc;

use crate::runtime::edges::{ConfigBackend, ConfigBackendError, ConfigUpdate};

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

/// The config in ConfigMap `name` of `namespace`: every data key is a YAML string (see
/// `addon_core::config`). A missing ConfigMap is an empty config. The watch reports edits whose
/// data differs from what was last loaded, saved or reported, so our own saves are silent.
pub struct ConfigMapStore {
    api: Api<ConfigMap>,
    namespace: String,
    name: String,
    /// Checksum of the data last loaded, saved or reported; `None` before the first.
    last: Arc<Mutex<Option<String>>>,
}

impl ConfigMapStore {
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            last: Arc::default(),
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

    /// Get → Update with the read resourceVersion, or Create; re-read on conflicts.
    async fn write(&self, data: &Data) -> Result<(), ConfigMapError> {
        let pp = PostParams::default();
        for _ in 0..SAVE_ATTEMPTS {
            let current = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| self.get_error(e))?;
            let result = match current {
                Some(mut cm) => {
                    cm.data = Some(data.clone());
                    self.api.replace(&self.name, &pp, &cm).await
                }
                None => {
                    let cm = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(self.name.clone()),
                            namespace: Some(self.namespace.clone()),
                            ..ObjectMeta::default()
                        },
                        data: Some(data.clone()),
                        ..ConfigMap::default()
                    };
                    self.api.create(&pp, &cm).await
                }
            };
            match result {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    tracing::debug!(configmap = %self.name, reason = %status.reason,
                        "ConfigMap changed while saving; re-reading");
                }
                Err(e) => return Err(self.write_error(e)),
            }
        }
        Err(ConfigMapError::Conflicts {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            attempts: SAVE_ATTEMPTS,
        })
    }
}

fn lock(m: &Mutex<Option<String>>) -> MutexGuard<'_, Option<String>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn checksum(data: &Data) -> String {
    let value = serde_json::to_value(data).unwrap_or_default();
    addon_core::jq::checksum(&value)
}

fn parse(data: &Data) -> ConfigUpdate {
    Config::from_data(data).map_err(ConfigBackendError::Parse)
}

impl ConfigBackend for ConfigMapStore {
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
        Box::pin(async move {
            let cm = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| ConfigBackendError::Load(Box::new(self.get_error(e))))?;
            let data = cm.and_then(|cm| cm.data).unwrap_or_default();
            *lock(&self.last) = Some(checksum(&data));
            parse(&data)
        })
    }

    fn save<'a>(&'a self, config: &'a Config) -> BoxFuture<'a, Result<(), ConfigBackendError>> {
        Box::pin(async move {
            let data = config.to_data().map_err(ConfigBackendError::Render)?;
            let sum = checksum(&data);
            // Set before writing: the watch may see our write before the response arrives.
            let previous = lock(&self.last).replace(sum.clone());
            let result = self.write(&data).await;
            if result.is_err() {
                let mut last = lock(&self.last);
                if last.as_deref() == Some(sum.as_str()) {
                    *last = previous;
                }
            }
            result.map_err(|e| ConfigBackendError::Save(Box::new(e)))
        })
    }

    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
        let (tx, rx) = mpsc::unbounded_channel();
        let edits = Edits {
            name: self.name.clone(),
            last: self.last.clone(),
            tx,
            listed: false,
        };
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        tokio::spawn(edits.run(self.api.clone(), config));
        rx
    }
}

/// The watch of the ConfigMap, reporting data changes.
struct Edits {
    name: String,
    last: Arc<Mutex<Option<String>>>,
    tx: mpsc::UnboundedSender<ConfigUpdate>,
    /// Whether the current (re)list has seen the ConfigMap.
    listed: bool,
}

impl Edits {
    async fn run(mut self, api: Api<ConfigMap>, config: watcher::Config) {
        let mut stream = watcher(api, config).default_backoff().into_stream().boxed();
        loop {
            let data = match stream.try_next().await {
                Ok(Some(event)) => match self.data_of(event) {
                    Some(data) => data,
                    None => continue,
                },
                Ok(None) => return,
                Err(error) => {
                    tracing::debug!(configmap = %self.name, %error,
                        "ConfigMap watch interrupted; it restarts by itself");
                    continue;
                }
            };
            if !self.changed(&data) {
                continue;
            }
            tracing::info!(configmap = %self.name, keys = data.len(), "ConfigMap edited");
            if self.tx.send(parse(&data)).is_err() {
                return;
            }
        }
    }

    /// The data an event leaves in the ConfigMap (empty when it is gone).
    fn data_of(&mut self, event: watcher::Event<ConfigMap>) -> Option<Data> {
        match event {
            watcher::Event::Apply(cm) => Some(cm.data.unwrap_or_default()),
            watcher::Event::InitApply(cm) => {
                self.listed = true;
                Some(cm.data.unwrap_or_default())
            }
            watcher::Event::Delete(_) => Some(Data::new()),
            watcher::Event::Init => {
                self.listed = false;
                None
            }
            watcher::Event::InitDone => (!self.listed).then(Data::new),
        }
    }

    /// Records `data` as the latest; false when it is what we knew (or the first we see).
    fn changed(&self, data: &Data) -> bool {
        let sum = checksum(data);
        let mut last = lock(&self.last);
        let known = last.replace(sum.clone());
        known.is_some_and(|k| k != sum)
    }
}
