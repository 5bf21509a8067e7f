//! Kind-specific defaulting on writes: what real controllers and admission would have filled in.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::meta;
use crate::resources::ResourceInfo;

/// Fills fields a real API server sets on create.
pub fn on_create(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => {
            let name = meta::name(obj).unwrap_or_default().to_string();
            let labels = meta::metadata_mut(obj)
                .entry("labels")
                .or_insert_with(|| json!({}));
            meta::ensure_object(labels).insert("kubernetes.io/metadata.name".into(), json!(name));
            let root = meta::ensure_object(obj);
            root.insert("spec".into(), json!({ "finalizers": ["kubernetes"] }));
            root.insert("status".into(), json!({ "phase": "Active" }));
        }
        ("", "secrets") => {
            let root = meta::ensure_object(obj);
            if root
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                root.insert("type".into(), json!("Opaque"));
            }
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => crd_status(obj),
        _ => {}
    }
    on_write(info, obj);
}

/// Fills fields a real API server or controller keeps up to date on every write.
pub fn on_write(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "secrets") => fold_string_data(obj),
        ("apps", "deployments" | "statefulsets" | "replicasets") => workload_ready(obj, false),
        ("apps", "daemonsets") => workload_ready(obj, true),
        _ => {}
    }
}

/// Moves `stringData` into base64 `data`, as the API server does.
fn fold_string_data(obj: &mut Value) {
    let root = meta::ensure_object(obj);
    let Some(Value::Object(strings)) = root.remove("stringData") else {
        return;
    };
    let data = meta::ensure_object(root.entry("data").or_insert_with(|| json!({})));
    for (k, v) in strings {
        let text = v
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| v.to_string());
        data.insert(k, json!(STANDARD.encode(text)));
    }
}

/// Marks a CRD as established with its names accepted (clients wait for this).
fn crd_status(obj: &mut Value) {
    let names = obj
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let now = crate::clock::now_rfc3339();
    let condition = |t: &str, reason: &str| json!({"type": t, "status": "True", "reason": reason, "message": "", "lastTransitionTime": now});
    let status = json!({
        "acceptedNames": names,
        "conditions": [condition("NamesAccepted", "NoConflicts"), condition("Established", "InitialNamesAccepted")],
        "storedVersions": stored_versions(obj),
    });
    meta::ensure_object(obj).insert("status".into(), status);
}

fn stored_versions(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name")?.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Reports a workload as fully rolled out, since no controller runs here.
fn workload_ready(obj: &mut Value, daemon: bool) {
    let replicas = if daemon {
        1
    } else {
        obj.pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
    };
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let status = if daemon {
        json!({"observedGeneration": generation, "currentNumberScheduled": replicas,
               "desiredNumberScheduled": replicas, "numberReady": replicas,
               "numberAvailable": replicas, "updatedNumberScheduled": replicas, "numberMisscheduled": 0})
    } else {
        json!({"observedGeneration": generation, "replicas": replicas, "readyReplicas": replicas,
               "availableReplicas": replicas, "updatedReplicas": replicas, "currentReplicas": replicas,
               "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                              {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]})
    };
    meta::ensure_object(obj).insert("status".into(), status);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn secret_string_data_is_folded_into_base64_data() {
        let reg = Registry::new(std::iter::empty());
        let info = reg.find("", "v1", "secrets").unwrap();
        let mut s = json!({"metadata": {"name": "s"}, "stringData": {"a": "hi"}});
        on_create(info, &mut s);
        assert_eq!(s["data"]["a"], "aGk=");
        assert_eq!(s["type"], "Opaque");
        assert!(s.get("stringData").is_none());
    }
}
