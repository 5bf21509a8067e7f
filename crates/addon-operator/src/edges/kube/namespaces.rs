//! Following a binding's `namespace.labelSelector`: a watch on namespaces that starts and stops the binding's per-namespace watches as namespaces gain or lose the labels.

use std::collections::{BTreeSet, HashMap};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::AbortHandle;

use super::shared::lock;
use super::watch::{Scope, Started, Watch};

/// The per-namespace watches; dropping this (the follower was aborted) aborts them all.
#[derive(Default)]
struct Children(HashMap<String, AbortHandle>);

impl Drop for Children {
    fn drop(&mut self) {
        self.0.values().for_each(AbortHandle::abort);
    }
}

/// Owns a monitor's per-namespace watches and adds or removes them with the namespaces.
pub(super) struct Follower {
    client: kube::Client,
    watch: Watch,
    selector: String,
    children: Children,
}

impl Follower {
    /// Starts the watches of the namespaces listed by `start` (with their listed objects).
    pub(super) fn new(
        client: kube::Client,
        watch: Watch,
        selector: String,
        listed: Vec<Started>,
    ) -> Self {
        let mut children = Children::default();
        for started in listed {
            if let Some(ns) = started.scope().map(str::to_string) {
                children.0.insert(ns, watch.clone().resume(started));
            }
        }
        Self {
            client,
            watch,
            selector,
            children,
        }
    }

    pub(super) async fn run(mut self) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let config = watcher::Config::default().labels(&self.selector);
        let mut stream = watcher(api, config).default_backoff().into_stream().boxed();
        let mut listing: Option<BTreeSet<String>> = None;
        loop {
            let event = match stream.try_next().await {
                Ok(Some(event)) => event,
                Ok(None) => return,
                Err(error) => {
                    tracing::debug!(selector = %self.selector, %error,
                        "namespace watch interrupted; it restarts by itself");
                    continue;
                }
            };
            match event {
                watcher::Event::Apply(ns) => self.add(name(&ns)),
                watcher::Event::Delete(ns) => self.remove(&name(&ns)),
                watcher::Event::Init => listing = Some(BTreeSet::new()),
                watcher::Event::InitApply(ns) => {
                    listing.get_or_insert_default().insert(name(&ns));
                    self.add(name(&ns));
                }
                watcher::Event::InitDone => {
                    let listed = listing.take().unwrap_or_default();
                    let gone: Vec<String> = self
                        .children
                        .0
                        .keys()
                        .filter(|ns| !listed.contains(*ns))
                        .cloned()
                        .collect();
                    gone.iter().for_each(|ns| self.remove(ns));
                }
            }
        }
    }

    /// A namespace now matches: its objects arrive as `Added` (the new watch knows none).
    fn add(&mut self, ns: String) {
        if ns.is_empty() || self.children.0.contains_key(&ns) {
            return;
        }
        tracing::info!(watch = %self.watch.label, namespace = %ns, "namespace selected; watching it");
        let scope = Scope::namespaced(self.client.clone(), &ns, &self.watch.resource);
        let handle = self.watch.clone().spawn(scope);
        self.children.0.insert(ns, handle);
    }

    /// A namespace no longer matches (or is gone): its watch stops, without events (as upstream).
    fn remove(&mut self, ns: &str) {
        if let Some(handle) = self.children.0.remove(ns) {
            tracing::info!(watch = %self.watch.label, namespace = %ns, "namespace no longer selected");
            handle.abort();
            lock(&self.watch.hub).remove_scope(&Some(ns.to_string()));
        }
    }
}

fn name(ns: &Namespace) -> String {
    ns.metadata.name.clone().unwrap_or_default()
}
