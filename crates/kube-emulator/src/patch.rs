//! PATCH bodies: JSON patch, JSON merge patch, strategic merge patch and server-side apply.

use serde_json::{Map, Value};

use crate::body;
use crate::status::ApiError;

/// The patch flavours, chosen by the request's content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// RFC 6902 `application/json-patch+json`.
    Json,
    /// RFC 7386 `application/merge-patch+json`.
    Merge,
    /// Kubernetes `application/strategic-merge-patch+json`.
    Strategic,
    /// Server-side apply `application/apply-patch+yaml`.
    Apply,
}

impl PatchKind {
    /// The kind named by a `Content-Type` header value.
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            other => Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml (got {other:?})"
            ))),
        }
    }
}

/// Applies a patch body of the given kind to `current`, returning the new object.
pub fn apply_patch(kind: PatchKind, current: &Value, patch: &[u8]) -> Result<Value, ApiError> {
    let mut target = current.clone();
    match kind {
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_slice(patch)
                .map_err(|e| ApiError::BadRequest(format!("invalid JSON patch: {e}")))?;
            json_patch::patch(&mut target, &ops).map_err(|e| {
                ApiError::Invalid(format!("the JSON patch could not be applied: {e}"))
            })?;
        }
        PatchKind::Merge => json_patch::merge(&mut target, &parse_json(patch)?),
        PatchKind::Strategic => strategic_merge(&mut target, &parse_json(patch)?),
        PatchKind::Apply => strategic_merge(&mut target, &body::parse_yaml_or_json(patch)?),
    }
    Ok(target)
}

fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::BadRequest(format!("invalid patch body: {e}")))
}

/// How merged list elements are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// As the API server orders a strategic merge patch's lists: the patch's elements (in the
    /// patch's or `$setElementOrder`'s order) interleaved with the live-only ones.
    Patch,
    /// Live elements where they are, new ones appended (server-side apply).
    Live,
}

/// Merges `patch` into `target` with strategic-merge semantics for the common list keys.
pub fn strategic_merge(target: &mut Value, patch: &Value) {
    merge(target, patch, Order::Patch);
}

/// Merges an applied configuration into the live object: as [`strategic_merge`], keeping the
/// live order of list elements.
pub fn apply_merge(target: &mut Value, patch: &Value) {
    merge(target, patch, Order::Live);
}

fn merge(target: &mut Value, patch: &Value, order: Order) {
    let Some(patch_map) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    match patch_map.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = Value::Object(strip_directives(patch_map));
            return;
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(target_map) = target.as_object_mut() else {
        return;
    };
    for (key, value) in patch_map {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            delete_from_primitive_list(target_map, field, value);
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        let element_order = patch_map
            .get(&format!("$setElementOrder/{key}"))
            .and_then(Value::as_array)
            .map(Vec::as_slice);
        merge_field(target_map, key, value, (order, element_order));
    }
}

fn merge_field(
    target: &mut Map<String, Value>,
    key: &str,
    value: &Value,
    (order, element_order): (Order, Option<&[Value]>),
) {
    if value.is_null() {
        target.remove(key);
        return;
    }
    if value.get("$patch").and_then(Value::as_str) == Some("delete") {
        target.remove(key);
        return;
    }
    match (target.get_mut(key), value) {
        (Some(existing @ Value::Object(_)), Value::Object(_)) => merge(existing, value, order),
        (Some(Value::Array(existing)), Value::Array(items)) => {
            let original = existing.clone();
            let merge_key = list_merge_key(key, items);
            if let Some(merge_key) = merge_key {
                merge_keyed_list(existing, items, merge_key, order);
            } else if is_union_list(key) {
                for item in items {
                    if !existing.contains(item) {
                        existing.push(item.clone());
                    }
                }
            } else {
                *existing = items.iter().map(clean_value).collect();
                return;
            }
            if order == Order::Patch {
                let patch_order = element_order.unwrap_or(items);
                *existing = patch_ordered(existing, patch_order, &original, merge_key);
            }
        }
        _ => {
            target.insert(key.to_string(), clean_value(value));
        }
    }
}

/// The merged elements in the API server's order: those the patch (or `$setElementOrder`) names,
/// in its order, merged with the others in their live order; where only one of two candidates
/// is live, the patch's comes first.
fn patch_ordered(
    merged: &[Value],
    patch_order: &[Value],
    live_order: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    let same = |a: &Value, b: &Value| match merge_key {
        Some(k) => a.get(k).is_some() && a.get(k) == b.get(k),
        None => a == b,
    };
    let index = |list: &[Value], item: &Value| list.iter().position(|o| same(o, item));
    let (mut named, mut rest): (Vec<Value>, Vec<Value>) = merged
        .iter()
        .cloned()
        .partition(|m| index(patch_order, m).is_some());
    named.sort_by_key(|m| index(patch_order, m));
    rest.sort_by_key(|m| index(live_order, m));
    let mut out = Vec::with_capacity(merged.len());
    let (mut left, mut right) = (named.into_iter().peekable(), rest.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => match (index(live_order, l), index(live_order, r)) {
                (Some(li), Some(ri)) => li < ri,
                _ => true,
            },
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
}

/// The merge key of a list field, judged by the field name and the patch items.
pub(crate) fn list_merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let has = |k: &str| items.iter().any(|i| i.get(k).is_some());
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "hostAliases" => Some("ip"),
        "ownerReferences" => Some("uid"),
        "conditions" => Some("type"),
        "ports" if has("containerPort") => Some("containerPort"),
        "ports" if has("port") => Some("port"),
        _ => None,
    }
}

