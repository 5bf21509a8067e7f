//! Defaulting: a property that is absent (or null where the schema does not allow null) gets the
//! schema's `default`, inside every object that is present.

use serde_json::Value;

use super::member_schema;

/// Fills in the defaults of `schema` throughout `value`.
pub fn fill(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, property) in properties {
                    let Some(default) = property.get("default") else {
                        continue;
                    };
                    let nullable = property.get("nullable") == Some(&Value::Bool(true));
                    match map.get(key) {
                        None => {
                            map.insert(key.clone(), default.clone());
                        }
                        Some(Value::Null) if !nullable => {
                            map.insert(key.clone(), default.clone());
                        }
                        Some(_) => {}
                    }
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(child_schema) = member_schema(schema, key) {
                    fill(child, child_schema);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for item in items {
                    fill(item, item_schema);
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
    fn defaults_fill_absent_properties_of_present_objects() {
        let schema = json!({"properties": {"spec": {"type": "object", "properties": {
            "color": {"type": "string", "default": "green"},
            "inner": {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}}}}}});
        let mut obj = json!({"spec": {"inner": {}}});
        fill(&mut obj, &schema);
        assert_eq!(obj, json!({"spec": {"color": "green", "inner": {"n": 1}}}));
        let mut absent = json!({});
        fill(&mut absent, &schema);
        assert_eq!(absent, json!({}));
    }
}
