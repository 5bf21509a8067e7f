//! The objects a watch has reported, turning watcher events (including relists after a restart) into Added/Modified/Deleted without duplicates.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use addon_core::binding_context::KeptObject;
use addon_core::hook_config::WatchEvent;
use addon_core::words::Words;
use serde_json::{Map, Value};

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

/// An object's identity: its uid (a number, as its high and low halves, when it is a UUID in
/// canonical form, as API servers make them), else `namespace/name`. 24 bytes (a `u128` would
/// align the whole record to 16).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Id {
    Uuid(u64, u64),
    Uid(Box<str>),
    Name(Box<str>),
}

impl Id {
    fn of(object: &Value) -> Self {
        let meta = &object["metadata"];
        match meta["uid"].as_str() {
            Some(uid) if !uid.is_empty() => uuid(uid).map_or_else(
                || Self::Uid(uid.into()),
                |n| Self::Uuid((n >> 64) as u64, n as u64),
            ),
            _ => {
                let text = |k: &str| meta[k].as_str().unwrap_or_default().to_string();
                Self::Name(format!("{}/{}", text("namespace"), text("name")).into())
            }
        }
    }

    /// The uid as the object had it.
    fn uid(&self) -> Option<String> {
        match self {
            Self::Uuid(high, low) => Some(uuid_text(u128::from(*high) << 64 | u128::from(*low))),
            Self::Uid(text) => Some(text.to_string()),
            Self::Name(_) => None,
        }
    }
}

/// A UUID in canonical text (lowercase hex, dashed 8-4-4-4-12) as a number; `None` for any other
/// text, which stays text so that it comes back unchanged.
fn uuid(text: &str) -> Option<u128> {
    let digits = text.replace('-', "");
    if digits.len() != 32 {
        return None;
    }
    let number = u128::from_str_radix(&digits, 16).ok()?;
    (uuid_text(number) == text).then_some(number)
}

fn uuid_text(n: u128) -> String {
    let hex = format!("{n:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A `resourceVersion`: a number when it is one in canonical form, else its text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Version {
    Number(u64),
    Text(Box<str>),
}

impl Version {
    fn of(object: &Value) -> Option<Self> {
        let text = object["metadata"]["resourceVersion"].as_str()?;
        Some(match text.parse::<u64>() {
            Ok(n) if n.to_string() == text => Self::Number(n),
            _ => Self::Text(text.into()),
        })
    }

    fn text(&self) -> String {
        match self {
            Self::Number(n) => n.to_string(),
            Self::Text(text) => text.to_string(),
        }
    }
}

/// An object's `apiVersion`, `kind` and namespace, one copy shared by the objects that have the
/// same (in a watch: all of a namespace).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    api_version: Option<Box<str>>,
    kind: Option<Box<str>>,
    namespace: Option<Box<str>>,
}

/// What is remembered of an object between events (the id is the map's key; 48 bytes): what a
/// deletion found only by a relist carries, never its body (the binding's cache keeps what the
/// hook needs; a watch keeping full objects holds them beside, see [`KnownObjects`]).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    place: Arc<Place>,
    name: Option<Box<str>>,
    version: Option<Version>,
}

impl Seen {
    /// The object reduced to what a binding joining its watch files it by: `kind`, `metadata`
    /// `namespace` and `name` (the body beside it is the rest).
    fn id_stub(&self) -> Value {
        let mut meta = Map::new();
        if let Some(namespace) = &self.place.namespace {
            meta.insert(
                "namespace".to_string(),
                Value::String(namespace.to_string()),
            );
        }
        if let Some(name) = &self.name {
            meta.insert("name".to_string(), Value::String(name.to_string()));
        }
        let mut stub = Map::new();
        if let Some(kind) = &self.place.kind {
            stub.insert("kind".to_string(), Value::String(kind.to_string()));
        }
        stub.insert("metadata".to_string(), Value::Object(meta));
        Value::Object(stub)
    }

