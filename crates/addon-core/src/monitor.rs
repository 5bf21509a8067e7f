//! The objects one kubernetes binding watches, as a pure cache: filter results computed once per
//! change, events whose filter result did not change suppressed, full objects dropped when the
//! binding does not keep them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::words::Words;

use serde_json::Value;

use crate::binding_context::{IdRef, KeptObject, ObjectAndFilterResult, ObjectId};
use crate::hook_config::{FilteredObject, KubernetesBinding, WatchEvent};
use crate::jq::JqError;

/// The namespace and kind of objects, shared by every object of the cache that has them (fields
/// in `ObjectId`'s order, so that keys sort alike).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    namespace: Arc<str>,
    kind: Arc<str>,
}

/// An object's place in the cache: its [`ObjectId`], as a shared [`Place`] and its own name
/// (24 bytes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    place: Arc<Place>,
    name: Arc<str>,
}

/// A key's parts in its order (namespace, kind, name): how a [`Key`] and an [`IdRef`] compare.
trait IdParts {
    fn parts(&self) -> (&str, &str, &str);
}

impl IdParts for Key {
    fn parts(&self) -> (&str, &str, &str) {
        (&self.place.namespace, &self.place.kind, &self.name)
    }
}

impl IdParts for IdRef<'_> {
    fn parts(&self) -> (&str, &str, &str) {
        (self.namespace, self.kind, self.name)
    }
}

impl<'a> std::borrow::Borrow<dyn IdParts + 'a> for Key {
    fn borrow(&self) -> &(dyn IdParts + 'a) {
        self
    }
}

impl PartialEq for dyn IdParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn IdParts + '_ {}

impl PartialOrd for dyn IdParts + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn IdParts + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl Key {
    fn id(&self) -> ObjectId {
        ObjectId {
            namespace: Arc::clone(&self.place.namespace),
            kind: Arc::clone(&self.place.kind),
            name: Arc::clone(&self.name),
        }
    }
}

/// One object, without its key (40 bytes): the full object only when the binding keeps it, the
/// filter result as its JSON text (a parsed `Value` costs 3–4 times more for a short result),
/// and the checksum that tells whether an event changed what the hook sees: its low 64 bits
/// (a change goes unseen with a chance of 2⁻⁶⁴), which with the key make a B-tree leaf of
/// 716 bytes, in the allocator's 768-byte class (with 128 bits: 804, in the 896-byte class; a
/// watch of 100,000 objects served by 7 bindings keeps 8 MB less).
#[derive(Debug, Clone)]
struct Entry {
    object: Option<KeptObject>,
    filter_result: Option<KeptObject>,
    checksum: [u8; 8],
}

/// The part of a checksum an [`Entry`] keeps.
fn kept_checksum(checksum: u128) -> [u8; 8] {
    let bytes = checksum.to_be_bytes();
    let mut low = [0; 8];
    low.copy_from_slice(&bytes[8..]);
    low
}

impl Entry {
    fn item(&self, key: &Key) -> ObjectAndFilterResult {
        ObjectAndFilterResult {
            id: key.id(),
            object: self.object.clone(),
            filter_result: self.filter_result.clone(),
        }
    }
}

/// A binding's cache being loaded from a listing a page at a time: its entries are collected, then
/// put into the map at once when the listing is complete, which fills the B-tree's nodes (inserted
/// one by one in name order, they stay about 60 % full).
#[derive(Debug)]
pub struct Listing {
    cache: MonitorCache,
    entries: Vec<(Key, Entry)>,
}

impl Listing {
    /// Adds a page: what the binding does not keep of each object (its body, with
    /// `keepFullObjectsInMemory: false`) is dropped here.
    pub fn extend_filtered(&mut self, objects: Vec<(Value, FilteredObject)>) {
        for (object, filtered) in objects {
            self.push(&object, None, &filtered);
        }
    }

