//! Kind-specific defaulting on writes: what the API server fills in when it decodes an object
//! ([`on_decode`], so the writer's `managedFields` include it) and when it stores one
//! ([`on_create`]: namespace phase, CRD status, service IPs).

mod specs;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::meta;
use crate::resources::ResourceInfo;

/// Fills fields a real API server sets on create.
pub fn on_create(info: &ResourceInfo, obj: &mut Value) {
    on_write(info, obj);
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => {
            let root = meta::ensure_object(obj);
            root.insert("spec".into(), json!({ "finalizers": ["kubernetes"] }));
            root.insert("status".into(), json!({ "phase": "Active" }));
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => crd_status(obj),
        ("", "services") => service_ip(obj),
        _ => {}
    }
}

/// Fills fields a real API server or controller keeps up to date on every write.
pub fn on_write(info: &ResourceInfo, obj: &mut Value) {
    on_decode(info, obj);
}

/// The defaults the API server applies as it decodes a written object (before field managers
/// are recorded), for every write.
pub fn on_decode(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => {
            let name = meta::name(obj).unwrap_or_default().to_string();
            let labels = meta::metadata_mut(obj)
                .entry("labels")
                .or_insert_with(|| json!({}));
            meta::ensure_object(labels).insert("kubernetes.io/metadata.name".into(), json!(name));
        }
        ("", "secrets") => {
            fold_string_data(obj);
            let root = meta::ensure_object(obj);
            if root
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                root.insert("type".into(), json!("Opaque"));
            }
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let spec = meta::ensure_object(
                meta::ensure_object(obj)
                    .entry("spec")
                    .or_insert_with(|| json!({})),
            );
            spec.entry("conversion")
                .or_insert_with(|| json!({"strategy": "None"}));
        }
        ("events.k8s.io", "events") => {
            let root = meta::ensure_object(obj);
            for (field, empty) in [
                ("deprecatedSource", json!({})),
                ("deprecatedFirstTimestamp", Value::Null),
                ("deprecatedLastTimestamp", Value::Null),
            ] {
                root.entry(field).or_insert(empty);
            }
        }
        _ => specs::on_decode(info, obj),
    }
}

/// The emulated cluster's single, ready control-plane node.
pub fn node(name: &str) -> Value {
    let now = crate::clock::now_rfc3339();
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "node-role.kubernetes.io/control-plane": ""}},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kube-emulator node", "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "nodeInfo": {"kubeletVersion": "v1.35.0", "operatingSystem": "linux", "architecture": "amd64",
                         "containerRuntimeVersion": "emulated://1.0", "osImage": "kube-emulator"}
        }
    })
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

/// Gives a Service a random cluster IP in 10.96.0.0/16 unless it is headless or
/// an ExternalName.
fn service_ip(obj: &mut Value) {
    let spec = meta::ensure_object(
        meta::ensure_object(obj)
            .entry("spec")
            .or_insert_with(|| json!({})),
    );
    let kind = spec
        .entry("type")
        .or_insert_with(|| json!("ClusterIP"))
        .as_str()
        .unwrap_or("")
        .to_string();
    let has_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .is_some_and(|ip| !ip.is_empty());
    if kind == "ExternalName" || has_ip {
        return;
    }
    let ip = format!(
        "10.96.{}.{}",
        crate::clock::random_u64() % 256,
        crate::clock::random_u64() % 253 + 1
    );
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    spec.insert("ipFamilies".into(), json!(["IPv4"]));
    spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
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
