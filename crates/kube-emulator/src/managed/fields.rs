//! Field sets: the paths of an object's fields (`f:<name>`, `k:<key>` for an item of a keyed
//! list, `v:<value>` for a member of a set), their FieldsV1 encoding, what a write changed, and
//! what an applied configuration sets.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// One field: its steps from the root.
pub type FieldPath = Vec<String>;
/// Fields, each also standing for itself when it has owned children (FieldsV1's `.`).
pub type FieldSet = BTreeSet<FieldPath>;

/// What a write changed, field by field.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

/// How a list's elements are owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Each element by the values of these fields.
    Map(Vec<&'static str>),
    /// Each scalar element by its value.
    Set,
    /// The list as a whole.
    Atomic,
}

/// The list type of a field of a built-in kind (custom resources' lists are atomic: their
/// schemas' `x-kubernetes-list-type` is not read).
pub fn list_type(field: Option<&str>, items: &[Value], custom: bool) -> ListType {
    let Some(field) = field.filter(|_| !custom) else {
        return ListType::Atomic;
    };
    if field == "finalizers" {
        return ListType::Set;
    }
    let has = |k: &str| items.iter().any(|i| i.get(k).is_some());
    let keys = match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => vec!["name"],
        "volumeMounts" => vec!["mountPath"],
        "volumeDevices" => vec!["devicePath"],
        "hostAliases" => vec!["ip"],
        "ownerReferences" => vec!["uid"],
        "conditions" => vec!["type"],
        "ports" if has("containerPort") => vec!["containerPort", "protocol"],
        "ports" if has("port") => vec!["port", "protocol"],
        _ => return ListType::Atomic,
    };
    if items.iter().all(|i| item_step(i, &keys).is_some()) {
        ListType::Map(keys)
    } else {
        ListType::Atomic
    }
}

/// `k:{"name":"app"}` for an element of a keyed list (`protocol` defaults to TCP).
pub fn item_step(item: &Value, keys: &[&str]) -> Option<String> {
    let mut key = Map::new();
    for k in keys {
        let value = match (item.get(*k), *k) {
            (Some(v), _) if !v.is_null() => v.clone(),
            (_, "protocol") => json!("TCP"),
            _ => return None,
        };
        key.insert((*k).to_string(), value);
    }
    Some(format!("k:{}", Value::Object(key)))
}

/// Whether a list element is the one a `k:` step names.
pub fn item_matches(item: &Value, step: &str) -> bool {
    let Some(Ok(Value::Object(key))) = step.strip_prefix("k:").map(serde_json::from_str) else {
        return false;
    };
    let keys: Vec<&str> = key.keys().map(String::as_str).collect();
    item_step(item, &keys).as_deref() == Some(step)
}

/// Fields no manager owns: identity and bookkeeping the server sets.
fn is_server_field(path: &[String], key: &str) -> bool {
    match path {
        [] => matches!(key, "apiVersion" | "kind"),
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

/// Structs of built-in kinds owned as a whole (`+structType=atomic`, label selectors).
fn is_atomic(field: Option<&str>, value: &Value, custom: bool) -> bool {
    if custom {
        return false;
    }
    match field {
        // label selectors, and a Service's selector map, are atomic
        Some("selector") => value.is_object(),
        Some("podSelector" | "namespaceSelector" | "objectSelector") => {
            value.get("matchLabels").is_some() || value.get("matchExpressions").is_some()
        }
        Some(
            "regarding" | "related" | "involvedObject" | "fieldRef" | "resourceFieldRef"
            | "configMapKeyRef" | "secretKeyRef",
        ) => true,
        _ => false,
    }
}

fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

/// What changed from `old` to `new`: added and removed fields (a new or gone map or list item
/// counts itself as well as its children), and modified values.
pub fn compare(old: &Value, new: &Value, custom: bool) -> Comparison {
    let mut cmp = Comparison::default();
    walk(
        Some(old),
        Some(new),
        None,
        &mut Vec::new(),
        custom,
        &mut cmp,
    );
    let metadata = vec!["f:metadata".to_string()];
    for set in [&mut cmp.added, &mut cmp.modified, &mut cmp.removed] {
        set.remove(&metadata);
        set.remove(&Vec::new());
    }
    cmp
}

fn walk(
    old: Option<&Value>,
    new: Option<&Value>,
    field: Option<&str>,
    path: &mut FieldPath,
    custom: bool,
    cmp: &mut Comparison,
) {
    match (present(old), present(new)) {
        (None, None) => {}
        (None, Some(n)) => subtree(n, field, path, custom, &mut cmp.added),
        (Some(o), None) => subtree(o, field, path, custom, &mut cmp.removed),
        (Some(o), Some(n)) => both(o, n, field, path, custom, cmp),
    }
}

fn both(
    old: &Value,
    new: &Value,
    field: Option<&str>,
    path: &mut FieldPath,
    custom: bool,
    cmp: &mut Comparison,
) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) if !is_atomic(field, new, custom) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                if is_server_field(path, key) {
                    continue;
                }
                path.push(format!("f:{key}"));
                walk(a.get(key), b.get(key), Some(key), path, custom, cmp);
                path.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            let all: Vec<Value> = a.iter().chain(b).cloned().collect();
            match list_type(field, &all, custom) {
                ListType::Map(keys) => keyed_lists(a, b, &keys, path, custom, cmp),
                ListType::Set => {
                    for v in a.iter().filter(|v| !b.contains(v)) {
                        cmp.removed.insert(member(path, v));
                    }
                    for v in b.iter().filter(|v| !a.contains(v)) {
                        cmp.added.insert(member(path, v));
                    }
                }
                ListType::Atomic if a != b => {
                    cmp.modified.insert(path.clone());
                }
                ListType::Atomic => {}
            }
        }
        _ if old != new => {
            cmp.modified.insert(path.clone());
        }
        _ => {}
    }
}