/// Lists of scalars merged as sets.
fn is_union_list(field: &str) -> bool {
    field == "finalizers"
}

fn merge_keyed_list(existing: &mut Vec<Value>, items: &[Value], merge_key: &str, order: Order) {
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *existing = items
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .map(clean_value)
            .collect();
        return;
    }
    for item in items {
        let Some(id) = item.get(merge_key) else {
            existing.push(clean_value(item));
            continue;
        };
        let position = existing.iter().position(|e| e.get(merge_key) == Some(id));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                existing.remove(i);
            }
            (Some(i), false) => merge(&mut existing[i], item, order),
            (None, true) => {}
            (None, false) => existing.push(clean_value(item)),
        }
    }
}

fn delete_from_primitive_list(target: &mut Map<String, Value>, field: &str, values: &Value) {
    let (Some(Value::Array(list)), Some(remove)) = (target.get_mut(field), values.as_array())
    else {
        return;
    };
    list.retain(|v| !remove.contains(v));
}

/// A patch value with `$`-directives removed, for inserting where nothing existed.
fn clean_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(strip_directives(map)),
        Value::Array(items) => Value::Array(items.iter().map(clean_value).collect()),
        other => other.clone(),
    }
}

fn strip_directives(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(k, v)| !k.starts_with('$') && !v.is_null())
        .map(|(k, v)| (k.clone(), clean_value(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}],
             "ports": [{"containerPort": 80}]},
            {"name": "side", "image": "side:1"}
        ]}}}, "metadata": {"finalizers": ["a"]}})
    }

    #[test]
    fn containers_merge_by_name_and_env_by_name() {
        let mut d = deployment();
        strategic_merge(
            &mut d,
            &json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]}]}}}}),
        );
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c.as_array().unwrap().len(), 2);
        assert_eq!(c[0]["image"], "app:2");
        assert_eq!(c[0]["env"].as_array().unwrap().len(), 2);
        assert_eq!(c[0]["ports"][0]["containerPort"], 80);
    }

    #[test]
    fn patch_directives_delete_and_replace_list_items() {
        let mut d = deployment();
        strategic_merge(
            &mut d,
            &json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "app"}],
            "containers": [{"name": "side", "$patch": "delete"}]}}}}),
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        strategic_merge(
            &mut d,
            &json!({"spec": {"template": {"spec": {
            "containers": [{"$patch": "replace"}, {"name": "new", "image": "n"}]}}}}),
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"],
            json!([{"name": "new", "image": "n"}])
        );
    }

    #[test]
    fn null_removes_fields_and_finalizers_union() {
        let mut d = deployment();
        strategic_merge(
            &mut d,
            &json!({"metadata": {"finalizers": ["b"]}, "spec": null}),
        );
        assert_eq!(d, json!({"metadata": {"finalizers": ["b", "a"]}}));
        strategic_merge(
            &mut d,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        );
        assert_eq!(d["metadata"]["finalizers"], json!(["b"]));
    }

    #[test]
    fn patched_elements_come_first_unless_both_are_live() {
        let mut d = deployment();
        strategic_merge(
            &mut d,
            &json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "env": [{"name": "B", "value": "2"}]},
                {"name": "extra", "image": "e"}]}}}}),
        );
        let c = &d["spec"]["template"]["spec"]["containers"];
        let names: Vec<&str> = c
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["app", "extra", "side"]);
        assert_eq!(
            c[0]["env"][0]["name"], "B",
            "a new env var goes before the live ones"
        );
        let mut live = deployment();
        apply_merge(
            &mut live,
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "extra", "image": "e"}]}}}}),
        );
        let c = &live["spec"]["template"]["spec"]["containers"];
        assert_eq!(c[2]["name"], "extra", "an apply appends");
    }

    #[test]
    fn service_ports_merge_by_port() {
        let mut svc = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}]}});
        strategic_merge(
            &mut svc,
            &json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
        );
        assert_eq!(
            svc["spec"]["ports"][0],
            json!({"port": 80, "name": "http", "targetPort": 8080})
        );
        assert_eq!(svc["spec"]["ports"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn json_and_merge_patches_apply() {
        let cur = json!({"data": {"a": "1"}});
        let out = apply_patch(
            PatchKind::Json,
            &cur,
            br#"[{"op":"add","path":"/data/b","value":"2"}]"#,
        )
        .unwrap();
        assert_eq!(out["data"]["b"], "2");
        let out = apply_patch(PatchKind::Merge, &cur, br#"{"data":{"a":null,"c":"3"}}"#).unwrap();
        assert_eq!(out, json!({"data": {"c": "3"}}));
        assert!(apply_patch(PatchKind::Json, &cur, br#"[{"op":"remove","path":"/x"}]"#).is_err());
    }
}
