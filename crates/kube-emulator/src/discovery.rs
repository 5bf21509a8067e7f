//! Discovery documents: `/version`, `/api`, `/apis` and the per-group-version resource lists.

use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::status::json_body;

use crate::resources::{Registry, ResourceInfo};

/// The verbs of custom resources, in the API server's order for them.
const CUSTOM_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The `/version` answer.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "35",
        "emulationMajor": "1",
        "emulationMinor": "35",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "34",
        "gitVersion": "v1.35.0",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// Media type of the protobuf OpenAPI v2 document.
const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// An empty OpenAPI v2 document (protobuf or JSON, as asked): clients find no schemas and skip
/// client-side validation instead of failing to download one.
pub fn openapi_v2(headers: &HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("protobuf") {
        // Field 1 (`swagger`, a string) = "2.0"; every other field empty.
        let body: &'static [u8] = b"\x0a\x032.0";
        return ([(header::CONTENT_TYPE, OPENAPI_V2_PROTOBUF)], body).into_response();
    }
    json_body(&json!({
        "swagger": "2.0",
        "info": {"title": "kube-emulator", "version": "v1.35.0"},
        "paths": {},
        "definitions": {}
    }))
}

/// The `/api` answer (legacy core group versions).
pub fn core_versions(server: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}]
    })
}

/// The `/apis` answer.
pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|(name, versions)| group(name, versions))
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// The `/apis/<group>` answer, if the group is served.
pub fn group_doc(registry: &Registry, name: &str) -> Option<Value> {
    let groups = registry.groups();
    let (_, versions) = groups.iter().find(|(g, _)| g == name)?;
    let mut doc = group(name, versions);
    if let Some(map) = doc.as_object_mut() {
        map.insert("kind".into(), json!("APIGroup"));
        map.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

fn group(name: &str, versions: &[String]) -> Value {
    let entries: Vec<Value> = versions
        .iter()
        .map(|v| json!({ "groupVersion": format!("{name}/{v}"), "version": v }))
        .collect();
    let preferred = entries.first().cloned().unwrap_or(Value::Null);
    json!({ "name": name, "versions": entries, "preferredVersion": preferred })
}

/// The resource list of one group version, if it is served.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let infos = registry.in_group_version(group, version);
    if infos.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = infos
        .iter()
        .flat_map(|info| resource_entries(info))
        .collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources
    }))
}

fn resource_entries(info: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": match (info.create_only, info.is_custom()) {
            (true, _) => &["create"][..],
            (false, true) => CUSTOM_VERBS,
            (false, false) => VERBS,
        },
    });
    if let Some(map) = main.as_object_mut() {
        if !info.short_names.is_empty() {
            map.insert("shortNames".into(), json!(info.short_names));
        }
        if is_in_all_category(info) {
            map.insert("categories".into(), json!(["all"]));
        }
    }
    let mut entries = vec![main];
    if crate::resources::has_scale(info) {
        entries.push(json!({
            "name": format!("{}/scale", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        }));
    }
    if info.has_status {
        entries.push(json!({
            "name": format!("{}/status", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    entries
}

fn is_in_all_category(info: &ResourceInfo) -> bool {
    matches!(
        (info.group.as_str(), info.plural.as_str()),
        ("", "pods" | "services")
            | (
                "apps",
                "deployments" | "statefulsets" | "daemonsets" | "replicasets"
            )
            | ("batch", "jobs" | "cronjobs")
            | ("autoscaling", "horizontalpodautoscalers")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_v1_lists_deployments_with_status_subresource() {
        let reg = Registry::new(std::iter::empty());
        let list = resource_list(&reg, "apps", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"deployments") && names.contains(&"deployments/status"));
        assert!(resource_list(&reg, "apps", "v9").is_none());
        let groups = group_list(&reg);
        assert!(
            groups["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "rbac.authorization.k8s.io")
        );
    }
}
