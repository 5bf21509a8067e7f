//! Watches of the kinds of release objects for the release guard: one kube-rs watcher per kind
//! and namespace, narrowed to objects of the operator's releases (`heritage=addon-operator`,
//! the label its post-renderer puts on every release object), keeping no cache; each change
//! goes to the guard's channel until the guard drops it.

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;

use super::discovery::{DiscoveryError, KindResolver};
use crate::runtime::edges::{ObjectChange, WatchedKind};

/// The label every object of the operator's releases carries.
pub const RELEASE_SELECTOR: &str = "heritage=addon-operator";

/// Starts watching `kind`; the watch runs (retrying with backoff) until `changes` is closed.
pub async fn start(
    resolver: &KindResolver,
    kind: &WatchedKind,
    changes: mpsc::Sender<ObjectChange>,
) -> Result<(), DiscoveryError> {
    let resolved = resolver
        .resolve(Some(&kind.api_version), &kind.kind)
        .await?;
    let client = resolver.client().clone();
    let api: Api<DynamicObject> = match (&kind.namespace, resolved.namespaced) {
        (Some(ns), true) => Api::namespaced_with(client, ns, &resolved.resource),
        _ => Api::all_with(client, &resolved.resource),
    };
    tokio::spawn(run(api, kind.clone(), changes));
    Ok(())
}

async fn run(api: Api<DynamicObject>, kind: WatchedKind, changes: mpsc::Sender<ObjectChange>) {
    let config = watcher::Config::default().labels(RELEASE_SELECTOR);
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = changes.closed() => return,
        };
        let (object, deleted) = match event {
            Some(Ok(Event::Apply(o) | Event::InitApply(o))) => (o, false),
            Some(Ok(Event::Delete(o))) => (o, true),
            Some(Ok(Event::Init | Event::InitDone)) => continue,
            Some(Err(error)) => {
                tracing::debug!(kind = %kind.kind, %error, "watching release objects failed; retrying");
                continue;
            }
            None => return,
        };
        let Ok(object) = serde_json::to_value(object) else {
            continue;
        };
        let change = ObjectChange {
            kind: kind.clone(),
            deleted,
            object,
        };
        if changes.send(change).await.is_err() {
            return;
        }
    }
}