    /// The object reduced to its identity and version: `apiVersion`, `kind`, `metadata` `name`,
    /// `namespace`, `uid`, `resourceVersion`, as found.
    fn stub(&self, id: &Id) -> Value {
        let put = |map: &mut Map<String, Value>, key: &str, value: Option<String>| {
            if let Some(value) = value {
                map.insert(key.to_string(), Value::String(value));
            }
        };
        let text = |s: &Option<Box<str>>| s.as_deref().map(str::to_string);
        let place = &self.place;
        let mut meta = Map::new();
        put(&mut meta, "name", self.name.as_deref().map(str::to_string));
        put(&mut meta, "namespace", text(&place.namespace));
        put(&mut meta, "uid", id.uid());
        put(
            &mut meta,
            "resourceVersion",
            self.version.as_ref().map(Version::text),
        );
        let mut stub = Map::new();
        put(&mut stub, "apiVersion", text(&place.api_version));
        put(&mut stub, "kind", text(&place.kind));
        stub.insert("metadata".to_string(), Value::Object(meta));
        Value::Object(stub)
    }
}

/// The version of every object reported so far, by uid (or `namespace/name` without one).
#[derive(Debug, Default)]
pub struct KnownObjects {
    objects: BTreeMap<Id, Seen>,
    /// One copy of each (`apiVersion`, `kind`, namespace).
    places: Words<Place>,
    relist: Option<Vec<Value>>,
    /// In a watch keeping full objects only: the body of each object as compact JSON text (one
    /// copy, shared with the caches of the bindings that keep them), to hand a binding joining
    /// the watch its listing. A lean watch pays nothing for it.
    bodies: Option<BTreeMap<Id, KeptObject>>,
}

/// The known set of an initial list read a page at a time: the records are collected, then put
/// into the map at once when the list is complete, which fills the B-tree's nodes (inserted one
/// by one in uid order, which is random, they stay about two-thirds full).
#[derive(Debug, Default)]
pub struct Listing {
    records: Vec<(Id, Seen)>,
    places: Words<Place>,
    bodies: Option<Vec<(Id, KeptObject)>>,
}

impl Listing {
    /// A listing that keeps the objects' bodies when `bodies` is set.
    pub fn new(bodies: bool) -> Self {
        Self {
            bodies: bodies.then(Vec::new),
            ..Self::default()
        }
    }

    /// Remembers more objects of the list (a later record of the same id wins); returns the body
    /// kept of each, in order (all `None` when the listing keeps no bodies).
    pub fn extend(&mut self, objects: &[Value]) -> Vec<Option<KeptObject>> {
        let mut kept = Vec::with_capacity(objects.len());
        for object in objects {
            let id = Id::of(object);
            let body = self.bodies.as_mut().map(|bodies| {
                let body = KeptObject::new(object);
                bodies.push((id.clone(), body.clone()));
                body
            });
            kept.push(body);
            self.records.push((id, seen(&mut self.places, object)));
        }
        kept
    }

    /// The known set of the complete list.
    pub fn done(self) -> KnownObjects {
        KnownObjects {
            // sorts (stably), keeps the last record of an id, and builds full nodes
            objects: self.records.into_iter().collect(),
            places: self.places,
            relist: None,
            bodies: self.bodies.map(|bodies| bodies.into_iter().collect()),
        }
    }
}

/// What is kept of `object`, its place shared through `places`.
fn seen(places: &mut Words<Place>, object: &Value) -> Seen {
    let text = |v: &Value| v.as_str().map(Box::from);
    let place = Place {
        api_version: text(&object["apiVersion"]),
        kind: text(&object["kind"]),
        namespace: text(&object["metadata"]["namespace"]),
    };
    Seen {
        place: places.share(place),
        name: object["metadata"]["name"].as_str().map(Box::from),
        version: Version::of(object),
    }
}

impl KnownObjects {
    /// Starts from the objects of the initial list (already returned to the runtime).
    pub fn new(objects: &[Value]) -> Self {
        let mut listing = Listing::default();
        listing.extend(objects);
        listing.done()
    }

