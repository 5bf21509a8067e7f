//! A watch shared by the bindings that select the same objects: what it knows of each scope's objects and the bindings it reports to, behind one lock.
//!
//! An event updates the known objects and reads the sharers in one step, and a binding joins by
//! taking the known objects and becoming a sharer in one step: each change reaches a joining
//! binding either in its listing or as an event after it, never both and never neither.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use addon_core::binding_context::KeptObject;
use addon_core::hook_config::WatchEvent;
use serde_json::Value;

use super::known::{KnownObjects, Observed};
use crate::runtime::edges::MonitorKey;

/// A binding the watch reports to, and whether it keeps full objects.
#[derive(Debug)]
struct Sharer {
    key: MonitorKey,
    full: bool,
}

/// An event to report: the object, and its body as the watch keeps it.
pub(super) type Reported = (WatchEvent, Value, Option<KeptObject>);

/// The state of one shared watch.
#[derive(Debug)]
pub(super) struct Hub {
    sharers: Vec<Sharer>,
    /// The known objects of each scope (a namespace, or `None` for all).
    scopes: BTreeMap<Option<String>, KnownObjects>,
    /// Bodies are kept (some sharer keeps full objects): a binding can join from them. A watch
    /// without bodies has no listing to hand over, so it serves only the binding that started it.
    bodies: bool,
}

/// A hub as the watch's tasks and the registry hold it.
pub(super) type SharedHub = Arc<Mutex<Hub>>;

/// Locks `hub` (a panic while it was held left it consistent: every step is one update).
pub(super) fn lock(hub: &SharedHub) -> MutexGuard<'_, Hub> {
    hub.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hub {
    /// The hub of a watch started for `key`; it keeps bodies when `full`.
    pub(super) fn new(key: MonitorKey, full: bool) -> SharedHub {
        Arc::new(Mutex::new(Self {
            sharers: vec![Sharer { key, full }],
            scopes: BTreeMap::new(),
            bodies: full,
        }))
    }

    /// Whether bodies are kept.
    pub(super) fn keeps_bodies(&self) -> bool {
        self.bodies
    }

    /// Adds `key` as a sharer, when the watch can hand it a listing: the kept bodies of every
    /// scope, by namespace and name, each with the object's identity. `None` when the watch
    /// keeps no bodies.
    pub(super) fn join(&mut self, key: MonitorKey, full: bool) -> Option<Vec<(Value, KeptObject)>> {
        if !self.bodies {
            return None;
        }
        let mut listing: Vec<(&str, &str, Value, &KeptObject)> = self
            .scopes
            .values()
            .flat_map(KnownObjects::bodies)
            .collect();
        listing.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let listing = (listing.into_iter())
            .map(|(_, _, stub, body)| (stub, body.clone()))
            .collect();
        self.sharers.retain(|s| s.key != key);
        self.sharers.push(Sharer { key, full });
        Some(listing)
    }

    /// Removes `key`; whether any sharer is left. Once no sharer keeps full objects, the bodies
    /// are dropped (and the watch takes no more sharers).
    pub(super) fn leave(&mut self, key: &MonitorKey) -> bool {
        self.sharers.retain(|s| &s.key != key);
        if self.bodies && !self.sharers.iter().any(|s| s.full) {
            self.bodies = false;
            self.scopes.values_mut().for_each(KnownObjects::drop_bodies);
        }
        !self.sharers.is_empty()
    }

    /// A scope's watch starts from `known` (empty for a namespace selected later).
    pub(super) fn add_scope(&mut self, scope: Option<String>, mut known: KnownObjects) {
        if !self.bodies && known.keeps_bodies() {
            known.drop_bodies();
        }
        self.scopes.insert(scope, known);
    }

    /// A scope is no longer watched: what it knew is forgotten.
    pub(super) fn remove_scope(&mut self, scope: &Option<String>) {
        self.scopes.remove(scope);
    }

    /// What a scope's watcher said: the events to report, and the sharers to report them to.
    pub(super) fn observe(
        &mut self,
        scope: &Option<String>,
        observed: Observed,
    ) -> (Vec<Reported>, Vec<MonitorKey>) {
        let Some(known) = self.scopes.get_mut(scope) else {
            return (Vec::new(), Vec::new());
        };
        let events: Vec<Reported> = known
            .observe(observed)
            .into_iter()
            .map(|(event, object)| {
                let kept = match event {
                    WatchEvent::Deleted => None,
                    WatchEvent::Added | WatchEvent::Modified => known.body(&object),
                };
                (event, object, kept)
            })
            .collect();
        if events.is_empty() {
            return (events, Vec::new());
        }
        let keys = self.sharers.iter().map(|s| s.key.clone()).collect();
        (events, keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::names::HookName;
    use serde_json::json;

    fn key(hook: &str) -> MonitorKey {
        MonitorKey {
            module: None,
            hook: HookName::new(hook).unwrap(),
            binding: 0,
        }
    }

    fn obj(name: &str, rv: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"),
            "resourceVersion": rv}})
    }

    fn hub(full: bool) -> SharedHub {
        let hub = Hub::new(key("a"), full);
        lock(&hub).add_scope(None, KnownObjects::with_bodies(full));
        hub
    }

    #[test]
    fn a_binding_joining_gets_the_kept_objects_then_every_later_event() {
        let hub = hub(true);
        let mut h = lock(&hub);
        let (events, keys) = h.observe(&None, Observed::Apply(obj("b", "1")));
        assert_eq!((events.len(), keys), (1, vec![key("a")]));
        h.observe(&None, Observed::Apply(obj("a", "1")));
        let listing = h.join(key("b"), false).unwrap();
        let names: Vec<Value> = listing
            .iter()
            .map(|(_, k)| k.to_value()["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, [json!("a"), json!("b")]);
        assert!(
            listing.iter().all(|(stub, k)| {
                let whole = k.to_value();
                *stub == json!({"metadata": {"namespace": "ns", "name": whole["metadata"]["name"]}})
            }),
            "each stub is the id of its body: {listing:?}"
        );
        let (events, keys) = h.observe(&None, Observed::Apply(obj("a", "2")));
        assert_eq!(keys, [key("a"), key("b")]);
        let (event, object, kept) = &events[0];
        assert_eq!(*event, WatchEvent::Modified);
        assert_eq!(
            kept.as_ref().map(KeptObject::to_value).as_ref(),
            Some(object)
        );
        let (events, _) = h.observe(&None, Observed::Delete(obj("a", "3")));
        assert!(matches!(events[..], [(WatchEvent::Deleted, _, None)]));
    }

    #[test]
    fn a_watch_without_bodies_takes_no_sharer_and_drops_them_when_the_last_full_one_leaves() {
        let lean = hub(false);
        assert!(lock(&lean).join(key("b"), true).is_none());
        let full = hub(true);
        let mut h = full.lock().unwrap();
        h.observe(&None, Observed::Apply(obj("a", "1")));
        assert!(h.join(key("b"), false).is_some());
        assert!(h.leave(&key("a")), "b is left");
        assert!(!h.keeps_bodies());
        assert!(h.join(key("c"), true).is_none());
        let (events, keys) = h.observe(&None, Observed::Apply(obj("a", "2")));
        assert_eq!(keys, [key("b")]);
        assert!(events[0].2.is_none());
        assert!(!h.leave(&key("b")));
    }
}
