//! Reading and writing `metadata` fields of JSON objects.

use serde_json::{Map, Value};

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?
        .get(field)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// The object's name.
pub fn name(obj: &Value) -> Option<&str> {
    meta_str(obj, "name")
}

/// The object's namespace.
pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace")
}

/// The object's uid.
pub fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid")
}

/// The object's `metadata` map, created if missing or not a map.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let root = ensure_object(obj);
    ensure_object(root.entry("metadata").or_insert(Value::Null))
}

/// Makes the value an object (replacing anything else) and returns its map.
pub fn ensure_object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("the value was made an object above"),
    }
}

/// Sets a `metadata` field.
pub fn set_meta(obj: &mut Value, field: &str, value: Value) {
    metadata_mut(obj).insert(field.to_string(), value);
}

/// Removes a `metadata` field.
pub fn remove_meta(obj: &mut Value, field: &str) -> Option<Value> {
    metadata_mut(obj).remove(field)
}

/// The object's finalizers.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether deletion has been requested.
pub fn is_deleting(obj: &Value) -> bool {
    meta_str(obj, "deletionTimestamp").is_some()
}

/// The uids in `ownerReferences`.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uid")?.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The object's `resourceVersion` as a number.
pub fn resource_version(obj: &Value) -> Option<u64> {
    meta_str(obj, "resourceVersion").and_then(|v| v.parse().ok())
}

/// The object without `metadata` and `status`: what `generation` tracks.
pub fn spec_part(obj: &Value) -> Value {
    let mut copy = obj.clone();
    if let Some(map) = copy.as_object_mut() {
        for k in ["metadata", "status", "apiVersion", "kind"] {
            map.remove(k);
        }
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_is_created_when_absent() {
        let mut obj = json!({"kind": "ConfigMap"});
        set_meta(&mut obj, "name", json!("x"));
        assert_eq!(name(&obj), Some("x"));
        let mut not_object = json!(3);
        set_meta(&mut not_object, "uid", json!("u"));
        assert_eq!(uid(&not_object), Some("u"));
    }
}
