//! Deletion: finalizers, owner-reference garbage collection, CRD and namespace teardown.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{DeleteOptions, State, conflict};
use crate::clock;
use crate::events::EventType;
use crate::meta;
use crate::resources::{ResKey, ResourceInfo, crd_resource};
use crate::status::ApiError;

impl State {
    pub(super) fn delete(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let key = info.key();
        let current = self
            .object(&key, ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(info.qualified(), name))?;
        if opts
            .uid
            .as_deref()
            .is_some_and(|u| Some(u) != meta::uid(&current))
        {
            return Err(conflict(
                info,
                name,
                "Precondition failed: UID in precondition does not match",
            ));
        }
        if opts
            .resource_version
            .as_deref()
            .is_some_and(|rv| Some(rv) != meta::meta_str(&current, "resourceVersion"))
        {
            return Err(conflict(
                info,
                name,
                "Precondition failed: ResourceVersion in precondition does not match",
            ));
        }
        if opts.dry_run {
            return Ok(current);
        }
        if key == ResKey::namespaces() {
            return self.delete_namespace(name);
        }
        if !meta::finalizers(&current).is_empty() {
            return self.mark_deleting(&key, current);
        }
        self.remove(&key, ns, name, opts.orphan)
    }

    /// Sets `deletionTimestamp` (once) on an object that has finalizers.
    pub(super) fn mark_deleting(
        &mut self,
        key: &ResKey,
        current: Value,
    ) -> Result<Value, ApiError> {
        if meta::is_deleting(&current) {
            return Ok(current);
        }
        let mut marked = current.clone();
        meta::set_meta(
            &mut marked,
            "deletionTimestamp",
            json!(clock::now_rfc3339()),
        );
        meta::set_meta(&mut marked, "deletionGracePeriodSeconds", json!(0));
        self.commit(key, EventType::Modified, marked, Some(current))
    }

    /// Removes an object and everything that goes with it (CRD objects, dependents, namespace).
    pub(super) fn remove(
        &mut self,
        key: &ResKey,
        ns: &str,
        name: &str,
        orphan: bool,
    ) -> Result<Value, ApiError> {
        let Some(current) = self.object(key, ns, name).cloned() else {
            return Err(ApiError::not_found(key.resource.clone(), name));
        };
        let removed = self.commit(key, EventType::Deleted, current, None)?;
        let mut queue = vec![(key.clone(), removed.clone(), orphan)];
        while let Some((k, obj, orphan)) = queue.pop() {
            for (dk, dobj) in self.cascade(&k, &obj, orphan)? {
                queue.push((dk, dobj, false));
            }
        }
        Ok(removed)
    }

    /// Follow-up deletions of one removal; returns what was removed in turn.
    fn cascade(
        &mut self,
        key: &ResKey,
        obj: &Value,
        orphan: bool,
    ) -> Result<Vec<(ResKey, Value)>, ApiError> {
        let mut targets: Vec<(ResKey, String, String)> = Vec::new();
        if *key == ResKey::crds()
            && let Some(info) = crd_resource(obj)
        {
            let ids = self
                .objects
                .get(&info.key())
                .map(|m| m.keys().cloned().collect::<Vec<_>>());
            targets.extend(
                ids.unwrap_or_default()
                    .into_iter()
                    .map(|(n, m)| (info.key(), n, m)),
            );
        }
        if !orphan && let Some(uid) = meta::uid(obj) {
            targets.extend(self.orphaned_dependents(uid));
        }
        let mut removed = Vec::new();
        for (k, ns, name) in targets {
            let Some(current) = self.object(&k, &ns, &name).cloned() else {
                continue;
            };
            if meta::finalizers(&current).is_empty() {
                removed.push((
                    k.clone(),
                    self.commit(&k, EventType::Deleted, current, None)?,
                ));
            } else {
                self.mark_deleting(&k, current)?;
            }
        }
        if let Some(ns) = meta::namespace(obj)
            && let Some(gone) = self.try_finalize_namespace(ns)?
        {
            removed.push((ResKey::namespaces(), gone));
        }
        Ok(removed)
    }

    /// Objects owned by `uid` whose owners are now all gone.
    fn orphaned_dependents(&self, uid: &str) -> Vec<(ResKey, String, String)> {
        let owned: Vec<(&ResKey, &(String, String), Vec<String>)> = self
            .objects
            .iter()
            .flat_map(|(k, m)| m.iter().map(move |(id, o)| (k, id, meta::owner_uids(o))))
            .filter(|(_, _, owners)| owners.iter().any(|o| o == uid))
            .collect();
        if owned.is_empty() {
            return Vec::new();
        }
        let live: HashSet<&str> = self
            .objects
            .values()
            .flat_map(|m| m.values())
            .filter_map(meta::uid)
            .collect();
        owned
            .into_iter()
            .filter(|(_, _, owners)| owners.iter().all(|o| !live.contains(o.as_str())))
            .map(|(k, (ns, name), _)| (k.clone(), ns.clone(), name.clone()))
            .collect()
    }

    fn delete_namespace(&mut self, name: &str) -> Result<Value, ApiError> {
        let key = ResKey::namespaces();
        let Some(current) = self.object(&key, "", name).cloned() else {
            return Err(ApiError::not_found("namespaces", name));
        };
        let mut marked = current.clone();
        if !meta::is_deleting(&current) {
            meta::set_meta(
                &mut marked,
                "deletionTimestamp",
                json!(clock::now_rfc3339()),
            );
            meta::ensure_object(&mut marked)
                .insert("status".into(), json!({"phase": "Terminating"}));
            marked = self.commit(&key, EventType::Modified, marked, Some(current))?;
        }
        let contents: Vec<(ResKey, String)> = self
            .objects
            .iter()
            .flat_map(|(k, m)| {
                m.keys()
                    .filter(|(ns, _)| ns == name)
                    .map(move |(_, n)| (k.clone(), n.clone()))
            })
            .collect();
        for (k, obj_name) in contents {
            let Some(obj) = self.object(&k, name, &obj_name).cloned() else {
                continue;
            };
            if meta::finalizers(&obj).is_empty() {
                self.remove(&k, name, &obj_name, false)?;
            } else {
                self.mark_deleting(&k, obj)?;
            }
        }
        Ok(self.try_finalize_namespace(name)?.unwrap_or(marked))
    }

    /// Removes a terminating namespace once it is empty.
    fn try_finalize_namespace(&mut self, ns: &str) -> Result<Option<Value>, ApiError> {
        let key = ResKey::namespaces();
        let Some(namespace) = self.object(&key, "", ns).cloned() else {
            return Ok(None);
        };
        let empty = self.objects.values().all(|m| m.count(Some(ns)) == 0);
        if !meta::is_deleting(&namespace) || !empty {
            return Ok(None);
        }
        self.commit(&key, EventType::Deleted, namespace, None)
            .map(Some)
    }
}
