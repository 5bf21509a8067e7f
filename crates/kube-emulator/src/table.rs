//! Server-side views of objects: `meta.k8s.io/v1` Tables with kubectl's usual columns (for
//! `kubectl get`) and `PartialObjectMetadata` (for metadata-only clients).

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::clock;
use crate::meta;
use crate::resources::ResourceInfo;

/// Content type of Table answers.
pub const TABLE_CONTENT_TYPE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

/// How a client wants objects presented (from its `Accept` header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The objects themselves.
    Object,
    /// A Table, rows carrying this content.
    Table(Include),
    /// `PartialObjectMetadata` (kind, apiVersion, metadata only).
    Metadata,
}

/// The view a request asks for.
pub fn requested(headers: &HeaderMap, include: Option<&str>) -> View {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("as=Table") {
        View::Table(match include {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        })
    } else if accept.contains("as=PartialObjectMetadata") {
        View::Metadata
    } else {
        View::Object
    }
}

/// The `PartialObjectMetadata` of an object.
pub fn partial(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A value extractor for one column.
enum Cell {
    Name,
    Age,
    Path(&'static str),
    Count(&'static [&'static str]),
    Compute(fn(&Value) -> Value),
    JsonPath(String, bool),
}

struct Column {
    name: String,
    kind: &'static str,
    priority: i64,
    cell: Cell,
}

fn col(name: &str, kind: &'static str, cell: Cell) -> Column {
    Column {
        name: name.to_string(),
        kind,
        priority: 0,
        cell,
    }
}

/// A Table of `objects` (already stamped with apiVersion and kind).
pub fn table(info: &ResourceInfo, objects: &[Value], metadata: Value, include: Include) -> Value {
    let columns = columns(info);
    let definitions: Vec<Value> = columns
        .iter()
        .map(|c| {
            let format = if matches!(c.cell, Cell::Name) { "name" } else { "" };
            json!({"name": c.name, "type": c.kind, "format": format, "description": "", "priority": c.priority})
        })
        .collect();
    let rows: Vec<Value> = objects.iter().map(|o| row(&columns, o, include)).collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

fn row(columns: &[Column], obj: &Value, include: Include) -> Value {
    let cells: Vec<Value> = columns.iter().map(|c| cell(&c.cell, obj)).collect();
    let mut row = json!({ "cells": cells });
    let object = match include {
        Include::None => Value::Null,
        Include::Object => obj.clone(),
        Include::Metadata => partial(obj),
    };
    if let Some(map) = row.as_object_mut() {
        map.insert("object".into(), object);
    }
    row
}

fn cell(cell: &Cell, obj: &Value) -> Value {
    match cell {
        Cell::Name => json!(meta::name(obj).unwrap_or_default()),
        Cell::Age => json!(clock::age(
            meta::meta_str(obj, "creationTimestamp").unwrap_or_default()
        )),
        Cell::Path(pointer) => obj
            .pointer(pointer)
            .cloned()
            .unwrap_or_else(|| json!("<none>")),
        Cell::Count(fields) => {
            json!(
                fields
                    .iter()
                    .filter_map(|f| obj.get(*f)?.as_object().map(|m| m.len()))
                    .sum::<usize>()
            )
        }
        Cell::Compute(f) => f(obj),
        Cell::JsonPath(path, is_date) => {
            let pointer = json_path_pointer(path);
            match obj.pointer(&pointer) {
                Some(Value::String(t)) if *is_date => json!(clock::age(t)),
                Some(v) => v.clone(),
                None => json!("<none>"),
            }
        }
    }
}

/// `.spec.replicas` or `.status.conditions[0].type` as a JSON pointer.
fn json_path_pointer(path: &str) -> String {
    let trimmed = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    trimmed
        .replace('[', ".")
        .replace(']', "")
        .split('.')
        .filter(|s| !s.is_empty())
        .fold(String::new(), |mut acc, step| {
            acc.push('/');
            acc.push_str(step);
            acc
        })
}

fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn ratio(obj: &Value, ready: &str, total: &str) -> Value {
    json!(format!("{}/{}", int(obj, ready), int(obj, total)))
}

fn columns(info: &ResourceInfo) -> Vec<Column> {
    use Cell::{Age, Compute, Count, Name, Path};
    let mut columns = vec![col("Name", "string", Name)];
    let rest: Vec<Column> = match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => vec![
            col("Ready", "string", Compute(pod_ready)),
            col("Status", "string", Path("/status/phase")),
            col("Restarts", "integer", Compute(pod_restarts)),
            col("Age", "string", Age),
        ],
        // the API server declares these counts as strings too
        ("apps", "deployments") => vec![
            col(
                "Ready",
                "string",
                Compute(|o| ratio(o, "/status/readyReplicas", "/spec/replicas")),
            ),
            col(
                "Up-to-date",
                "string",
                Compute(|o| json!(int(o, "/status/updatedReplicas"))),
            ),
            col(
                "Available",
                "string",
                Compute(|o| json!(int(o, "/status/availableReplicas"))),
            ),
            col("Age", "string", Age),
            wide("Containers", Compute(|o| template_containers(o, "name"))),
            wide("Images", Compute(|o| template_containers(o, "image"))),
            wide(
                "Selector",
                Compute(|o| selector(o.pointer("/spec/selector"))),
            ),
        ],
        ("apps", "statefulsets") => vec![
            col(
                "Ready",
                "string",
                Compute(|o| ratio(o, "/status/readyReplicas", "/spec/replicas")),
            ),
            col("Age", "string", Age),
        ],
        ("apps", "replicasets") => vec![
            col(
                "Desired",
                "integer",
                Compute(|o| json!(int(o, "/spec/replicas"))),
            ),
            col(
                "Current",
                "integer",
                Compute(|o| json!(int(o, "/status/replicas"))),
            ),
            col(
                "Ready",
                "integer",
                Compute(|o| json!(int(o, "/status/readyReplicas"))),
            ),
            col("Age", "string", Age),
        ],
        ("batch", "jobs") => vec![
            col("Status", "string", Compute(job_status)),
            col("Completions", "string", Compute(job_completions)),
            col("Age", "string", Age),
        ],
        ("batch", "cronjobs") => vec![
            col("Schedule", "string", Path("/spec/schedule")),
            col(
                "Suspend",
                "boolean",
                Compute(|o| {
                    json!(
                        o.pointer("/spec/suspend")
                            .and_then(Value::as_bool)
                            .unwrap_or(false)
                    )
                }),
            ),
            col("Age", "string", Age),
        ],
        ("", "services") => vec![
            col("Type", "string", Path("/spec/type")),
            col("Cluster-IP", "string", Path("/spec/clusterIP")),
            col("External-IP", "string", Compute(external_ip)),
            col("Port(s)", "string", Compute(service_ports)),
            col("Age", "string", Age),
            wide(
                "Selector",
                Compute(|o| selector(o.pointer("/spec/selector"))),
            ),
        ],
        // the API server declares these counts as strings
        ("", "configmaps") => vec![
            col("Data", "string", Count(&["data", "binaryData"])),
            col("Age", "string", Age),
        ],
        ("", "secrets") => vec![
            col("Type", "string", Path("/type")),
            col("Data", "string", Count(&["data"])),
            col("Age", "string", Age),
        ],
        ("", "nodes") => vec![
            col("Status", "string", Compute(node_status)),
            col("Roles", "string", Compute(node_roles)),
            col("Age", "string", Age),
            col("Version", "string", Path("/status/nodeInfo/kubeletVersion")),
        ],
        ("", "namespaces") => vec![
            col("Status", "string", Path("/status/phase")),
            col("Age", "string", Age),
        ],
        ("", "persistentvolumeclaims") => vec![
            col("Status", "string", Path("/status/phase")),
            col("Capacity", "string", Path("/status/capacity/storage")),
            col("Age", "string", Age),
        ],
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            vec![col(
                "Created At",
                "date",
                Path("/metadata/creationTimestamp"),
            )]
        }
        _ if !info.printer_columns.is_empty() => info
            .printer_columns
            .iter()
            .map(|c| Column {
                name: c.name.clone(),
                kind: match c.kind.as_str() {
                    "integer" => "integer",
                    "number" => "number",
                    "boolean" => "boolean",
                    "date" => "date",
                    _ => "string",
                },
                priority: c.priority,
                cell: Cell::JsonPath(c.json_path.clone(), c.kind == "date"),
            })
            .collect(),
        _ => vec![col("Age", "string", Age)],
    };
    columns.extend(rest);
    columns
}