fn keyed_lists(
    old: &[Value],
    new: &[Value],
    keys: &[&str],
    path: &mut FieldPath,
    custom: bool,
    cmp: &mut Comparison,
) {
    let find = |items: &[Value], step: &str| {
        items
            .iter()
            .find(|i| item_step(i, keys).as_deref() == Some(step))
            .cloned()
    };
    let steps: BTreeSet<String> = old
        .iter()
        .chain(new)
        .filter_map(|i| item_step(i, keys))
        .collect();
    for step in steps {
        let (a, b) = (find(old, &step), find(new, &step));
        path.push(step);
        walk(a.as_ref(), b.as_ref(), None, path, custom, cmp);
        path.pop();
    }
}

fn member(path: &FieldPath, value: &Value) -> FieldPath {
    let mut member = path.clone();
    member.push(format!("v:{value}"));
    member
}

/// Every field of a value that appears or disappears whole, itself included.
fn subtree(
    value: &Value,
    field: Option<&str>,
    path: &mut FieldPath,
    custom: bool,
    out: &mut FieldSet,
) {
    if !path.is_empty() {
        out.insert(path.clone());
    }
    match value {
        Value::Object(map) if !is_atomic(field, value, custom) => {
            for (key, child) in map {
                if is_server_field(path, key) || child.is_null() {
                    continue;
                }
                path.push(format!("f:{key}"));
                subtree(child, Some(key), path, custom, out);
                path.pop();
            }
        }
        Value::Array(items) => match list_type(field, items, custom) {
            ListType::Map(keys) => {
                for item in items {
                    if let Some(step) = item_step(item, &keys) {
                        path.push(step);
                        subtree(item, None, path, custom, out);
                        path.pop();
                    }
                }
            }
            ListType::Set => out.extend(items.iter().map(|v| member(path, v))),
            ListType::Atomic => {}
        },
        _ => {}
    }
}

/// The fields an applied configuration sets (a map or struct with members stands for itself
/// only through them; list items always stand for themselves).
pub fn config_fields(applied: &Value, custom: bool) -> FieldSet {
    let mut out = FieldSet::new();
    config(applied, None, &mut Vec::new(), custom, &mut out);
    out.remove(&vec!["f:metadata".to_string()]);
    out
}

fn config(
    value: &Value,
    field: Option<&str>,
    path: &mut FieldPath,
    custom: bool,
    out: &mut FieldSet,
) {
    match value {
        Value::Object(map) if !map.is_empty() && !is_atomic(field, value, custom) => {
            for (key, child) in map {
                if is_server_field(path, key) {
                    continue;
                }
                path.push(format!("f:{key}"));
                config(child, Some(key), path, custom, out);
                path.pop();
            }
        }
        Value::Array(items) => match list_type(field, items, custom) {
            ListType::Map(keys) => {
                for item in items {
                    if let Some(step) = item_step(item, &keys) {
                        path.push(step);
                        out.insert(path.clone());
                        config(item, None, path, custom, out);
                        path.pop();
                    }
                }
            }
            ListType::Set => out.extend(items.iter().map(|v| member(path, v))),
            ListType::Atomic => {
                out.insert(path.clone());
            }
        },
        _ if !path.is_empty() => {
            out.insert(path.clone());
        }
        _ => {}
    }
}

