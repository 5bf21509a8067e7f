//! [`KubeWatches`]: the watches of hooks' `kubernetes` bindings, as the runtime's [`KubeEvents`] edge.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use addon_core::binding_context::KeptObject;

use addon_core::hook_config::{KubernetesBinding, NamespaceSelector};
use futures::future::BoxFuture;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::discovery::{DiscoveryError, KindResolver, ResolvedKind};
use super::namespaces::Follower;
use super::shared::{Hub, SharedHub, lock};
use super::watch::{PAGE, Scope, Selection, Watch, WatchError};
use crate::runtime::edges::{KubeError, KubeEvent, KubeEvents, Listed, MonitorKey};
use crate::runtime::metrics::Metrics;

/// The watches of kubernetes bindings: `start` lists the matching objects and watches them
/// (one watch per namespace of `namespace.nameSelector` or `namespace.labelSelector`, following
/// namespaces as they gain or lose the labels, else one for all namespaces); events
/// go to the channel given to [`KubeWatches::new`]. Watches restart by themselves (dropped
/// connections, `410 Gone`, API server restarts); a relist reports only real differences.
///
/// Bindings that select the same objects (the same resource, namespaces and selectors) share one
/// watch that keeps full objects:
/// a binding starting after the first gets its listing from what the watch holds (no API list),
/// and each event is parsed once and reported to every sharer. The last sharer's stop ends it.
pub struct KubeWatches {
    resolver: Arc<KindResolver>,
    events: mpsc::Sender<KubeEvent>,
    registry: Mutex<Registry>,
    /// One start at a time per selection, so that a second binding joins the first's watch
    /// instead of starting its own while the first lists (one entry per selection ever started:
    /// as many as the tree has distinct bindings).
    gates: Mutex<HashMap<WatchId, Arc<tokio::sync::Mutex<()>>>>,
    metrics: Option<Arc<Metrics>>,
    /// Whether first lists are streaming lists: off once the server refused or ignored one.
    streaming_lists: Arc<AtomicBool>,
}

/// What bindings must have in common to share a watch: the resource, the namespaces and the
/// selectors, all as the API server gets them. Bindings differing only in selectors do not share:
/// a broader watch filtered here would hold objects no binding wants, and field selectors are the
/// server's to evaluate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct WatchId {
    api_version: String,
    plural: String,
    namespaces: Namespaces,
    selection: Selection,
}

/// The namespaces a watch covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Namespaces {
    All,
    Named(BTreeSet<String>),
    /// `namespace.labelSelector`, as a query.
    Labelled(String),
}

impl WatchId {
    fn of(binding: &KubernetesBinding, resolved: &ResolvedKind) -> Self {
        let namespaces = match (resolved.namespaced, &binding.namespace) {
            (false, _) | (true, None) => Namespaces::All,
            (true, Some(ns)) => match (&ns.label_selector, &ns.name_selector) {
                (Some(labels), _) => Namespaces::Labelled(labels.to_query()),
                (None, Some(names)) => Namespaces::Named(names.iter().cloned().collect()),
                (None, None) => Namespaces::All,
            },
        };
        Self {
            api_version: resolved.resource.api_version.clone(),
            plural: resolved.resource.plural.clone(),
            namespaces,
            selection: Selection::of(binding),
        }
    }
}

/// The running watches and the binding each key belongs to.
#[derive(Default)]
struct Registry {
    keys: HashMap<MonitorKey, u64>,
    watches: HashMap<u64, Running>,
    next: u64,
}

/// One running (possibly shared) watch: its tasks abort when it stops.
struct Running {
    id: WatchId,
    hub: SharedHub,
    handles: Vec<AbortHandle>,
}

impl Registry {
    /// Adds `key` to a running watch of `id` that can hand it a listing.
    fn join(
        &mut self,
        key: &MonitorKey,
        id: &WatchId,
        full: bool,
    ) -> Option<Vec<(Value, KeptObject)>> {
        let (number, listing) = self
            .watches
            .iter()
            .filter(|(_, running)| &running.id == id)
            .find_map(|(n, running)| Some((*n, lock(&running.hub).join(key.clone(), full)?)))?;
        self.keys.insert(key.clone(), number);
        Some(listing)
    }

