//! Rewrites of OpenAPI schemas before compiling them as JSON Schema Draft 4: `x-extend`,
//! `nullable`, `additionalProperties: false` by default and `x-required-for-helm`.

use serde_json::{Map, Value};

/// Keys of a subschema that hold one schema.
const SCHEMA_KEYS: [&str; 3] = ["additionalProperties", "items", "not"];
/// Keys of a subschema that hold a map of schemas.
const SCHEMA_MAP_KEYS: [&str; 3] = ["properties", "patternProperties", "definitions"];
/// Keys of a subschema that hold a list of schemas.
const SCHEMA_LIST_KEYS: [&str; 4] = ["allOf", "anyOf", "oneOf", "items"];

/// Calls `f` on `schema` and on every subschema below it, parents first.
pub fn walk_mut(schema: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let Value::Object(map) = schema else { return };
    f(map);
    for key in SCHEMA_KEYS {
        if let Some(sub @ Value::Object(_)) = map.get_mut(key) {
            walk_mut(sub, f);
        }
    }
    for key in SCHEMA_MAP_KEYS {
        if let Some(Value::Object(subs)) = map.get_mut(key) {
            for sub in subs.values_mut() {
                walk_mut(sub, f);
            }
        }
    }
    for key in SCHEMA_LIST_KEYS {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            for sub in subs {
                walk_mut(sub, f);
            }
        }
    }
}

/// Extends a values schema that has `x-extend` with the config schema it names: `definitions`,
/// `properties`, `patternProperties` (the child's entries win), `required` (merged, parent's
/// first), and `title`, `description` and `x-*` keys the child does not set.
pub fn extend(child: &mut Value, parent: &Value) {
    let (Value::Object(child), Value::Object(parent)) = (child, parent) else {
        return;
    };
    child.remove("x-extend");
    for key in ["definitions", "properties", "patternProperties"] {
        if let Some(Value::Object(parent_map)) = parent.get(key) {
            let mut merged = parent_map.clone();
            if let Some(Value::Object(child_map)) = child.get(key) {
                for (k, v) in child_map {
                    merged.insert(k.clone(), v.clone());
                }
            }
            child.insert(key.to_string(), Value::Object(merged));
        }
    }
    let mut required = string_list(parent.get("required"));
    for name in string_list(child.get("required")) {
        if !required.contains(&name) {
            required.push(name);
        }
    }
    set_required(child, required);
    for (key, value) in parent {
        let inherited = key == "title" || key == "description" || key.starts_with("x-");
        if inherited && key != "x-extend" && !child.contains_key(key) {
            child.insert(key.clone(), value.clone());
        }
    }
}

