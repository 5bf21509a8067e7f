//! Server-side apply: the applied configuration merged onto the live object, the fields the
//! manager stopped applying removed, and the conflicts with the fields other managers own.

use serde_json::{Value, json};

use crate::clock;
use crate::managed::{
    self, Entry, FieldSet, Writer, compare, config_fields, display, item_matches,
};
use crate::meta;
use crate::patch::apply_merge;
use crate::resources::ResourceInfo;
use crate::status::{ApiError, Cause};

/// The object after `writer` applies `applied` onto `current` (`None`: create). Fields other
/// managers own that the apply would change are a conflict, unless `force` takes them over.
pub fn apply(
    info: &ResourceInfo,
    current: Option<&Value>,
    applied: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApiError> {
    let mut applied = applied.clone();
    meta::remove_meta(&mut applied, "managedFields");
    let sub = writer.subresource.as_deref();
    let fields = config_fields(&managed::owned_part(info, &applied, sub), info.is_custom());
    let mut list = current.map(managed::entries).unwrap_or_default();
    let mine = list.iter().position(|e| e.is(writer));
    let previous = mine.map(|i| list.remove(i));
    let mut object = match current {
        Some(current) => {
            let mut object = current.clone();
            let before = previous
                .as_ref()
                .map(|e| e.fields.clone())
                .unwrap_or_default();
            let others: FieldSet = list.iter().flat_map(|e| e.fields.clone()).collect();
            for path in before.difference(&fields).filter(|p| !others.contains(*p)) {
                remove_path(&mut object, path);
            }
            apply_merge(&mut object, &applied);
            object
        }
        None => applied,
    };
    let old = current.map_or_else(
        || managed::empty_object(info),
        |c| managed::owned_part(info, c, sub),
    );
    let changed = compare(
        &old,
        &managed::owned_part(info, &object, sub),
        info.is_custom(),
    );
    let taken: FieldSet = changed.added.union(&changed.modified).cloned().collect();
    let conflicts = conflicts(&list, &taken);
    if !conflicts.is_empty() && !force {
        return Err(ApiError::ApplyConflict(conflicts));
    }
    for entry in &mut list {
        entry
            .fields
            .retain(|p| !taken.contains(p) && !changed.removed.contains(p));
    }
    let time = match previous {
        Some(p) if p.fields == fields => p.time,
        _ => Some(json!(clock::now_rfc3339())),
    };
    list.push(Entry {
        writer: writer.clone(),
        time,
        fields,
    });
    managed::write_entries(&mut object, list);
    Ok(object)
}

/// A cause for each field another manager owns that `taken` would change.
fn conflicts(others: &[Entry], taken: &FieldSet) -> Vec<Cause> {
    let mut causes = Vec::new();
    for entry in others {
        for path in entry.fields.intersection(taken) {
            let who = &entry.writer;
            let manager = if who.operation == "Update" {
                format!("\"{}\" using {}", who.manager, who.api_version)
            } else {
                format!("\"{}\"", who.manager)
            };
            let field = display(path);
            let message = format!("conflict with {manager}: {field}");
            causes.push(Cause::new("FieldManagerConflict", field, message));
        }
    }
    causes
}

/// Deletes the field (or list element, or set member) a path names, if present.
fn remove_path(target: &mut Value, path: &[String]) {
    let Some((step, rest)) = path.split_first() else {
        return;
    };
    if let Some(name) = step.strip_prefix("f:") {
        let Some(map) = target.as_object_mut() else {
            return;
        };
        if rest.is_empty() {
            map.remove(name);
        } else if let Some(child) = map.get_mut(name) {
            remove_path(child, rest);
        }
        return;
    }
    let Some(items) = target.as_array_mut() else {
        return;
    };
    if let Some(value) = step.strip_prefix("v:") {
        let Ok(value) = serde_json::from_str::<Value>(value) else {
            return;
        };
        items.retain(|i| *i != value);
    } else if rest.is_empty() {
        items.retain(|i| !item_matches(i, step));
    } else if let Some(item) = items.iter_mut().find(|i| item_matches(i, step)) {
        remove_path(item, rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    fn info(group: &str, plural: &str) -> ResourceInfo {
        let reg = Registry::new(std::iter::empty());
        reg.find(group, "v1", plural).unwrap().clone()
    }

    fn by(manager: &str) -> Writer {
        Writer {
            manager: manager.into(),
            operation: "Apply",
            api_version: "v1".into(),
            subresource: None,
        }
    }

    #[test]
    fn fields_a_manager_stops_applying_are_removed() {
        let cm = info("", "configmaps");
        let first = json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"x": "1", "y": "2"}});
        let created = apply(&cm, None, &first, &by("helm"), false).unwrap();
        let mut live = created.clone();
        live["data"]["z"] = json!("kept: set by someone else");
        let second = json!({"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"x": "1"}});
        let out = apply(&cm, Some(&live), &second, &by("helm"), false).unwrap();
        assert_eq!(
            out["data"],
            json!({"x": "1", "z": "kept: set by someone else"})
        );
        assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
        assert_eq!(out["metadata"]["managedFields"][0]["manager"], "helm");
    }

    #[test]
    fn list_elements_are_owned_by_merge_key() {
        let pods = info("", "pods");
        let containers = |names: &[&str]| {
            let list: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "image": "i"}))
                .collect();
            json!({"spec": {"containers": list}})
        };
        let created = apply(&pods, None, &containers(&["a", "b"]), &by("m"), false).unwrap();
        let out = apply(&pods, Some(&created), &containers(&["a"]), &by("m"), false).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "a", "image": "i"}])
        );
    }

    #[test]
    fn an_unchanged_apply_keeps_the_managed_fields_entry() {
        let cm = info("", "configmaps");
        let cfg = json!({"data": {"x": "1"}});
        let created = apply(&cm, None, &cfg, &by("m"), false).unwrap();
        let again = apply(&cm, Some(&created), &cfg, &by("m"), false).unwrap();
        assert_eq!(created, again);
    }

    #[test]
    fn changing_another_managers_field_conflicts_unless_forced() {
        let cm = info("", "configmaps");
        let created = apply(&cm, None, &json!({"data": {"a": "1"}}), &by("alice"), false).unwrap();
        let bob = json!({"data": {"a": "2"}});
        let err = apply(&cm, Some(&created), &bob, &by("bob"), false).unwrap_err();
        assert_eq!(err.code(), 409);
        assert_eq!(err.to_status()["details"]["causes"][0]["field"], ".data.a");
        let same = apply(
            &cm,
            Some(&created),
            &json!({"data": {"a": "1"}}),
            &by("bob"),
            false,
        );
        assert!(same.is_ok(), "the same value is shared, not a conflict");
        let forced = apply(&cm, Some(&created), &bob, &by("bob"), true).unwrap();
        let owners = managed::entries(&forced);
        assert_eq!(owners.len(), 1, "alice lost her only field: {owners:?}");
        assert_eq!(owners[0].writer.manager, "bob");
    }
}
