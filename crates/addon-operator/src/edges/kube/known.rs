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

/// What is remembered of an object between events: its identity and version, never its body
/// (the binding's cache keeps what the hook needs).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    /// `apiVersion`, `kind`, and `metadata` `name`, `namespace`, `uid`, `resourceVersion`, as
    /// found: what a deletion found only by a relist carries.
    fields: [Option<Box<str>>; 6],
}

const TOP: [&str; 2] = ["apiVersion", "kind"];
const META: [&str; 4] = ["name", "namespace", "uid", "resourceVersion"];

impl Seen {
    fn of(object: &Value) -> Self {
        let text = |v: &Value| v.as_str().map(Box::from);
        let mut fields: [Option<Box<str>>; 6] = Default::default();
        for (i, f) in TOP.iter().enumerate() {
            fields[i] = object.get(f).and_then(text);
        }
        for (i, f) in META.iter().enumerate() {
            fields[TOP.len() + i] = object["metadata"].get(f).and_then(text);
        }
        Self { fields }
    }

    fn resource_version(&self) -> Option<&str> {
        self.fields[5].as_deref()
    }

    /// The object reduced to its identity and version.
    fn stub(&self) -> Value {
        let pairs = |names: &[&str], values: &[Option<Box<str>>]| {
            names
                .iter()
                .zip(values)
                .filter_map(|(n, v)| Some((n.to_string(), Value::from(v.as_deref()?))))
                .collect::<serde_json::Map<_, _>>()
        };
        let mut stub = pairs(&TOP, &self.fields[..2]);
        stub.insert(
            "metadata".to_string(),
            Value::Object(pairs(&META, &self.fields[2..])),
        );
        Value::Object(stub)
    }
}

/// The version of every object reported so far, by uid (or `namespace/name` without one).
#[derive(Debug, Default)]
pub struct KnownObjects {
    objects: BTreeMap<String, Seen>,
    relist: Option<Vec<Value>>,
}

impl KnownObjects {
    /// Starts from the objects of the initial list (already returned to the runtime).
    pub fn new(objects: &[Value]) -> Self {
        Self {
            objects: objects.iter().map(|o| (identity(o), Seen::of(o))).collect(),
            relist: None,
        }
    }

    /// Remembers more objects of the initial list.
    pub fn extend(&mut self, objects: &[Value]) {
        self.objects
            .extend(objects.iter().map(|o| (identity(o), Seen::of(o))));
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
            Observed::Delete(object) => self.delete(object).into_iter().collect(),
            Observed::Init => {
                self.relist = Some(Vec::new());
                Vec::new()
            }
            Observed::InitApply(object) => {
                if self.relist.is_none() {
                    // An InitApply without Init: treat as a plain change.
                    return self.apply(object).into_iter().collect();
                }
                // Only changed objects are buffered whole until the relist completes.
                let kept = if self.changed(&object) {
                    object
                } else {
                    Seen::of(&object).stub()
                };
                self.relist.get_or_insert_default().push(kept);
                Vec::new()
            }
            Observed::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                self.replace(listed)
            }
        }
    }

    /// Whether `object` is new or at another version than the one known.
    fn changed(&self, object: &Value) -> bool {
        self.objects
            .get(&identity(object))
            .is_none_or(|old| old.resource_version() != resource_version(object))
    }

    fn apply(&mut self, object: Value) -> Option<(WatchEvent, Value)> {
        let id = identity(&object);
        let event = match self.objects.get(&id) {
            Some(old) if old.resource_version() == resource_version(&object) => {
                return None;
            }
            Some(_) => WatchEvent::Modified,
            None => WatchEvent::Added,
        };
        self.objects.insert(id, Seen::of(&object));
        Some((event, object))
    }

    fn delete(&mut self, object: Value) -> Option<(WatchEvent, Value)> {
        self.objects
            .remove(&identity(&object))
            .map(|_| (WatchEvent::Deleted, object))
    }

    /// A relist: the listed objects are the whole truth. A deletion found this way carries the
    /// object's identity only (its body is not kept).
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
            .map(|seen| (WatchEvent::Deleted, seen.stub()))
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
            "a deletion carries the last known identity and version"
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

    #[test]
    fn no_object_body_is_kept_between_events() {
        let mut big = obj("a", "1");
        big["apiVersion"] = json!("v1");
        big["kind"] = json!("ConfigMap");
        big["data"] = json!({"payload": "x".repeat(2048)});
        big["metadata"]["labels"] = json!({"app": "web"});
        let mut known = KnownObjects::new(&[big]);
        assert!(
            format!("{:?}", known.objects).len() < 400,
            "{:?}",
            known.objects
        );
        known.observe(Observed::Init);
        let events = known.observe(Observed::InitDone);
        let mut stub = obj("a", "1");
        stub["apiVersion"] = json!("v1");
        stub["kind"] = json!("ConfigMap");
        assert_eq!(
            events,
            vec![(WatchEvent::Deleted, stub)],
            "a deletion found by a relist carries identity and version only"
        );
    }

    #[test]
    fn unchanged_objects_of_a_relist_are_not_buffered_whole() {
        let mut big = obj("a", "1");
        big["data"] = json!({"payload": "x".repeat(2048)});
        let mut known = KnownObjects::new(std::slice::from_ref(&big));
        known.observe(Observed::Init);
        known.observe(Observed::InitApply(big));
        let buffered = known.relist.clone().unwrap_or_default();
        assert_eq!(buffered, vec![obj("a", "1")]);
        assert!(known.observe(Observed::InitDone).is_empty());
    }
}
