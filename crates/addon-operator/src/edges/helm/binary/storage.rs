//! Helm's release storage (Secrets or ConfigMaps labelled `owner=helm`) read through the
//! Kubernetes API: one list, then a watch, into the [`ReleaseCache`] every decision reads.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::cluster::Storage;
use super::release_cache::{Latest, ReleaseCache, Stored, decode, identity};

/// Label selector of helm's storage objects.
const OWNER_HELM: &str = "owner=helm";

/// Why the storage could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StorageError {
    #[error(
        "helm's release storage in namespace '{namespace}' was not listed within {}s{}",
        limit.as_secs(),
        last.as_deref().map(|e| format!(" (last error: {e})")).unwrap_or_default()
    )]
    NotSynced {
        namespace: String,
        limit: Duration,
        last: Option<String>,
    },
    #[error("cannot list the revisions of release '{release}'")]
    List {
        release: String,
        #[source]
        source: kube::Error,
    },
}

/// A storage object kind helm writes releases to.
trait StorageKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The `release` field as helm wrote it (base64 text).
    fn release_field(&self) -> Option<&[u8]>;
}

impl StorageKind for Secret {
    fn release_field(&self) -> Option<&[u8]> {
        self.data
            .as_ref()?
            .get("release")
            .map(|bytes| bytes.0.as_slice())
    }
}

impl StorageKind for ConfigMap {
    fn release_field(&self) -> Option<&[u8]> {
        self.data.as_ref()?.get("release").map(|s| s.as_bytes())
    }
}

struct Inner {
    namespace: String,
    cache: std::sync::Mutex<ReleaseCache>,
    synced: tokio::sync::watch::Sender<bool>,
    last_error: std::sync::Mutex<Option<String>>,
    /// Decisions served from the cache.
    reads: AtomicU64,
    /// Targeted lists sent after the operator's own helm commands.
    lists: AtomicU64,
}

impl Inner {
    fn cache(&self) -> std::sync::MutexGuard<'_, ReleaseCache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_error(&self, error: Option<String>) {
        *self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = error;
    }
}

/// The watched storage of one namespace; the watch stops when this is dropped.
pub(crate) struct StorageWatch {
    inner: Arc<Inner>,
    client: kube::Client,
    storage: Storage,
    task: tokio::task::AbortHandle,
}

impl Drop for StorageWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StorageWatch {
    /// Starts listing and watching `namespace`; reads wait for the first list.
    pub fn start(client: kube::Client, storage: Storage, namespace: &str) -> Self {
        let inner = Arc::new(Inner {
            namespace: namespace.to_string(),
            cache: std::sync::Mutex::new(ReleaseCache::default()),
            synced: tokio::sync::watch::Sender::new(false),
            last_error: std::sync::Mutex::new(None),
            reads: AtomicU64::new(0),
            lists: AtomicU64::new(0),
        });
        let task = match storage {
            Storage::Secrets => spawn_watch::<Secret>(&client, Arc::clone(&inner)),
            Storage::ConfigMaps => spawn_watch::<ConfigMap>(&client, Arc::clone(&inner)),
        };
        Self {
            inner,
            client,
            storage,
            task,
        }
    }

    /// The latest revision of `release` (`None`: no release): one read of the cache, no request.
    pub async fn latest(
        &self,
        release: &str,
        limit: Duration,
    ) -> Result<Option<Latest>, StorageError> {
        self.wait_synced(limit).await?;
        self.inner.reads.fetch_add(1, Ordering::Relaxed);
        Ok(self.inner.cache().latest(release))
    }

    /// Names of every release of the namespace.
    pub async fn names(&self, limit: Duration) -> Result<Vec<String>, StorageError> {
        self.wait_synced(limit).await?;
        Ok(self.inner.cache().names())
    }

    /// Lists `release`'s revisions right after a helm command of this operator changed them, so
    /// the next decision does not wait for (or race) the watch.
    pub async fn refresh(&self, release: &str) -> Result<(), StorageError> {
        self.inner.lists.fetch_add(1, Ordering::Relaxed);
        let (revisions, version) = match self.storage {
            Storage::Secrets => self.list_release::<Secret>(release).await?,
            Storage::ConfigMaps => self.list_release::<ConfigMap>(release).await?,
        };
        self.inner
            .cache()
            .replace_release(release, revisions, version);
        Ok(())
    }

