//! The objects one kubernetes binding watches, as a pure cache: filter results computed once per
//! change, events whose filter result did not change suppressed, full objects dropped when the
//! binding does not keep them.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::binding_context::{ObjectAndFilterResult, ObjectId};
use crate::hook_config::{FilteredObject, KubernetesBinding, WatchEvent};
use crate::jq::JqError;

/// One object, without its id (the map's key): the full object only when the binding keeps it.
#[derive(Debug, Clone)]
struct Entry {
    object: Option<Arc<Value>>,
    filter_result: Option<Arc<Value>>,
    checksum: String,
}

impl Entry {
    fn item(&self, id: &ObjectId) -> ObjectAndFilterResult {
        ObjectAndFilterResult {
            id: id.clone(),
            object: self.object.clone(),
            filter_result: self.filter_result.clone(),
        }
    }
}

/// The current objects of one binding.
#[derive(Debug, Clone)]
pub struct MonitorCache {
    binding: KubernetesBinding,
    entries: BTreeMap<ObjectId, Entry>,
}

impl MonitorCache {
    pub fn new(binding: &KubernetesBinding) -> Self {
        Self {
            binding: binding.clone(),
            entries: BTreeMap::new(),
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
        self.entries = objects
            .into_iter()
            .map(|(object, filtered)| self.entry(object, filtered))
            .collect();
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
        let (id, entry) = self.entry(object, filtered);
        let item = entry.item(&id);
        match event {
            WatchEvent::Deleted => self.entries.remove(&id).map(|_| item),
            WatchEvent::Added | WatchEvent::Modified => {
                let unchanged = self
                    .entries
                    .get(&id)
                    .is_some_and(|old| old.checksum == entry.checksum);
                self.entries.insert(id, entry);
                (!unchanged).then_some(item)
            }
        }
    }

    /// Every object, in (namespace, kind, name) order.
    pub fn items(&self) -> Vec<ObjectAndFilterResult> {
        self.entries.iter().map(|(id, e)| e.item(id)).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// What a binding that does not keep full objects needs of `object` once filtered: `kind`,
    /// `metadata.namespace` and `metadata.name` (see [`ObjectId::of`]).
    pub fn identity_of(object: &Value) -> Value {
        let id = ObjectId::of(object);
        serde_json::json!({
            "kind": id.kind,
            "metadata": {"namespace": id.namespace, "name": id.name},
        })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn entry(&self, object: Value, filtered: FilteredObject) -> (ObjectId, Entry) {
        let id = ObjectId::of(&object);
        let object = self
            .binding
            .keep_full_objects_in_memory
            .then(|| Arc::new(object));
        let entry = Entry {
            object,
            filter_result: filtered.filter_result.map(Arc::new),
            checksum: filtered.checksum,
        };
        (id, entry)
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
        assert_eq!(*fired.filter_result.unwrap(), json!({"app": "y"}));
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
        let names: Vec<_> = items.iter().map(|i| i.id.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(*items[0].filter_result.clone().unwrap(), json!("a"));
    }

    #[test]
    fn a_binding_fed_identities_after_filtering_shows_the_same_snapshot() {
        let binding = binding("  jqFilter: .metadata.labels\n  keepFullObjectsInMemory: false\n");
        let objects = [pod("b", "x", "1"), pod("a", "y", "1")];
        let filtered: Vec<_> = objects
            .iter()
            .map(|o| binding.filter_object(o).unwrap())
            .collect();
        let mut full = MonitorCache::new(&binding);
        full.reset_filtered(objects.iter().cloned().zip(filtered.clone()).collect());
        let mut lean = MonitorCache::new(&binding);
        lean.reset_filtered(
            objects
                .iter()
                .map(MonitorCache::identity_of)
                .zip(filtered)
                .collect(),
        );
        assert_eq!(lean.items(), full.items());
        let identity = MonitorCache::identity_of(&objects[0]);
        assert_eq!(
            identity,
            json!({"kind": "Pod", "metadata": {"namespace": "ns", "name": "b"}})
        );
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
        assert!(Arc::ptr_eq(&kept, &shown));
    }
}