/// A column `kubectl get -o wide` adds.
fn wide(name: &str, cell: Cell) -> Column {
    Column {
        priority: 1,
        ..col(name, "string", cell)
    }
}

/// A field of each container of a workload's pod template, comma-separated.
fn template_containers(obj: &Value, field: &str) -> Value {
    let containers = obj
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array);
    let values: Vec<&str> = containers
        .into_iter()
        .flatten()
        .filter_map(|c| c.get(field)?.as_str())
        .collect();
    json!(values.join(","))
}

/// A label selector (`matchLabels`, or a Service's plain map) as `k=v,...`, or `<none>`.
fn selector(selector: Option<&Value>) -> Value {
    let labels = selector.and_then(|s| s.get("matchLabels").or(Some(s)));
    let pairs: Vec<String> = labels
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
        .collect();
    json!(if pairs.is_empty() {
        "<none>".to_string()
    } else {
        pairs.join(",")
    })
}

fn node_status(obj: &Value) -> Value {
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    let ready = conditions
        .into_iter()
        .flatten()
        .any(|c| c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True")));
    json!(if ready { "Ready" } else { "NotReady" })
}

fn node_roles(obj: &Value) -> Value {
    let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
    let roles: Vec<&str> = labels
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    json!(if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    })
}

fn pod_ready(obj: &Value) -> Value {
    let statuses = obj
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array);
    let ready = statuses
        .into_iter()
        .flatten()
        .filter(|s| s.get("ready") == Some(&json!(true)))
        .count();
    let total = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    json!(format!("{ready}/{total}"))
}

