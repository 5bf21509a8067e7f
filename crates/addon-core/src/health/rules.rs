//! The status of one object as kstatus computes it: deletion, `observedGeneration`, the rules of
//! the built-in workload kinds, then the standard conditions of any other kind.

use serde_json::Value;

use super::ObjectHealth::{self, Current, Failed, InProgress};

/// The status of `object` (a live copy with its `status`).
pub fn assess(object: &Value) -> ObjectHealth {
    if object.pointer("/metadata/deletionTimestamp").is_some() {
        return InProgress("being deleted".to_string());
    }
    if let Some(health) = generation_behind(object) {
        return health;
    }
    let group = group_of(object);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let specific = match (group, kind) {
        ("apps" | "extensions", "Deployment") => Some(deployment(object)),
        ("apps", "StatefulSet") => Some(stateful_set(object)),
        ("apps" | "extensions", "DaemonSet") => Some(daemon_set(object)),
        ("batch", "Job") => Some(job(object)),
        ("", "Pod") => Some(pod(object)),
        ("", "PersistentVolumeClaim") => Some(pvc(object)),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Some(crd(object)),
        _ => None,
    };
    match specific {
        Some(health) => health,
        None => by_conditions(object),
    }
}

fn group_of(object: &Value) -> &str {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

fn int(object: &Value, pointer: &str, default: i64) -> i64 {
    object
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn string<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The condition `kind` of the object: `(status, reason, message)`.
fn condition<'a>(object: &'a Value, kind: &str) -> Option<(&'a str, &'a str, &'a str)> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .map(|c| {
            let field = |k| c.get(k).and_then(Value::as_str).unwrap_or("");
            (field("status"), field("reason"), field("message"))
        })
}

/// A controller has not seen the latest spec yet (only when it reports `observedGeneration`).
fn generation_behind(object: &Value) -> Option<ObjectHealth> {
    let generation = object.pointer("/metadata/generation")?.as_i64()?;
    let observed = object.pointer("/status/observedGeneration")?.as_i64()?;
    (observed < generation).then(|| {
        InProgress(format!(
            "generation {generation} not observed yet (observed {observed})"
        ))
    })
}

fn fewer(what: &str, have: i64, want: i64) -> ObjectHealth {
    InProgress(format!("{what}: {have}/{want}"))
}

fn deployment(object: &Value) -> ObjectHealth {
    if let Some((_, "ProgressDeadlineExceeded", message)) = condition(object, "Progressing") {
        return Failed(format!("progress deadline exceeded: {message}"));
    }
    let spec = int(object, "/spec/replicas", 1);
    let replicas = int(object, "/status/replicas", 0);
    let updated = int(object, "/status/updatedReplicas", 0);
    let ready = int(object, "/status/readyReplicas", 0);
    let available = int(object, "/status/availableReplicas", 0);
    if spec > replicas {
        return fewer("replicas", replicas, spec);
    }
    if spec > updated {
        return fewer("updated", updated, spec);
    }
    if replicas > spec {
        return InProgress(format!("pending termination: {}", replicas - spec));
    }
    if updated > available {
        return fewer("available", available, updated);
    }
    if spec > ready {
        return fewer("ready", ready, spec);
    }
    if let Some(("False", reason, _)) = condition(object, "Available") {
        return InProgress(format!("not available ({reason})"));
    }
    Current
}

fn stateful_set(object: &Value) -> ObjectHealth {
    if string(object, "/spec/updateStrategy/type") == "OnDelete" {
        return Current;
    }
    let spec = int(object, "/spec/replicas", 1);
    let replicas = int(object, "/status/replicas", 0);
    let ready = int(object, "/status/readyReplicas", 0);
    let current = int(object, "/status/currentReplicas", 0);
    let updated = int(object, "/status/updatedReplicas", 0);
    let partition = int(object, "/spec/updateStrategy/rollingUpdate/partition", -1);
    if spec > replicas {
        return fewer("replicas", replicas, spec);
    }
    if spec > ready {
        return fewer("ready", ready, spec);
    }
    if replicas > spec {
        return InProgress(format!("pending termination: {}", replicas - spec));
    }
    if partition >= 0 {
        return if updated < spec - partition {
            fewer("updated", updated, spec - partition)
        } else {
            Current
        };
    }
    if spec > current {
        return fewer("current", current, spec);
    }
    if string(object, "/status/currentRevision") != string(object, "/status/updateRevision") {
        return InProgress("the update revision is not current yet".to_string());
    }
    Current
}

fn daemon_set(object: &Value) -> ObjectHealth {
    if object.pointer("/status/observedGeneration").is_none() {
        return InProgress("status.observedGeneration not set yet".to_string());
    }
    let desired = int(object, "/status/desiredNumberScheduled", -1);
    if desired < 0 {
        return InProgress("status.desiredNumberScheduled not set yet".to_string());
    }
    let checks = [
        ("current", "/status/currentNumberScheduled"),
        ("updated", "/status/updatedNumberScheduled"),
        ("available", "/status/numberAvailable"),
        ("ready", "/status/numberReady"),
    ];
    for (what, pointer) in checks {
        let have = int(object, pointer, 0);
        if desired > have {
            return fewer(what, have, desired);
        }
    }
    Current
}

fn job(object: &Value) -> ObjectHealth {
    if let Some(("True", reason, message)) = condition(object, "Failed") {
        return Failed(format!("job failed ({reason}): {message}"));
    }
    if let Some(("True", _, _)) = condition(object, "Complete") {
        return Current;
    }
    InProgress("job not complete".to_string())
}

fn pod(object: &Value) -> ObjectHealth {
    match string(object, "/status/phase") {
        "Succeeded" | "Failed" => Current,
        "Running" if matches!(condition(object, "Ready"), Some(("True", _, _))) => Current,
        "Running" => InProgress("pod running but not ready".to_string()),
        phase => InProgress(format!("pod phase {phase:?}")),
    }
}

fn pvc(object: &Value) -> ObjectHealth {
    match string(object, "/status/phase") {
        "Bound" => Current,
        phase => InProgress(format!("claim not bound (phase {phase:?})")),
    }
}

fn crd(object: &Value) -> ObjectHealth {
    match condition(object, "Established") {
        Some(("True", _, _)) => Current,
        _ => InProgress("CRD not established".to_string()),
    }
}

/// Any other kind: `Stalled=True` fails it, `Reconciling=True` or `Ready=False` keeps it in
/// progress; no conditions at all (ConfigMaps, Services, ...) is current.
fn by_conditions(object: &Value) -> ObjectHealth {
    if let Some(("True", reason, message)) = condition(object, "Stalled") {
        return Failed(format!("stalled ({reason}): {message}"));
    }
    if let Some(("True", reason, message)) = condition(object, "Reconciling") {
        return InProgress(format!("reconciling ({reason}): {message}"));
    }
    match condition(object, "Ready") {
        Some(("True", _, _)) | None => Current,
        Some((status, reason, message)) => {
            InProgress(format!("Ready={status} ({reason}): {message}"))
        }
    }
}
