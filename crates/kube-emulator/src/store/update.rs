//! The stored form of an update: what the client may change and what the server keeps.

use serde_json::{Value, json};

use crate::defaults;
use crate::meta;
use crate::resources::ResourceInfo;

/// The stored form of an update: identity and server-owned fields kept from `current`.
pub(super) fn merge_update(
    info: &ResourceInfo,
    current: &Value,
    mut new: Value,
    status_only: bool,
) -> Value {
    if status_only {
        let mut result = current.clone();
        let status = new.get("status").cloned().unwrap_or(Value::Null);
        meta::ensure_object(&mut result).insert("status".into(), status);
        return result;
    }
    if info.has_status {
        match current.get("status") {
            Some(s) => meta::ensure_object(&mut new).insert("status".into(), s.clone()),
            None => meta::ensure_object(&mut new).remove("status"),
        };
    }
    for field in [
        "uid",
        "creationTimestamp",
        "namespace",
        "name",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match current.get("metadata").and_then(|m| m.get(field)) {
            Some(v) => meta::set_meta(&mut new, field, v.clone()),
            None => {
                meta::remove_meta(&mut new, field);
            }
        }
    }
    let sent_managed_fields = new
        .pointer("/metadata/managedFields")
        .is_some_and(Value::is_array);
    if !sent_managed_fields {
        match current.pointer("/metadata/managedFields") {
            Some(m) => meta::set_meta(&mut new, "managedFields", m.clone()),
            None => {
                meta::remove_meta(&mut new, "managedFields");
            }
        }
    }
    let generation = current
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let bumped = if meta::spec_part(&new) == meta::spec_part(current) {
        generation
    } else {
        generation + 1
    };
    meta::set_meta(&mut new, "generation", json!(bumped));
    for field in ["apiVersion", "kind"] {
        if let Some(v) = current.get(field) {
            meta::ensure_object(&mut new).insert(field.into(), v.clone());
        }
    }
    defaults::on_write(info, &mut new);
    new
}