fn pod_restarts(obj: &Value) -> Value {
    let statuses = obj
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array);
    json!(
        statuses
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("restartCount")?.as_i64())
            .sum::<i64>()
    )
}

fn job_status(obj: &Value) -> Value {
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    let complete = conditions.into_iter().flatten().any(|c| {
        c.get("type") == Some(&json!("Complete")) && c.get("status") == Some(&json!("True"))
    });
    json!(if complete { "Complete" } else { "Running" })
}

fn job_completions(obj: &Value) -> Value {
    let wanted = obj
        .pointer("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    json!(format!("{}/{wanted}", int(obj, "/status/succeeded")))
}

fn external_ip(obj: &Value) -> Value {
    let ingress = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array);
    let ips: Vec<&str> = ingress
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("ip").and_then(Value::as_str))
        .collect();
    json!(if ips.is_empty() {
        "<none>".to_string()
    } else {
        ips.join(",")
    })
}

fn service_ports(obj: &Value) -> Value {
    let ports = obj.pointer("/spec/ports").and_then(Value::as_array);
    let shown: Vec<String> = ports
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) => format!("{}:{node}/{protocol}", int(p, "/port")),
                None => format!("{}/{protocol}", int(p, "/port")),
            }
        })
        .collect();
    json!(if shown.is_empty() {
        "<none>".to_string()
    } else {
        shown.join(",")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{PrinterColumn, Registry};

    #[test]
    fn deployments_print_ready_counts_and_rows_carry_metadata() {
        let reg = Registry::new(std::iter::empty());
        let info = reg.find("apps", "v1", "deployments").unwrap();
        let d = json!({"metadata": {"name": "web", "creationTimestamp": clock::now_rfc3339()},
                       "spec": {"replicas": 3}, "status": {"readyReplicas": 2}});
        let t = table(info, &[d], json!({}), Include::Metadata);
        let headers: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            headers,
            [
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["web", "2/3", 0, 0, "0s", "", "", "<none>"])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn custom_resources_use_their_printer_columns() {
        let mut info = Registry::new(std::iter::empty())
            .find("", "v1", "configmaps")
            .unwrap()
            .clone();
        info.group = "example.io".into();
        info.plural = "widgets".into();
        info.printer_columns = vec![PrinterColumn {
            name: "Size".into(),
            kind: "integer".into(),
            json_path: ".spec.sizes[1]".into(),
            priority: 0,
        }];
        let w = json!({"metadata": {"name": "w"}, "spec": {"sizes": [1, 7]}});
        let t = table(&info, &[w], json!({}), Include::None);
        assert_eq!(t["rows"][0], json!({"cells": ["w", 7], "object": null}));
    }
}
