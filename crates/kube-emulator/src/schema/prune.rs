//! Pruning: fields a structural schema does not specify are dropped, unless the schema
//! preserves unknown fields there; `apiVersion`, `kind` and `metadata` of the object (and of
//! embedded resources) always stay.

use serde_json::Value;

use super::{member_schema, preserves_unknown};

/// Drops from `obj` (a whole custom resource) what its schema does not specify.
pub fn prune(obj: &mut Value, schema: &Value) {
    walk(obj, schema, true);
}

fn walk(value: &mut Value, schema: &Value, resource: bool) {
    match value {
        Value::Object(map) => {
            let keep_unknown = preserves_unknown(schema);
            map.retain(|key, _| {
                keep_unknown
                    || member_schema(schema, key).is_some()
                    || (resource && matches!(key.as_str(), "apiVersion" | "kind" | "metadata"))
            });
            for (key, child) in map.iter_mut() {
                if let Some(child_schema) = member_schema(schema, key) {
                    let embedded = child_schema.get("x-kubernetes-embedded-resource")
                        == Some(&Value::Bool(true));
                    walk(child, child_schema, embedded);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                let embedded =
                    item_schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
                for item in items {
                    walk(item, item_schema, embedded);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        prune(&mut obj, &schema);
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "W", "metadata": {"name": "w"},
                "spec": {"a": "1", "free": {"any": {"thing": 1}}, "map": {"k": {"x": "1"}}}})
        );
    }
}
