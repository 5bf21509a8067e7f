//! One resource's objects in (namespace, name) order, kept in a persistent map so that a snapshot
//! is a pointer copy later writes do not change, with a count per namespace.

use std::collections::BTreeMap;

use rpds::RedBlackTreeMapSync;
use serde_json::Value;

/// Where an object is kept: (namespace, name); cluster-scoped objects have the namespace `""`.
pub type ObjectId = (String, String);

/// An immutable view of one resource's objects: cloning it is O(1), and it can be read without
/// any lock while the store goes on writing.
pub type Tree = RedBlackTreeMapSync<ObjectId, Value>;

/// The objects of one resource.
#[derive(Default)]
pub struct Objects {
    tree: Tree,
    per_namespace: BTreeMap<String, usize>,
}

impl Objects {
    /// One object.
    pub fn get(&self, id: &ObjectId) -> Option<&Value> {
        self.tree.get(id)
    }

    /// Puts an object in, replacing the one with the same id.
    pub fn insert(&mut self, id: ObjectId, object: Value) {
        if !self.tree.contains_key(&id) {
            *self.per_namespace.entry(id.0.clone()).or_default() += 1;
        }
        self.tree.insert_mut(id, object);
    }

    /// Takes an object out (nothing happens if it is absent).
    pub fn remove(&mut self, id: &ObjectId) {
        if !self.tree.remove_mut(id) {
            return;
        }
        if let Some(n) = self.per_namespace.get_mut(&id.0) {
            *n -= 1;
            if *n == 0 {
                self.per_namespace.remove(&id.0);
            }
        }
    }

    /// The objects as they are now, unchanged by later writes; O(1).
    pub fn snapshot(&self) -> Tree {
        self.tree.clone()
    }

    /// How many objects there are, in one namespace or in all.
    pub fn count(&self, ns: Option<&str>) -> usize {
        match ns {
            Some(ns) => self.per_namespace.get(ns).copied().unwrap_or(0),
            None => self.tree.size(),
        }
    }

    /// Objects with their ids, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectId, &Value)> {
        self.tree.iter()
    }

    /// Ids in order.
    pub fn keys(&self) -> impl Iterator<Item = &ObjectId> {
        self.tree.keys()
    }

    /// Objects in order.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.tree.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(ns: &str, name: &str) -> ObjectId {
        (ns.to_string(), name.to_string())
    }

    #[test]
    fn counts_follow_inserts_replacements_and_removals_per_namespace() {
        let mut objects = Objects::default();
        objects.insert(id("a", "x"), json!(1));
        objects.insert(id("a", "y"), json!(2));
        objects.insert(id("a", "x"), json!(3));
        objects.insert(id("b", "x"), json!(4));
        assert_eq!(
            (
                objects.count(None),
                objects.count(Some("a")),
                objects.count(Some("b"))
            ),
            (3, 2, 1)
        );
        objects.remove(&id("a", "x"));
        objects.remove(&id("a", "missing"));
        objects.remove(&id("b", "x"));
        assert_eq!(
            (
                objects.count(None),
                objects.count(Some("a")),
                objects.count(Some("b"))
            ),
            (1, 1, 0)
        );
    }

    #[test]
    fn a_snapshot_does_not_see_later_writes() {
        let mut objects = Objects::default();
        objects.insert(id("a", "x"), json!(1));
        let before = objects.snapshot();
        objects.insert(id("a", "x"), json!(2));
        objects.insert(id("a", "y"), json!(3));
        assert_eq!(before.get(&id("a", "x")), Some(&json!(1)));
        assert_eq!(before.size(), 1);
        assert_eq!(objects.get(&id("a", "x")), Some(&json!(2)));
    }
}
