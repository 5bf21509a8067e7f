//! The objects a watch has reported, turning watcher events (including relists after a restart) into Added/Modified/Deleted without duplicates.

use std::collections::{BTreeMap, HashSet};

use addon_core::hook_config::WatchEvent;
use serde_json::Value;

/// What the watcher said, with objects already converted to JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// Added or modified.
    Apply(Value),
    Delete(Value),
    /// A (re)list begins.
    Init,
    InitApply(Value),
    /// The (re)list is complete: objects not listed are gone.
    InitDone,
}

/// The last version of every object reported so far, by uid (or `namespace/name` without one).
#[derive(Debug, Default)]
pub struct KnownObjects {
    objects: BTreeMap<String, Value>,
    relist: Option<Vec<Value>>,
}

impl KnownObjects {
    /// Starts from the objects of the initial list (already returned to the runtime).
    pub fn new(objects: &[Value]) -> Self {
        Self {
            objects: objects.iter().map(|o| (identity(o), o.clone())).collect(),
            relist: None,
        }
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The events to report for `observed`, in order.
    pub fn observe(&mut self, observed: Observed) -> Vec<(WatchEvent, Value)> {
        match observed {
            Observed::Apply(object) => self.apply(object).into_iter().collect(),
            Observed::Delete(object) => self.delete(&object).into_iter().collect(),
            Observed::Init => {
                self.relist = Some(Vec::new());
                Vec::new()
            }
            Observed::InitApply(object) => {
                match self.relist.as_mut() {
                    Some(listed) => listed.push(object),
                    // An InitApply without Init: treat as a plain change.
                    None => return self.apply(object).into_iter().collect(),
                }
                Vec::new()
            }
            Observed::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                self.replace(listed)
            }
        }
    }

    fn apply(&mut self, object: Value) -> Option<(WatchEvent, Value)> {
        let id = identity(&object);
        let event = match self.objects.get(&id) {
            Some(old) if resource_version(old) == resource_version(&object) => return None,
            Some(_) => WatchEvent::Modified,
            None => WatchEvent::Added,
        };
        self.objects.insert(id, object.clone());
        Some((event, object))
    }

    fn delete(&mut self, object: &Value) -> Option<(WatchEvent, Value)> {
        self.objects
            .remove(&identity(object))
            .map(|_| (WatchEvent::Deleted, object.clone()))
    }

    /// A relist: the listed objects are the whole truth.
    fn replace(&mut self, listed: Vec<Value>) -> Vec<(WatchEvent, Value)> {
        let ids: HashSet<String> = listed.iter().map(identity).collect();
        let gone: Vec<String> = self
            .objects
            .keys()
            .filter(|id| !ids.contains(*id))
            .cloned()
            .collect();
        let mut events: Vec<(WatchEvent, Value)> = gone
            .into_iter()
            .filter_map(|id| self.objects.remove(&id))
            .map(|o| (WatchEvent::Deleted, o))
            .collect();
        events.extend(listed.into_iter().filter_map(|o| self.apply(o)));
        events
    }
}

fn identity(object: &Value) -> String {
    let meta = &object["metadata"];
    match meta["uid"].as_str() {
        Some(uid) if !uid.is_empty() => uid.to_string(),
        _ => format!(
            "{}/{}",
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default()
        ),
    }
}

fn resource_version(object: &Value) -> Option<&str> {
    object["metadata"]["resourceVersion"].as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(uid: &str, rv: &str) -> Value {
        json!({"metadata": {"name": format!("n-{uid}"), "namespace": "ns", "uid": uid, "resourceVersion": rv}})
    }

    fn kinds(events: &[(WatchEvent, Value)]) -> Vec<(WatchEvent, String)> {
        events
            .iter()
            .map(|(e, o)| {
                (
                    *e,
                    o["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn an_unchanged_object_in_a_relist_reports_nothing() {
        let mut known = KnownObjects::new(&[obj("a", "1")]);
        assert!(known.observe(Observed::Init).is_empty());
        assert!(known.observe(Observed::InitApply(obj("a", "1"))).is_empty());
        assert!(known.observe(Observed::InitDone).is_empty());
        assert_eq!(known.len(), 1);
    }

    #[test]
    fn a_relist_reports_additions_changes_and_removals_once() {
        let mut known = KnownObjects::new(&[obj("a", "1"), obj("b", "2"), obj("c", "3")]);
        known.observe(Observed::Init);
        known.observe(Observed::InitApply(obj("a", "1")));
        known.observe(Observed::InitApply(obj("b", "5")));
        known.observe(Observed::InitApply(obj("d", "6")));
        let events = known.observe(Observed::InitDone);
        assert_eq!(
            kinds(&events),
            vec![
                (WatchEvent::Deleted, "c".to_string()),
                (WatchEvent::Modified, "b".to_string()),
                (WatchEvent::Added, "d".to_string()),
            ]
        );
        assert_eq!(
            events[0].1,
            obj("c", "3"),
            "a deletion carries the last known object"
        );
    }

    #[test]
    fn watch_events_are_classified_by_what_was_known() {
        let mut known = KnownObjects::default();
        assert_eq!(
            kinds(&known.observe(Observed::Apply(obj("a", "1")))),
            vec![(WatchEvent::Added, "a".to_string())]
        );
        assert!(known.observe(Observed::Apply(obj("a", "1"))).is_empty());
        assert_eq!(
            kinds(&known.observe(Observed::Apply(obj("a", "2")))),
            vec![(WatchEvent::Modified, "a".to_string())]
        );
        assert_eq!(
            kinds(&known.observe(Observed::Delete(obj("a", "3")))),
            vec![(WatchEvent::Deleted, "a".to_string())]
        );
        assert!(known.observe(Observed::Delete(obj("a", "3"))).is_empty());
        assert!(known.is_empty());
    }

    #[test]
    fn an_object_recreated_under_the_same_name_is_deleted_then_added() {
        let mut known = KnownObjects::new(&[obj("old", "1")]);
        let mut recreated = obj("new", "9");
        recreated["metadata"]["name"] = json!("n-old");
        known.observe(Observed::Init);
        known.observe(Observed::InitApply(recreated));
        let events = known.observe(Observed::InitDone);
        assert_eq!(
            kinds(&events),
            vec![
                (WatchEvent::Deleted, "old".to_string()),
                (WatchEvent::Added, "new".to_string())
            ]
        );
    }
}