    /// Removes `key` from its watch; the watch's handles when it was the last sharer.
    fn leave(&mut self, key: &MonitorKey) -> Option<Vec<AbortHandle>> {
        let number = self.keys.remove(key)?;
        let running = self.watches.get(&number)?;
        if lock(&running.hub).leave(key) {
            return Some(Vec::new());
        }
        self.watches.remove(&number).map(|r| r.handles)
    }
}

impl KubeWatches {
    /// `events` is the sender whose receiver the runtime was built with.
    pub fn new(resolver: Arc<KindResolver>, events: mpsc::Sender<KubeEvent>) -> Self {
        Self {
            resolver,
            events,
            registry: Mutex::default(),
            gates: Mutex::default(),
            metrics: None,
            streaming_lists: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Counts watch errors in `kubernetes_client_watch_errors_total` of `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// How many monitors are running (started and not stopped).
    pub fn running(&self) -> usize {
        self.lock().keys.len()
    }

    /// How many watches serve them (bindings selecting the same objects share one).
    pub fn watches(&self) -> usize {
        self.lock().watches.len()
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The gate of the starts of `id`.
    fn gate(&self, id: &WatchId) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = self.gates.lock().unwrap_or_else(PoisonError::into_inner);
        gates.entry(id.clone()).or_default().clone()
    }

    /// Starts the binding's watch, or joins a running one of the same objects; the initial
    /// objects go to `pages` a page at a time when given, else they are returned.
    async fn start_watches(
        &self,
        key: &MonitorKey,
        binding: &KubernetesBinding,
        pages: Option<&mpsc::Sender<Vec<Listed>>>,
    ) -> Result<Vec<Value>, WatchError> {
        // One watch per key: a new start replaces the running one.
        self.abort(key);
        let resolved = self
            .resolver
            .resolve(binding.api_version.as_deref(), &binding.kind)
            .await
            .map_err(WatchError::Resolve)?;
        let id = WatchId::of(binding, &resolved);
        let gate = self.gate(&id);
        let _turn = gate.lock().await;
        let full = binding.keep_full_objects_in_memory;
        let joined = self.lock().join(key, &id, full);
        if let Some(listing) = joined {
            tracing::info!(hook = %key.hook, binding = %binding.name, kind = %resolved.resource.kind,
                objects = listing.len(), "kubernetes binding joined a running watch of the same objects");
            return Ok(hand_over(listing, pages).await);
        }
        let scopes = self.scopes(binding, &resolved).await?;
        let hub = Hub::new(key.clone(), full);
        let watch = Watch {
            hub: hub.clone(),
            label: format!("{}:{}", key.hook, binding.name),
            selection: Selection::of(binding),
            resource: resolved.resource.clone(),
            events: self.events.clone(),
            metrics: self.metrics.clone(),
            streaming_lists: Arc::clone(&self.streaming_lists),
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
        {
            let mut registry = self.lock();
            let number = registry.next;
            registry.next += 1;
            registry.keys.insert(key.clone(), number);
            let running = Running { id, hub, handles };
            registry.watches.insert(number, running);
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

    /// Takes the key out of its watch, which stops when no binding is left; whether the key had
    /// one.
    fn abort(&self, key: &MonitorKey) -> bool {
        let handles = self.lock().leave(key);
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
        pages: mpsc::Sender<Vec<Listed>>,
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

/// A joining binding's listing, from the bodies its watch keeps: sent to `pages` a page at a time
/// (each object's identity, and its body, parsed only when the binding's filter needs it) when
/// given, else returned parsed.
async fn hand_over(
    listing: Vec<(Value, KeptObject)>,
    pages: Option<&mpsc::Sender<Vec<Listed>>>,
) -> Vec<Value> {
    let Some(pages) = pages else {
        return listing.iter().map(|(_, kept)| kept.to_value()).collect();
    };
    let mut listing = listing.into_iter().peekable();
    while listing.peek().is_some() {
        let page = listing
            .by_ref()
            .take(PAGE)
            .map(|(stub, kept)| Listed {
                object: stub,
                kept: Some(kept),
                stub: true,
            })
            .collect();
        if pages.send(page).await.is_err() {
            // the caller gave up on the listing
            break;
        }
    }
    Vec::new()
}

impl Drop for KubeWatches {
    fn drop(&mut self) {
        for running in self.lock().watches.values() {
            running.handles.iter().for_each(AbortHandle::abort);
        }
    }
}