    /// An empty set that keeps bodies when `bodies` is set.
    pub fn with_bodies(bodies: bool) -> Self {
        Self {
            bodies: bodies.then(BTreeMap::new),
            ..Self::default()
        }
    }

    /// Whether the bodies of the objects are kept.
    pub fn keeps_bodies(&self) -> bool {
        self.bodies.is_some()
    }

    /// Stops keeping bodies and drops those kept.
    pub fn drop_bodies(&mut self) {
        self.bodies = None;
    }

    /// The body kept of `object` (the version last reported), when the watch keeps bodies.
    pub fn body(&self, object: &Value) -> Option<KeptObject> {
        self.bodies.as_ref()?.get(&Id::of(object)).cloned()
    }

    /// Every kept body with the object's namespace and name, and its identity as
    /// [`Observed`] objects hold it (`apiVersion`, `kind`, `metadata` name, namespace, uid,
    /// resourceVersion).
    pub fn bodies(&self) -> impl Iterator<Item = (&str, &str, Value, &KeptObject)> {
        self.bodies.iter().flatten().filter_map(|(id, body)| {
            let seen = self.objects.get(id)?;
            let namespace = seen.place.namespace.as_deref().unwrap_or_default();
            let name = seen.name.as_deref().unwrap_or_default();
            Some((namespace, name, seen.id_stub(), body))
        })
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
                    seen(&mut self.places, &object).stub(&Id::of(&object))
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
            .get(&Id::of(object))
            .is_none_or(|old| old.version != Version::of(object))
    }

    fn apply(&mut self, object: Value) -> Option<(WatchEvent, Value)> {
        let id = Id::of(&object);
        let event = match self.objects.get(&id) {
            Some(old) if old.version == Version::of(&object) => {
                return None;
            }
            Some(_) => WatchEvent::Modified,
            None => WatchEvent::Added,
        };
        if let Some(bodies) = &mut self.bodies {
            bodies.insert(id.clone(), KeptObject::new(&object));
        }
        let seen = seen(&mut self.places, &object);
        self.objects.insert(id, seen);
        Some((event, object))
    }

    fn delete(&mut self, object: Value) -> Option<(WatchEvent, Value)> {
        let id = Id::of(&object);
        self.forget_body(&id);
        self.objects
            .remove(&id)
            .map(|_| (WatchEvent::Deleted, object))
    }

    fn forget_body(&mut self, id: &Id) {
        if let Some(bodies) = &mut self.bodies {
            bodies.remove(id);
        }
    }

    /// A relist: the listed objects are the whole truth. A deletion found this way carries the
    /// object's identity only (its body is not kept).
    fn replace(&mut self, listed: Vec<Value>) -> Vec<(WatchEvent, Value)> {
        let ids: HashSet<Id> = listed.iter().map(Id::of).collect();
        let gone: Vec<Id> = self
            .objects
            .keys()
            .filter(|id| !ids.contains(*id))
            .cloned()
            .collect();
        gone.iter().for_each(|id| self.forget_body(id));
        let mut events: Vec<(WatchEvent, Value)> = gone
            .into_iter()
            .filter_map(|id| self.objects.remove(&id).map(|seen| seen.stub(&id)))
            .map(|stub| (WatchEvent::Deleted, stub))
            .collect();
        events.extend(listed.into_iter().filter_map(|o| self.apply(o)));
        events
    }
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

    #[test]
    fn a_relist_deletion_gives_back_uid_and_version_exactly_as_they_were() {
        let uuid = "0b8f9d3e-5c1a-4f2e-9d7b-00a1b2c3d4e5";
        let odd = [
            ("ABC-not-a-uuid", "007"),
            (uuid, "12"),
            ("0B8F9D3E-5C1A-4F2E-9D7B-00A1B2C3D4E5", "x1"),
        ];
        for (uid, rv) in odd {
            let mut known = KnownObjects::new(&[obj(uid, rv)]);
            known.observe(Observed::Init);
            let events = known.observe(Observed::InitDone);
            assert_eq!(events, vec![(WatchEvent::Deleted, obj(uid, rv))]);
        }
        assert_eq!(
            Id::of(&obj(uuid, "1")),
            Id::Uuid(0x0b8f9d3e5c1a4f2e, 0x9d7b00a1b2c3d4e5)
        );
    }