    /// Adds one object; `kept` is its compact text when the watch already keeps it (a watch
    /// shared by several bindings keeps one copy for all of them), used instead of a new copy
    /// when the binding keeps full objects.
    pub fn push(&mut self, object: &Value, kept: Option<KeptObject>, filtered: &FilteredObject) {
        let entry = self.cache.entry(object, kept, filtered);
        self.entries.push(entry);
    }

    /// The cache of the complete listing (a later object of the same id wins).
    pub fn done(self) -> MonitorCache {
        let Self { mut cache, entries } = self;
        // sorts (stably), keeps the last entry of a key, and builds full nodes
        cache.entries = entries.into_iter().collect();
        cache
    }
}

/// The current objects of one binding.
#[derive(Debug, Clone)]
pub struct MonitorCache {
    binding: KubernetesBinding,
    entries: BTreeMap<Key, Entry>,
    /// The namespaces and kinds of the keys, one copy of each pair.
    places: Words<Place>,
    /// The place of the last entry made (a listing's objects come a namespace at a time).
    last_place: Option<Arc<Place>>,
}

impl MonitorCache {
    pub fn new(binding: &KubernetesBinding) -> Self {
        Self {
            binding: binding.clone(),
            entries: BTreeMap::new(),
            places: Words::default(),
            last_place: None,
        }
    }

    pub fn binding(&self) -> &KubernetesBinding {
        &self.binding
    }

    /// Replaces the content with a full listing (start of the watch, or a relist), running the
    /// jqFilter in this process (trusted filters only: the operator filters in its sandbox and
    /// calls [`MonitorCache::reset_filtered`]).
    pub fn reset(&mut self, objects: Vec<Value>) -> Result<(), JqError> {
        let filtered = objects
            .into_iter()
            .map(|o| self.binding.filter_object(&o).map(|f| (o, f)))
            .collect::<Result<Vec<_>, _>>()?;
        self.reset_filtered(filtered);
        Ok(())
    }

    /// [`MonitorCache::reset`] with filter results computed by the caller.
    pub fn reset_filtered(&mut self, objects: Vec<(Value, FilteredObject)>) {
        let mut listing = Self::listing(&self.binding);
        listing.extend_filtered(objects);
        *self = listing.done();
    }

    /// An empty cache to load a listing into, a page at a time.
    pub fn listing(binding: &KubernetesBinding) -> Listing {
        Listing {
            cache: Self::new(binding),
            entries: Vec::new(),
        }
    }

    /// Applies one watch event. Returns the item to put in an Event context, or `None` when the
    /// event changes nothing the hook can see (same filter result, or deleting an unknown object).
    /// Runs the jqFilter in this process, see [`MonitorCache::reset`].
    pub fn apply(
        &mut self,
        event: WatchEvent,
        object: Value,
    ) -> Result<Option<ObjectAndFilterResult>, JqError> {
        let filtered = self.binding.filter_object(&object)?;
        Ok(self.apply_filtered(event, object, filtered))
    }

    /// [`MonitorCache::apply`] with the filter result computed by the caller.
    pub fn apply_filtered(
        &mut self,
        event: WatchEvent,
        object: Value,
        filtered: FilteredObject,
    ) -> Option<ObjectAndFilterResult> {
        self.apply_kept(event, &object, None, filtered)
    }

    /// [`MonitorCache::apply_filtered`] with the object's compact text when the watch already
    /// keeps it (see [`Listing::push`]).
    pub fn apply_kept(
        &mut self,
        event: WatchEvent,
        object: &Value,
        kept: Option<KeptObject>,
        filtered: FilteredObject,
    ) -> Option<ObjectAndFilterResult> {
        let (key, entry) = self.entry(object, kept, &filtered);
        // the item is built only for an event the hook sees; it shares the entry's texts
        match event {
            WatchEvent::Deleted => {
                self.entries.remove(&key)?;
                Some(entry.item(&key))
            }
            WatchEvent::Added | WatchEvent::Modified => {
                let unchanged = self
                    .entries
                    .get(&key)
                    .is_some_and(|old| old.checksum == entry.checksum);
                let seen = (!unchanged).then(|| entry.item(&key));
                self.entries.insert(key, entry);
                seen
            }
        }
    }