/// FieldsV1 JSON: nested steps, `.` where a member also has owned children.
pub fn encode(fields: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in fields {
        let mut node = &mut root;
        for step in path {
            node = ensure_map(node.entry(step.clone()).or_insert_with(|| json!({})));
        }
    }
    for path in fields {
        let mut node = &mut root;
        for step in path {
            node = ensure_map(node.entry(step.clone()).or_insert_with(|| json!({})));
        }
        if !node.is_empty() {
            node.insert(".".into(), json!({}));
        }
    }
    Value::Object(root)
}

fn ensure_map(value: &mut Value) -> &mut Map<String, Value> {
    crate::meta::ensure_object(value)
}

/// The fields FieldsV1 JSON names.
pub fn decode(value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    decode_into(value, &mut Vec::new(), &mut out);
    out
}

fn decode_into(value: &Value, path: &mut FieldPath, out: &mut FieldSet) {
    let Some(map) = value.as_object() else {
        return;
    };
    for (step, child) in map {
        if step == "." {
            out.insert(path.clone());
            continue;
        }
        path.push(step.clone());
        if child.as_object().is_none_or(Map::is_empty) {
            out.insert(path.clone());
        } else {
            decode_into(child, path, out);
        }
        path.pop();
    }
}

/// `.spec.containers[name="app"].image`, as conflicts name a field.
pub fn display(path: &FieldPath) -> String {
    path.iter()
        .map(|step| {
            if let Some(name) = step.strip_prefix("f:") {
                format!(".{name}")
            } else if let Some(Ok(Value::Object(key))) =
                step.strip_prefix("k:").map(serde_json::from_str::<Value>)
            {
                let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("[{}]", parts.join(","))
            } else if let Some(value) = step.strip_prefix("v:") {
                format!("[={value}]")
            } else {
                step.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(set: &FieldSet) -> Vec<String> {
        set.iter().map(display).collect()
    }

    #[test]
    fn encoding_round_trips_and_marks_members_with_children() {
        let set: FieldSet = [
            vec!["f:data".to_string()],
            vec!["f:data".to_string(), "f:x".to_string()],
            vec!["f:spec".to_string(), "f:size".to_string()],
        ]
        .into_iter()
        .collect();
        let encoded = encode(&set);
        assert_eq!(
            encoded,
            json!({"f:data": {".": {}, "f:x": {}}, "f:spec": {"f:size": {}}})
        );
        assert_eq!(decode(&encoded), set);
    }

    #[test]
    fn a_comparison_sees_new_list_items_changed_values_and_gone_members() {
        let old = json!({"metadata": {"finalizers": ["a"]}, "spec": {"containers": [
            {"name": "app", "image": "1"}, {"name": "side", "image": "1"}]}});
        let new = json!({"metadata": {"finalizers": ["b"]}, "spec": {"containers": [
            {"name": "app", "image": "2"}, {"name": "new", "image": "1"}]}});
        let cmp = compare(&old, &new, false);
        assert_eq!(
            paths(&cmp.added),
            [
                ".metadata.finalizers[=\"b\"]",
                ".spec.containers[name=\"new\"]",
                ".spec.containers[name=\"new\"].image",
                ".spec.containers[name=\"new\"].name",
            ]
        );
        assert_eq!(
            paths(&cmp.modified),
            [".spec.containers[name=\"app\"].image"]
        );
        assert_eq!(cmp.removed.len(), 4);
    }

    #[test]
    fn a_configuration_owns_its_leaves_and_list_items() {
        let applied = json!({"apiVersion": "v1", "metadata": {"name": "x", "labels": {"a": "1"}},
            "spec": {"ports": [{"port": 80}], "selector": {"matchLabels": {"a": "1"}}}});
        let set = config_fields(&applied, false);
        assert_eq!(
            encode(&set),
            json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {
                "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
                "f:selector": {}}})
        );
    }
}
