//! [`KubeWatches`]: the watches of hooks' `kubernetes` bindings, as the runtime's [`KubeEvents`] edge.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use addon_core::hook_config::{KubernetesBinding, NamespaceSelector};
use futures::future::BoxFuture;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::discovery::{DiscoveryError, KindResolver, ResolvedKind};
use super::namespaces::Follower;
use super::watch::{Scope, Selection, Watch, WatchError};
use crate::edges::metrics::Metrics;
use crate::runtime::edges::{KubeError, KubeEvent, KubeEvents, MonitorKey};

/// The watches of kubernetes bindings: `start` lists the matching objects and watches them
/// (one watch per namespace of `namespace.nameSelector` or `namespace.labelSelector`, following
/// namespaces as they gain or lose the labels, else one for all namespaces); events
/// go to the channel given to [`KubeWatches::new`]. Watches restart by themselves (dropped
/// connections, `410 Gone`, API server restarts); a relist reports only real differences.
pub struct KubeWatches {
    resolver: Arc<KindResolver>,
    events: mpsc::Sender<KubeEvent>,
    monitors: Mutex<HashMap<MonitorKey, Vec<AbortHandle>>>,
    metrics: Option<Arc<Metrics>>,
}

impl KubeWatches {
    /// `events` is the sender whose receiver the runtime was built with.
    pub fn new(resolver: Arc<KindResolver>, events: mpsc::Sender<KubeEvent>) -> Self {
        Self {
            resolver,
            events,
            monitors: Mutex::default(),
            metrics: None,
        }
    }

    /// Counts watch errors in `kubernetes_client_watch_errors_total` of `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// How many monitors are running (started and not stopped).
    pub fn running(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<MonitorKey, Vec<AbortHandle>>> {
        self.monitors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the watches; the initial objects go to `pages` a page at a time when given, else
    /// they are returned.
    async fn start_watches(
        &self,
        key: &MonitorKey,
        binding: &KubernetesBinding,
        pages: Option<&mpsc::Sender<Vec<Value>>>,
    ) -> Result<Vec<Value>, WatchError> {
        // One watch per key: a new start replaces the running one.
        self.abort(key);
        let resolved = self
            .resolver
            .resolve(binding.api_version.as_deref(), &binding.kind)
            .await
            .map_err(WatchError::Resolve)?;
        let scopes = self.scopes(binding, &resolved).await?;
        let watch = Watch {
            key: key.clone(),
            binding: binding.name.clone(),
            selection: Selection::of(binding),
            resource: resolved.resource.clone(),
            events: self.events.clone(),
            metrics: self.metrics.clone(),
        };
        let mut objects = Vec::new();
        let mut listed = Vec::new();
        let mut count = 0;
        for scope in scopes {
            // The watcher's own (paged) list is the first snapshot: one list per start.
            let (started, found) = match watch.first_list(scope, pages).await {
                Ok(first) => first,
                Err(e) => {
                    if e.is_not_found() {
                        // The resource went away (a CRD deleted): ask discovery again next time.
                        self.resolver
                            .forget(binding.api_version.as_deref(), &binding.kind);
                    }
                    return Err(e);
                }
            };
            count += started.known.len();
            objects.extend(found);
            listed.push(started);
        }
        let handles = match namespace_labels(binding, &resolved) {
            Some(selector) => {
                let client = self.resolver.client().clone();
                let follower = Follower::new(client, watch, selector, listed);
                vec![tokio::spawn(follower.run()).abort_handle()]
            }
            None => listed
                .into_iter()
                .map(|started| watch.clone().resume(started))
                .collect(),
        };
        if let Some(old) = self.lock().insert(key.clone(), handles) {
            old.iter().for_each(AbortHandle::abort);
        }
        tracing::info!(hook = %key.hook, binding = %binding.name, kind = %resolved.resource.kind,
            objects = count, "kubernetes binding watch started");
        Ok(objects)
    }

    async fn scopes(
        &self,
        binding: &KubernetesBinding,
        resolved: &ResolvedKind,
    ) -> Result<Vec<Scope>, WatchError> {
        let client = self.resolver.client().clone();
        let ar = &resolved.resource;
        if !resolved.namespaced {
            return Ok(vec![Scope {
                api: Api::all_with(client, ar),
                name: None,
            }]);
        }
        let names = match &binding.namespace {
            Some(NamespaceSelector {
                label_selector: Some(selector),
                ..
            }) => Some(self.namespaces_labelled(&selector.to_query()).await?),
            Some(NamespaceSelector {
                name_selector: Some(names),
                ..
            }) => Some(names.iter().cloned().collect::<BTreeSet<_>>()),
            _ => None,
        };
        Ok(match names {
            None => vec![Scope {
                api: Api::all_with(client, ar),
                name: None,
            }],
            Some(names) => names
                .into_iter()
                .map(|ns| Scope {
                    api: Api::namespaced_with(client.clone(), &ns, ar),
                    name: Some(ns),
                })
                .collect(),
        })
    }

    /// Aborts the key's watches; whether there were any.
    fn abort(&self, key: &MonitorKey) -> bool {
        let handles = self.lock().remove(key);
        handles.iter().flatten().for_each(AbortHandle::abort);
        handles.is_some()
    }

    /// `namespace.labelSelector`: the namespaces matching it when the watch starts.
    async fn namespaces_labelled(&self, selector: &str) -> Result<BTreeSet<String>, WatchError> {
        let api: Api<Namespace> = Api::all(self.resolver.client().clone());
        let list = api
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|source| WatchError::ListNamespaces {
                selector: selector.to_string(),
                source,
            })?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect())
    }
}

/// `namespace.labelSelector` of a namespaced kind, as a query (it wins over `nameSelector`).
fn namespace_labels(binding: &KubernetesBinding, resolved: &ResolvedKind) -> Option<String> {
    let selector = binding.namespace.as_ref()?.label_selector.as_ref()?;
    resolved.namespaced.then(|| selector.to_query())
}

impl KubeEvents for KubeWatches {
    fn start<'a>(
        &'a self,
        key: &'a MonitorKey,
        binding: &'a KubernetesBinding,
    ) -> BoxFuture<'a, Result<Vec<Value>, KubeError>> {
        Box::pin(async move {
            self.start_watches(key, binding, None)
                .await
                .map_err(|e| start_error(binding, &e))
        })
    }

    fn start_paged<'a>(
        &'a self,
        key: &'a MonitorKey,
        binding: &'a KubernetesBinding,
        pages: mpsc::Sender<Vec<Value>>,
    ) -> BoxFuture<'a, Result<(), KubeError>> {
        Box::pin(async move {
            self.start_watches(key, binding, Some(&pages))
                .await
                .map(drop)
                .map_err(|e| start_error(binding, &e))
        })
    }

    fn stop(&self, key: &MonitorKey) {
        if self.abort(key) {
            tracing::info!(hook = %key.hook, binding = key.binding, "kubernetes binding watch stopped");
        }
    }
}

fn start_error(binding: &KubernetesBinding, e: &WatchError) -> KubeError {
    if matches!(e, WatchError::Resolve(DiscoveryError::UnknownKind { .. })) {
        tracing::debug!(kind = %binding.kind, "unknown kind; the runtime retries");
    }
    KubeError {
        kind: binding.kind.clone(),
        binding: binding.name.clone(),
        message: addon_core::error::error_chain(e),
    }
}

impl Drop for KubeWatches {
    fn drop(&mut self) {
        for handles in self.lock().values() {
            handles.iter().for_each(AbortHandle::abort);
        }
    }
}