    /// How one of `caches` sees the object `id` when it holds `kept` as that object's body (the
    /// same copy, not only an equal text): a binding with the same jqFilter over the same watch
    /// takes the filter result from there instead of evaluating the filter again.
    /// `None` when no cache keeps that copy (no bodies kept, or another version of the object).
    pub fn filtered_copy(
        caches: &[&MonitorCache],
        object: &Value,
        kept: &KeptObject,
    ) -> Option<FilteredObject> {
        let id = IdRef::of(object);
        caches.iter().find_map(|c| c.copy_of(&id, kept))
    }

    fn copy_of(&self, id: &IdRef<'_>, kept: &KeptObject) -> Option<FilteredObject> {
        let (key, entry) = self.entries.get_key_value(id as &dyn IdParts)?;
        if !entry.object.as_ref()?.is_same_copy(kept) {
            return None;
        }
        Some(FilteredObject {
            filter_result: entry.filter_result.clone(),
            checksum: u128::from(u64::from_be_bytes(entry.checksum)),
            name: Arc::clone(&key.name),
        })
    }

    /// Every object, in (namespace, kind, name) order.
    pub fn items(&self) -> Vec<ObjectAndFilterResult> {
        self.entries.iter().map(|(k, e)| e.item(k)).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The shared copy of a namespace and kind.
    fn place_of(&mut self, namespace: &str, kind: &str) -> Arc<Place> {
        if let Some(last) = &self.last_place
            && (&*last.namespace, &*last.kind) == (namespace, kind)
        {
            return Arc::clone(last);
        }
        let place = self.places.share(Place {
            namespace: Arc::from(namespace),
            kind: Arc::from(kind),
        });
        self.last_place = Some(Arc::clone(&place));
        place
    }

    fn entry(
        &mut self,
        object: &Value,
        kept: Option<KeptObject>,
        filtered: &FilteredObject,
    ) -> (Key, Entry) {
        let id = IdRef::of(object);
        // the name as the filter result carries it: one copy for the caches that share the result
        let name = if *filtered.name == *id.name {
            Arc::clone(&filtered.name)
        } else {
            Arc::from(id.name)
        };
        let key = Key {
            place: self.place_of(id.namespace, id.kind),
            name,
        };
        let entry = Entry {
            object: self
                .binding
                .keep_full_objects_in_memory
                .then(|| kept.unwrap_or_else(|| KeptObject::new(object))),
            filter_result: filtered.filter_result.clone(),
            checksum: kept_checksum(filtered.checksum),
        };
        (key, entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook_config::{HookScope, parse};
    use crate::names::HookName;
    use serde_json::json;

    fn binding(extra: &str) -> KubernetesBinding {
        let text = format!("configVersion: v1\nkubernetes:\n- kind: Pod\n  name: pods\n{extra}");
        let config = parse(&HookName::new("h").unwrap(), HookScope::Global, &text).unwrap();
        config.kubernetes[0].clone()
    }

    fn pod(name: &str, label: &str, rv: &str) -> Value {
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": {"app": label}, "resourceVersion": rv}})
    }

    #[test]
    fn modification_with_the_same_filter_result_is_suppressed() {
        let mut cache = MonitorCache::new(&binding("  jqFilter: .metadata.labels\n"));
        cache.reset(vec![pod("a", "x", "1")]).unwrap();
        assert!(
            cache
                .apply(WatchEvent::Modified, pod("a", "x", "2"))
                .unwrap()
                .is_none()
        );
        let fired = cache
            .apply(WatchEvent::Modified, pod("a", "y", "3"))
            .unwrap()
            .unwrap();
        assert_eq!(fired.filter_result.unwrap().to_value(), json!({"app": "y"}));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn without_a_filter_every_change_of_the_object_fires() {
        let mut cache = MonitorCache::new(&binding(""));
        cache.reset(vec![pod("a", "x", "1")]).unwrap();
        assert!(
            cache
                .apply(WatchEvent::Modified, pod("a", "x", "2"))
                .unwrap()
                .is_some()
        );
        assert!(
            cache
                .apply(WatchEvent::Modified, pod("a", "x", "2"))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn delete_of_a_known_object_fires_and_unknown_does_not() {
        let mut cache = MonitorCache::new(&binding(""));
        cache.reset(vec![pod("a", "x", "1")]).unwrap();
        assert!(
            cache
                .apply(WatchEvent::Deleted, pod("b", "x", "1"))
                .unwrap()
                .is_none()
        );
        assert!(
            cache
                .apply(WatchEvent::Deleted, pod("a", "x", "1"))
                .unwrap()
                .is_some()
        );
        assert!(cache.is_empty());
    }

    #[test]
    fn objects_are_not_kept_when_the_binding_says_so() {
        let mut cache = MonitorCache::new(&binding(
            "  jqFilter: .metadata.name\n  keepFullObjectsInMemory: false\n",
        ));
        cache
            .reset(vec![pod("b", "x", "1"), pod("a", "x", "1")])
            .unwrap();
        let items = cache.items();
        assert!(items.iter().all(|i| i.object.is_none()));
        let names: Vec<_> = items.iter().map(|i| &*i.id.name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            items[0].filter_result.clone().unwrap().to_value(),
            json!("a")
        );
    }

    #[test]
    fn a_listing_loaded_a_page_at_a_time_shows_the_same_snapshot_as_a_reset() {
        let binding = binding("  jqFilter: .metadata.labels\n  keepFullObjectsInMemory: false\n");
        let objects = [pod("b", "x", "1"), pod("a", "y", "1"), pod("c", "z", "1")];
        let filtered: Vec<_> = objects
            .iter()
            .map(|o| (o.clone(), binding.filter_object(o).unwrap()))
            .collect();
        let mut whole = MonitorCache::new(&binding);
        whole.reset_filtered(filtered.clone());
        let mut listing = MonitorCache::listing(&binding);
        for page in filtered.chunks(2) {
            listing.extend_filtered(page.to_vec());
        }
        let paged = listing.done();
        assert_eq!(paged.items(), whole.items());
        assert_eq!(paged.len(), 3);
        let mut one_by_one = MonitorCache::new(&binding);
        for (object, filtered) in filtered.clone() {
            one_by_one.apply_filtered(WatchEvent::Added, object, filtered);
        }
        assert_eq!(
            format!("{:?}", paged.entries),
            format!("{:?}", one_by_one.entries)
        );
    }

    #[test]
    fn a_binding_with_the_same_filter_takes_the_result_of_the_same_kept_copy() {
        let b = binding("  jqFilter: .metadata.labels\n");
        let object = pod("a", "x", "1");
        let kept = KeptObject::new(&object);
        let mut cache = MonitorCache::new(&b);
        let filtered = b.filter_object(&object).unwrap();
        cache.apply_kept(
            WatchEvent::Added,
            &object,
            Some(kept.clone()),
            filtered.clone(),
        );
        let copy = MonitorCache::filtered_copy(&[&cache], &object, &kept).unwrap();
        assert_eq!(
            (&copy.filter_result, &copy.name),
            (&filtered.filter_result, &filtered.name)
        );
        assert_eq!(
            kept_checksum(copy.checksum),
            kept_checksum(filtered.checksum)
        );
        let (held, taken) = (filtered.filter_result.unwrap(), copy.filter_result.unwrap());
        assert!(
            held.is_same_copy(&taken),
            "the cache's one copy is handed out"
        );
        // an equal text that is not the kept copy, another object, a lean cache: nothing
        let copy_of = |caches: &[&MonitorCache], object: &Value, kept: &KeptObject| {
            MonitorCache::filtered_copy(caches, object, kept)
        };
        assert!(copy_of(&[&cache], &object, &KeptObject::new(&object)).is_none());
        assert!(copy_of(&[&cache], &pod("b", "x", "1"), &kept).is_none());
        let lean = binding("  jqFilter: .metadata.labels\n  keepFullObjectsInMemory: false\n");
        let mut lean_cache = MonitorCache::new(&lean);
        let f = lean.filter_object(&object).unwrap();
        lean_cache.apply_kept(WatchEvent::Added, &object, Some(kept.clone()), f);
        assert!(copy_of(&[&lean_cache], &object, &kept).is_none());
        // the first cache holding the copy answers
        assert!(copy_of(&[&lean_cache, &cache], &object, &kept).is_some());
    }

    #[test]
    fn a_peer_result_is_found_by_the_objects_own_namespace_kind_and_name() {
        let b = binding("  jqFilter: .metadata.labels\n");
        let mut cache = MonitorCache::new(&b);
        let mut objects = Vec::new();
        for (ns, kind, name) in [("a", "Pod", "x"), ("a", "Pod", "y"), ("b", "Pod", "x")]
            .into_iter()
            .chain([("a", "Job", "x"), ("", "Node", "x")])
        {
            let object = json!({"apiVersion": "v1", "kind": kind,
                "metadata": {"namespace": ns, "name": name, "labels": {"n": format!("{ns}{kind}{name}")}}});
            let kept = KeptObject::new(&object);
            let filtered = b.filter_object(&object).unwrap();
            cache.apply_kept(WatchEvent::Added, &object, Some(kept.clone()), filtered);
            objects.push((object, kept));
        }
        for (object, kept) in &objects {
            let copy = MonitorCache::filtered_copy(&[&cache], object, kept).unwrap();
            let expected = object["metadata"]["labels"].to_string();
            assert_eq!(copy.filter_result.unwrap().text(), expected);
        }
        // another object's kept copy under this object's id: not taken
        assert!(MonitorCache::filtered_copy(&[&cache], &objects[0].0, &objects[1].1).is_none());
        assert_eq!(cache.places.len(), 4, "{:?}", cache.places);
    }

    #[test]
    fn caches_sharing_a_filter_result_share_one_copy_of_the_object_name() {
        let b = binding("  jqFilter: .metadata.labels\n");
        let object = pod("a", "x", "1");
        let filtered = b.filter_object(&object).unwrap();
        let caches: Vec<MonitorCache> = (0..2)
            .map(|_| {
                let mut listing = MonitorCache::listing(&b);
                listing.push(&object, None, &filtered);
                listing.done()
            })
            .collect();
        let names: Vec<Arc<str>> = (caches.iter())
            .filter_map(|c| c.entries.keys().next().map(|k| Arc::clone(&k.name)))
            .collect();
        assert!(Arc::ptr_eq(&names[0], &names[1]) && Arc::ptr_eq(&names[0], &filtered.name));
        assert_eq!(caches[0].items()[0].id, ObjectId::of(&object));
    }

    #[test]
    fn a_lean_binding_keeps_no_object_body() {
        let mut cache = MonitorCache::new(&binding(
            "  jqFilter: .metadata.name\n  keepFullObjectsInMemory: false\n",
        ));
        let mut big = pod("a", "x", "1");
        big["data"] = json!({"payload": "x".repeat(4096)});
        cache.reset(vec![big.clone()]).unwrap();
        let fired = cache.apply(WatchEvent::Modified, big).unwrap();
        assert!(fired.is_none());
        let kept = format!("{:?}", cache.entries);
        assert!(!kept.contains("payload") && kept.len() < 1024, "{kept}");
    }

    #[test]
    fn a_full_binding_shares_one_copy_between_cache_and_snapshot() {
        let mut cache = MonitorCache::new(&binding("  keepFullObjectsInMemory: true\n"));
        cache.reset(vec![pod("a", "x", "1")]).unwrap();
        let snapshot = cache.items();
        let kept = cache.entries.values().next().and_then(|e| e.object.clone());
        let (Some(kept), Some(shown)) = (kept, snapshot[0].object.clone()) else {
            panic!("the full object is kept");
        };
        assert!(kept.is_same_copy(&shown));
        assert_eq!(shown.to_value(), pod("a", "x", "1"));
    }

    #[test]
    fn a_full_binding_keeps_the_object_as_its_json_text() {
        let mut cache = MonitorCache::new(&binding("  keepFullObjectsInMemory: true\n"));
        let mut big = pod("a", "x", "1");
        big["data"] = json!({"payload": "x".repeat(4096)});
        cache.reset(vec![big.clone()]).unwrap();
        let kept = cache.entries.values().next().and_then(|e| e.object.clone());
        let kept = kept.expect("the full object is kept");
        assert_eq!(kept.len(), big.to_string().len());
        assert_eq!(cache.items()[0].to_json(), json!({"object": big}));
    }

    #[test]
    fn a_full_binding_keeps_the_copy_its_watch_already_holds_and_a_lean_one_drops_it() {
        let object = pod("a", "x", "1");
        let watched = KeptObject::new(&object);
        for keep in [true, false] {
            let b = binding(&format!("  keepFullObjectsInMemory: {keep}\n"));
            let filtered = b.filter_object(&object).unwrap();
            let mut listing = MonitorCache::listing(&b);
            listing.push(&object, Some(watched.clone()), &filtered);
            let mut cache = listing.done();
            let listed = cache.items()[0].object.clone();
            assert_eq!(listed.is_some_and(|o| o.is_same_copy(&watched)), keep);
            let mut changed = pod("a", "y", "2");
            changed["data"] = json!({"k": "v"});
            let text = KeptObject::new(&changed);
            let filtered = b.filter_object(&changed).unwrap();
            let fired =
                cache.apply_kept(WatchEvent::Modified, &changed, Some(text.clone()), filtered);
            let object = fired.and_then(|item| item.object);
            assert_eq!(object.is_some_and(|o| o.is_same_copy(&text)), keep);
            let kept = cache.entries.values().next().and_then(|e| e.object.clone());
            assert_eq!(kept.is_some_and(|o| o.is_same_copy(&text)), keep);
        }
    }

    #[test]
    fn objects_share_one_copy_of_their_namespace_and_kind() {
        let mut cache = MonitorCache::new(&binding("  keepFullObjectsInMemory: false\n"));
        cache
            .reset(vec![pod("a", "x", "1"), pod("b", "x", "1")])
            .unwrap();
        cache.apply(WatchEvent::Added, pod("c", "x", "1")).unwrap();
        let keys: Vec<&Key> = cache.entries.keys().collect();
        assert_eq!(keys.len(), 3);
        for key in &keys[1..] {
            assert!(Arc::ptr_eq(&key.place, &keys[0].place));
        }
        assert_eq!(cache.places.len(), 1, "{:?}", cache.places);
    }

    #[test]
    fn an_entry_costs_64_bytes_plus_its_name_and_filter_result() {
        // the map's entries, without the B-tree's slack and the texts they point to
        assert!(size_of::<Key>() + size_of::<Entry>() <= 64);
        let mut cache = MonitorCache::new(&binding(
            "  jqFilter: .metadata.name
",
        ));
        cache.reset(vec![pod("a", "x", "1")]).unwrap();
        let entry = cache.entries.values().next().expect("one entry");
        let kept = entry.filter_result.as_ref().map(KeptObject::len);
        assert_eq!(kept, Some(3), "the filter result is kept as its JSON text");
        assert_eq!(
            cache.items()[0].filter_result.clone().unwrap().to_value(),
            json!("a")
        );
    }
}
