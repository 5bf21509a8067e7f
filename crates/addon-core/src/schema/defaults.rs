//! Applies `default` from a schema to values: missing object properties get their default, then
//! the walk goes on into properties, additional properties and list items (as Kubernetes does).

use serde_json::Value;

/// Fills keys missing in `value` with the defaults declared in `schema`, recursively. Present
/// keys are never changed; `default: null` is skipped, as in the Go operator.
pub fn apply_defaults(schema: &Value, value: &mut Value) {
    let Value::Object(schema) = schema else {
        return;
    };
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            if let Some(props) = props {
                for (key, prop) in props {
                    if !map.contains_key(key)
                        && let Some(default) = prop.get("default")
                        && !default.is_null()
                    {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(key) {
                        apply_defaults(prop, child);
                    }
                }
            }
            if let Some(extra @ Value::Object(_)) = schema.get("additionalProperties") {
                for (key, child) in map.iter_mut() {
                    if props.is_none_or(|p| !p.contains_key(key)) {
                        apply_defaults(extra, child);
                    }
                }
            }
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema @ Value::Object(_)) => {
                items
                    .iter_mut()
                    .for_each(|i| apply_defaults(item_schema, i));
            }
            Some(Value::Array(schemas)) => {
                for (item, item_schema) in items.iter_mut().zip(schemas) {
                    apply_defaults(item_schema, item);
                }
            }
            _ => {}
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_keys_get_defaults_and_nested_defaults_follow() {
        let schema = json!({"properties": {
            "discovery": {"type": "object", "default": {}},
            "init": {"type": "object", "default": {},
                     "properties": {"param1": {"type": "string", "default": "x"}}},
            "given": {"type": "string", "default": "no"}
        }});
        let mut v = json!({"given": "yes"});
        apply_defaults(&schema, &mut v);
        assert_eq!(
            v,
            json!({"given": "yes", "discovery": {}, "init": {"param1": "x"}})
        );
    }

    #[test]
    fn list_items_and_additional_properties_get_defaults() {
        let schema = json!({"properties": {
            "list": {"items": {"properties": {"port": {"default": 80}}}},
            "map": {"additionalProperties": {"properties": {"on": {"default": true}}}}
        }});
        let mut v = json!({"list": [{}, {"port": 1}], "map": {"a": {}, "b": {"on": false}}});
        apply_defaults(&schema, &mut v);
        assert_eq!(
            v,
            json!({"list": [{"port": 80}, {"port": 1}], "map": {"a": {"on": true}, "b": {"on": false}}})
        );
    }

    #[test]
    fn null_default_is_skipped() {
        let schema = json!({"properties": {"storageClass": {"type": "string", "default": null}}});
        let mut v = json!({});
        apply_defaults(&schema, &mut v);
        assert_eq!(v, json!({}));
    }

    #[test]
    fn present_null_is_not_replaced() {
        let schema = json!({"properties": {"a": {"default": 1}}});
        let mut v = json!({"a": null});
        apply_defaults(&schema, &mut v);
        assert_eq!(v, json!({"a": null}));
    }
}
