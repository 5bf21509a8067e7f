//! Server-side apply: per-manager field sets (`managedFields`, FieldsV1) and removal of the fields a
//! manager stopped applying.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::clock;
use crate::meta;
use crate::patch::{list_merge_key, strategic_merge};

/// One owned field: `f:<name>` and `k:<key json>` steps, `.` for a list element itself.
type FieldPath = Vec<String>;

/// The object after `manager` applies `applied` onto `current` (`None`: create).
pub fn apply(current: Option<&Value>, applied: &Value, manager: &str, api_version: &str) -> Value {
    let mut applied = applied.clone();
    meta::remove_meta(&mut applied, "managedFields");
    let fields = field_set(&applied);
    let mut object = match current {
        Some(current) => {
            let mut object = current.clone();
            let before = owned_fields(current, |e| is_apply_by(e, manager));
            let others = owned_fields(current, |e| !is_apply_by(e, manager));
            for path in before.difference(&fields).filter(|p| !others.contains(*p)) {
                remove_path(&mut object, path);
            }
            strategic_merge(&mut object, &applied);
            object
        }
        None => applied,
    };
    record_manager(&mut object, current, manager, api_version, &fields);
    object
}

fn is_apply_by(entry: &Value, manager: &str) -> bool {
    entry.get("manager").and_then(Value::as_str) == Some(manager)
        && entry.get("operation").and_then(Value::as_str) == Some("Apply")
}

/// The union of the field sets of the `managedFields` entries `select` picks.
fn owned_fields(obj: &Value, select: impl Fn(&Value) -> bool) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    let entries = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    for entry in entries.into_iter().flatten().filter(|e| select(e)) {
        if let Some(fields) = entry.get("fieldsV1") {
            decode(fields, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// Writes the manager's entry; an unchanged field set keeps the old entry (and its time).
fn record_manager(
    object: &mut Value,
    current: Option<&Value>,
    manager: &str,
    api_version: &str,
    fields: &BTreeSet<FieldPath>,
) {
    let mut entries: Vec<Value> = current
        .and_then(|c| c.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let previous = entries.iter().position(|e| is_apply_by(e, manager));
    let unchanged = previous.is_some_and(|i| {
        let mut old = BTreeSet::new();
        decode(&entries[i]["fieldsV1"], &mut Vec::new(), &mut old);
        old == *fields
    });
    if !unchanged {
        let entry = json!({
            "manager": manager,
            "operation": "Apply",
            "apiVersion": api_version,
            "time": clock::now_rfc3339(),
            "fieldsType": "FieldsV1",
            "fieldsV1": encode(fields),
        });
        match previous {
            Some(i) => entries[i] = entry,
            None => entries.push(entry),
        }
    }
    meta::set_meta(object, "managedFields", Value::Array(entries));
}

/// The fields an applied configuration sets.
fn field_set(applied: &Value) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    collect(applied, None, &mut Vec::new(), &mut out);
    out
}

/// Server-owned fields that no manager owns.
fn is_server_field(prefix: &[String], key: &str) -> bool {
    match prefix {
        [] => matches!(key, "apiVersion" | "kind" | "status"),
        [m] if m == "f:metadata" => matches!(
            key,
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "deletionTimestamp"
                | "deletionGracePeriodSeconds"
                | "managedFields"
                | "selfLink"
        ),
        _ => false,
    }
}

fn collect(
    value: &Value,
    field: Option<&str>,
    prefix: &mut FieldPath,
    out: &mut BTreeSet<FieldPath>,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                if is_server_field(prefix, key) {
                    continue;
                }
                prefix.push(format!("f:{key}"));
                collect(child, Some(key), prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) if keyed_list(field, items).is_some() => {
            let key = keyed_list(field, items).unwrap_or_default();
            for item in items {
                prefix.push(format!("k:{}", json!({ key: item[key] })));
                let mut element = prefix.clone();
                element.push(".".into());
                out.insert(element);
                collect(item, None, prefix, out);
                prefix.pop();
            }
        }
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// The merge key of a list whose items all carry it.
fn keyed_list(field: Option<&str>, items: &[Value]) -> Option<&'static str> {
    let key = list_merge_key(field?, items)?;
    items.iter().all(|i| i.get(key).is_some()).then_some(key)
}

/// FieldsV1 JSON from a set of paths.
fn encode(fields: &BTreeSet<FieldPath>) -> Value {
    let mut root = Map::new();
    for path in fields {
        let mut node = &mut root;
        for step in path {
            node = meta::ensure_object(node.entry(step.clone()).or_insert_with(|| json!({})));
        }
    }
    Value::Object(root)
}

/// Paths from FieldsV1 JSON (leaves are empty objects).
fn decode(value: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
    let Some(map) = value.as_object() else { return };
    for (step, child) in map {
        prefix.push(step.clone());
        if child.as_object().is_some_and(Map::is_empty) {
            out.insert(prefix.clone());
        } else {
            decode(child, prefix, out);
        }
        prefix.pop();
    }
}

/// Deletes the field (or list element) a path names, if present.
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
    } else if let Some(key) = step.strip_prefix("k:") {
        let Ok(Value::Object(key)) = serde_json::from_str::<Value>(key) else {
            return;
        };
        let Some(items) = target.as_array_mut() else {
            return;
        };
        let matches = |item: &Value| key.iter().all(|(k, v)| item.get(k) == Some(v));
        if rest.len() == 1 && rest[0] == "." {
            items.retain(|i| !matches(i));
        } else if let Some(item) = items.iter_mut().find(|i| matches(i)) {
            remove_path(item, rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_a_manager_stops_applying_are_removed() {
        let first = json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"x": "1", "y": "2"}});
        let created = apply(None, &first, "helm", "v1");
        let mut live = created.clone();
        live["data"]["z"] = json!("kept: set by someone else");
        let second = json!({"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"x": "1"}});
        let out = apply(Some(&live), &second, "helm", "v1");
        assert_eq!(
            out["data"],
            json!({"x": "1", "z": "kept: set by someone else"})
        );
        assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
        assert_eq!(out["metadata"]["managedFields"][0]["manager"], "helm");
    }

    #[test]
    fn list_elements_are_owned_by_merge_key() {
        let containers = |names: &[&str]| {
            let list: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "image": "i"}))
                .collect();
            json!({"spec": {"containers": list}})
        };
        let created = apply(None, &containers(&["a", "b"]), "m", "v1");
        let out = apply(Some(&created), &containers(&["a"]), "m", "v1");
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "a", "image": "i"}])
        );
    }

    #[test]
    fn an_unchanged_apply_keeps_the_managed_fields_entry() {
        let cfg = json!({"data": {"x": "1"}});
        let created = apply(None, &cfg, "m", "v1");
        let again = apply(Some(&created), &cfg, "m", "v1");
        assert_eq!(created, again);
    }
}