/// Rewrites `nullable: true` (OpenAPI 3.0) into Draft 4: `null` joins `type` and `enum`.
pub fn rewrite_nullable(schema: &mut Value) {
    walk_mut(schema, &mut |map| {
        if map.get("nullable") != Some(&Value::Bool(true)) {
            return;
        }
        match map.get_mut("type") {
            Some(Value::String(t)) => {
                let t = Value::String(std::mem::take(t));
                map.insert("type".into(), Value::Array(vec![t, "null".into()]));
            }
            Some(Value::Array(types)) if !types.contains(&"null".into()) => {
                types.push("null".into());
            }
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
    });
}

/// Sets `additionalProperties: false` where it is unset on schemas that declare `properties`,
/// following the Go operator: recurse into properties whose `additionalProperties` was unset, and
/// into `items`. An object schema without `properties` (`discovery: {type: object}`) stays open,
/// as the VALUES seed document says; so does `x-kubernetes-preserve-unknown-fields: true`.
pub fn default_additional_properties(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if map.contains_key("properties") && !map.contains_key("additionalProperties") && !preserve {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for prop in props.values_mut() {
            let unset = prop
                .as_object()
                .is_some_and(|p| !p.contains_key("additionalProperties"));
            if unset {
                default_additional_properties(prop);
            }
        }
    }
    match map.get_mut("items") {
        Some(items @ Value::Object(_)) => default_additional_properties(items),
        Some(Value::Array(items)) => items.iter_mut().for_each(default_additional_properties),
        _ => {}
    }
}

/// Merges `x-required-for-helm` (a string or a list) into `required`, here and in properties and
/// items below.
pub fn merge_required_for_helm(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    let extra = match map.get("x-required-for-helm") {
        Some(Value::String(s)) => vec![s.clone()],
        other => string_list(other),
    };
    if !extra.is_empty() {
        let mut required = string_list(map.get("required"));
        for name in extra {
            if !required.contains(&name) {
                required.push(name);
            }
        }
        set_required(map, required);
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        props.values_mut().for_each(merge_required_for_helm);
    }
    match map.get_mut("items") {
        Some(items @ Value::Object(_)) => merge_required_for_helm(items),
        Some(Value::Array(items)) => items.iter_mut().for_each(merge_required_for_helm),
        _ => {}
    }
}

/// Drops empty `required` lists, which Draft 4 forbids.
pub fn drop_empty_required(schema: &mut Value) {
    walk_mut(schema, &mut |map| {
        if matches!(map.get("required"), Some(Value::Array(r)) if r.is_empty()) {
            map.remove("required");
        }
    });
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn set_required(map: &mut Map<String, Value>, required: Vec<String>) {
    if required.is_empty() {
        map.remove("required");
    } else {
        let list = required.into_iter().map(Value::String).collect();
        map.insert("required".into(), Value::Array(list));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_adds_null_to_type_and_enum() {
        let mut s = json!({"properties": {"a": {"type": "string", "nullable": true, "enum": ["x"]},
                                          "b": {"type": ["integer"], "nullable": true}}});
        rewrite_nullable(&mut s);
        assert_eq!(s["properties"]["a"]["type"], json!(["string", "null"]));
        assert_eq!(s["properties"]["a"]["enum"], json!(["x", null]));
        assert_eq!(s["properties"]["b"]["type"], json!(["integer", "null"]));
    }

    #[test]
    fn additional_properties_default_to_false_on_objects_with_properties() {
        let mut s = json!({"type": "object", "properties": {
            "open": {"type": "object"},
            "nested": {"type": "object", "properties": {"x": {"type": "string"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"y": {}}}},
            "explicit": {"type": "object", "additionalProperties": true,
                          "properties": {"deep": {"type": "object", "properties": {"z": {}}}}}
        }});
        default_additional_properties(&mut s);
        assert_eq!(s["additionalProperties"], json!(false));
        assert!(
            s["properties"]["open"]
                .get("additionalProperties")
                .is_none()
        );
        assert_eq!(
            s["properties"]["nested"]["additionalProperties"],
            json!(false)
        );
        assert_eq!(
            s["properties"]["list"]["items"]["additionalProperties"],
            json!(false)
        );
        assert_eq!(
            s["properties"]["explicit"]["additionalProperties"],
            json!(true)
        );
        let deep = &s["properties"]["explicit"]["properties"]["deep"];
        assert!(
            deep.get("additionalProperties").is_none(),
            "Go stops below an explicit value"
        );
    }

    #[test]
    fn preserve_unknown_fields_keeps_an_object_open() {
        let mut s = json!({"properties": {"a": {}}, "x-kubernetes-preserve-unknown-fields": true});
        default_additional_properties(&mut s);
        assert!(s.get("additionalProperties").is_none());
    }

    #[test]
    fn required_for_helm_accepts_a_string_or_a_list_and_recurses() {
        let mut s = json!({"x-required-for-helm": "a", "required": ["b"], "properties": {
            "c": {"x-required-for-helm": ["d", "e"]}}});
        merge_required_for_helm(&mut s);
        assert_eq!(s["required"], json!(["b", "a"]));
        assert_eq!(s["properties"]["c"]["required"], json!(["d", "e"]));
    }

    #[test]
    fn extend_keeps_child_entries_and_inherits_the_rest() {
        let parent = json!({"title": "P", "x-doc": 1, "required": ["a"],
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "definitions": {"d": {"type": "integer"}}});
        let mut child = json!({"x-extend": {"schema": "config-values.yaml"}, "title": "C",
            "required": ["b", "c"], "properties": {"b": {"type": "integer"}, "c": {}}});
        extend(&mut child, &parent);
        assert_eq!(child["title"], json!("C"));
        assert_eq!(child["x-doc"], json!(1));
        assert_eq!(child["required"], json!(["a", "b", "c"]));
        assert_eq!(child["properties"]["b"], json!({"type": "integer"}));
        assert_eq!(child["definitions"]["d"], json!({"type": "integer"}));
        assert!(child.get("x-extend").is_none());
    }

    #[test]
    fn empty_required_lists_are_dropped() {
        let mut s = json!({"required": [], "properties": {"a": {"required": []}}});
        drop_empty_required(&mut s);
        assert_eq!(s, json!({"properties": {"a": {}}}));
    }
}
