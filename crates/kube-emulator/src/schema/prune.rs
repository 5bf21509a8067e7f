//! Pruning: fields a structural schema does not specify are dropped, unless the schema
//! preserves unknown fields there; `apiVersion`, `kind` and `metadata` of the object (and of
//! embedded resources) always stay.

use serde_json::Value;

use super::{member_schema, preserves_unknown};

/// Drops from `obj` (a whole custom resource) what its schema does not specify; the paths of
/// the dropped fields (`spec.extra`), in order.
pub fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut dropped = Vec::new();
    walk(obj, schema, true, "", &mut dropped);
    dropped
}

fn walk(value: &mut Value, schema: &Value, resource: bool, at: &str, dropped: &mut Vec<String>) {
    let path = |key: &str| {
        if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        }
    };
    match value {
        Value::Object(map) => {
            let keep_unknown = preserves_unknown(schema);
            map.retain(|key, _| {
                let kept = keep_unknown
                    || member_schema(schema, key).is_some()
                    || (resource && matches!(key.as_str(), "apiVersion" | "kind" | "metadata"));
                if !kept {
                    dropped.push(path(key));
                }
                kept
            });
            for (key, child) in map.iter_mut() {
                // an object's own metadata is never pruned, whatever the schema says of it (the
                // API server's rule: `metadata: {type: object}` in a CRD keeps name and labels)
                if resource && key == "metadata" {
                    continue;
                }
                if let Some(child_schema) = member_schema(schema, key) {
                    let embedded = is_embedded(child_schema);
                    walk(child, child_schema, embedded, &path(key), dropped);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                let embedded = is_embedded(item_schema);
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, item_schema, embedded, &format!("{at}[{i}]"), dropped);
                }
            }
        }
        _ => {}
    }
}

fn is_embedded(schema: &Value) -> bool {
    schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_objects_metadata_is_kept_when_the_schema_names_it_without_properties() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object"}, "spec": {"type": "object"}}});
        let mut obj = json!({"apiVersion": "x/v1", "kind": "W",
            "metadata": {"name": "w", "labels": {"a": "b"}}, "spec": {}});
        assert!(prune(&mut obj, &schema).is_empty());
        assert_eq!(obj["metadata"], json!({"name": "w", "labels": {"a": "b"}}));
    }

    #[test]
    fn unknown_fields_go_except_where_preserved() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"},
                           "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                           "map": {"type": "object", "additionalProperties": {"type": "object",
                               "properties": {"x": {"type": "string"}}}}}}}});
        let mut obj = json!({"apiVersion": "v1", "kind": "W", "metadata": {"name": "w"},
            "extra": 1, "spec": {"a": "1", "b": "2", "free": {"any": {"thing": 1}},
                                  "map": {"k": {"x": "1", "y": "2"}}}});
        assert_eq!(
            prune(&mut obj, &schema),
            ["extra", "spec.b", "spec.map.k.y"]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "W", "metadata": {"name": "w"},
                "spec": {"a": "1", "free": {"any": {"thing": 1}}, "map": {"k": {"x": "1"}}}})
        );
    }
}