    /// The manifest of `release`'s latest revision (one targeted list; the cache keeps no
    /// manifest text); `None` when there is no release.
    pub async fn latest_manifest(&self, release: &str) -> Result<Option<String>, StorageError> {
        let (revisions, _) = match self.storage {
            Storage::Secrets => self.list_release::<Secret>(release).await?,
            Storage::ConfigMaps => self.list_release::<ConfigMap>(release).await?,
        };
        Ok(revisions
            .into_iter()
            .max_by_key(|r| r.revision)
            .map(|r| r.state.manifest))
    }

    /// `(decisions served, targeted lists sent)` since the start.
    pub fn counters(&self) -> (u64, u64) {
        (
            self.inner.reads.load(Ordering::Relaxed),
            self.inner.lists.load(Ordering::Relaxed),
        )
    }

    async fn list_release<K: StorageKind>(
        &self,
        release: &str,
    ) -> Result<(Vec<Stored>, u64), StorageError> {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.inner.namespace);
        let params = ListParams::default().labels(&format!("{OWNER_HELM},name={release}"));
        let list = api
            .list(&params)
            .await
            .map_err(|source| StorageError::List {
                release: release.to_string(),
                source,
            })?;
        let version = list
            .metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok((list.items.iter().filter_map(stored).collect(), version))
    }

    async fn wait_synced(&self, limit: Duration) -> Result<(), StorageError> {
        let mut synced = self.inner.synced.subscribe();
        if tokio::time::timeout(limit, synced.wait_for(|s| *s))
            .await
            .is_ok_and(|r| r.is_ok())
        {
            return Ok(());
        }
        let last = self
            .inner
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Err(StorageError::NotSynced {
            namespace: self.inner.namespace.clone(),
            limit,
            last,
        })
    }
}

fn spawn_watch<K: StorageKind>(
    client: &kube::Client,
    inner: Arc<Inner>,
) -> tokio::task::AbortHandle {
    let api: Api<K> = Api::namespaced(client.clone(), &inner.namespace);
    tokio::spawn(watch(api, inner)).abort_handle()
}

/// Keeps the cache equal to the storage: the first list (and every re-list) replaces it, then
/// each event updates one revision; errors are retried with backoff and remembered for reads.
async fn watch<K: StorageKind>(api: Api<K>, inner: Arc<Inner>) {
    let config = watcher::Config::default().labels(OWNER_HELM);
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let mut listed = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => listed.clear(),
            Ok(Event::InitApply(object)) => listed.extend(stored(&object)),
            Ok(Event::InitDone) => {
                inner.cache().replace(std::mem::take(&mut listed));
                inner.set_error(None);
                inner.synced.send_replace(true);
            }
            Ok(Event::Apply(object)) => {
                if let Some(revision) = stored(&object) {
                    inner.cache().apply(revision);
                }
            }
            Ok(Event::Delete(object)) => {
                if let Some((release, revision)) =
                    identity(&object.name_any(), object.meta().labels.as_ref())
                {
                    inner
                        .cache()
                        .delete(&release, revision, object_version(&object));
                }
            }
            Err(error) => {
                tracing::warn!(namespace = %inner.namespace, %error, "watching helm's release storage failed; retrying");
                inner.set_error(Some(error.to_string()));
            }
        }
    }
}

/// A storage object decoded; one that is not a readable release is logged and skipped.
fn stored<K: StorageKind>(object: &K) -> Option<Stored> {
    let name = object.name_any();
    let (release, revision) = identity(&name, object.meta().labels.as_ref())?;
    match decode(object.release_field().unwrap_or_default()) {
        Ok(state) => Some(Stored {
            release,
            revision,
            state,
            object_version: object_version(object),
        }),
        Err(error) => {
            tracing::warn!(object = %name, error = %addon_core::error::error_chain(&error), "skipping a helm release revision that cannot be decoded");
            None
        }
    }
}

fn object_version<K: Resource>(object: &K) -> Option<u64> {
    object.meta().resource_version.as_deref()?.parse().ok()
}