    #[test]
    fn objects_share_one_copy_of_api_version_kind_and_namespace() {
        let typed = |uid: &str| {
            let mut o = obj(uid, "1");
            o["apiVersion"] = json!("v1");
            o["kind"] = json!("ConfigMap");
            o
        };
        let known = KnownObjects::new(&[typed("a"), typed("b")]);
        let seen: Vec<&Seen> = known.objects.values().collect();
        assert!(Arc::ptr_eq(&seen[0].place, &seen[1].place));
        assert_eq!(known.places.len(), 1);
    }

    #[test]
    fn a_known_object_costs_72_bytes_plus_its_name() {
        // the map's entries (id and what is seen), without the B-tree's slack and the name's text
        assert!(size_of::<Id>() + size_of::<Seen>() <= 72);
    }

    #[test]
    fn a_watch_keeping_bodies_keeps_the_latest_one_and_can_drop_them() {
        let mut listing = Listing::new(true);
        let kept = listing.extend(&[obj("a", "1")]);
        let mut known = listing.done();
        let first = known.body(&obj("a", "1"));
        assert!(first.is_some() && first == kept[0], "{kept:?}");
        known.observe(Observed::Apply(obj("a", "2")));
        let latest = known.body(&obj("a", "2")).map(|b| b.to_value());
        assert_eq!(latest, Some(obj("a", "2")));
        let listed: Vec<(&str, &str, Value)> = known
            .bodies()
            .map(|(ns, n, stub, _)| (ns, n, stub))
            .collect();
        let stub = json!({"metadata": {"namespace": "ns", "name": "n-a"}});
        assert_eq!(listed, [("ns", "n-a", stub)]);
        known.observe(Observed::Init);
        known.observe(Observed::InitApply(obj("a", "2")));
        known.observe(Observed::InitDone);
        assert!(
            known.body(&obj("a", "2")).is_some(),
            "an unchanged relist keeps the body"
        );
        known.drop_bodies();
        assert!(known.body(&obj("a", "2")).is_none() && known.bodies().next().is_none());
        known.observe(Observed::Apply(obj("a", "3")));
        assert!(known.body(&obj("a", "3")).is_none());
        known.observe(Observed::Delete(obj("a", "3")));
        let mut full = KnownObjects::with_bodies(true);
        full.observe(Observed::Apply(obj("b", "1")));
        full.observe(Observed::Apply(obj("c", "1")));
        full.observe(Observed::Delete(obj("b", "1")));
        full.observe(Observed::Init);
        let events = full.observe(Observed::InitDone);
        assert_eq!(events.len(), 1, "c is gone");
        assert!(
            full.bodies().next().is_none(),
            "no body outlives its object"
        );
        let lean = KnownObjects::new(&[obj("b", "1")]);
        assert!(lean.body(&obj("b", "1")).is_none());
    }

    #[test]
    fn a_listing_gives_the_same_known_set_as_objects_inserted_one_by_one() {
        let objects: Vec<Value> = (0..40)
            .map(|i| obj(&format!("{:02}", (i * 7) % 40), &i.to_string()))
            .chain([obj("05", "99")])
            .collect();
        let mut listing = Listing::default();
        for page in objects.chunks(6) {
            listing.extend(page);
        }
        let listed = listing.done();
        let mut inserted = KnownObjects::default();
        for object in &objects {
            inserted.apply(object.clone());
        }
        assert_eq!(listed.objects, inserted.objects);
        assert_eq!(listed.len(), 40);
        let five = listed
            .objects
            .get(&Id::Uid("05".into()))
            .and_then(|s| s.version.clone());
        assert_eq!(
            five,
            Some(Version::Number(99)),
            "the later record of an id wins"
        );
    }
}
