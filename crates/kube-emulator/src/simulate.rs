//! Stand-ins for controllers: the status a healthy cluster would soon report for a new or changed
//! spec (workloads ready, jobs complete, claims bound, pods running, load balancers assigned).

use serde_json::{Value, json};

use crate::clock;
use crate::meta;
use crate::resources::ResourceInfo;

/// Sets the settled status of an object whose spec was just created or changed.
pub fn settle(info: &ResourceInfo, obj: &mut Value) {
    let status = match (info.group.as_str(), info.plural.as_str()) {
        ("apps", "deployments") => Some(deployment(obj)),
        ("apps", "statefulsets") => Some(stateful_set(obj)),
        ("apps", "replicasets") => Some(replica_set(obj)),
        ("apps", "daemonsets") => Some(daemon_set(obj)),
        ("batch", "jobs") => Some(job(obj)),
        ("", "pods") => Some(pod(obj)),
        ("", "persistentvolumeclaims") => Some(claim(obj)),
        ("", "services") => load_balancer(obj),
        _ => None,
    };
    if let Some(status) = status {
        meta::ensure_object(obj).insert("status".into(), status);
    }
}

fn int(obj: &Value, pointer: &str, default: i64) -> i64 {
    obj.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn generation(obj: &Value) -> i64 {
    int(obj, "/metadata/generation", 1)
}

fn condition(kind: &str, reason: &str) -> Value {
    let now = clock::now_rfc3339();
    json!({"type": kind, "status": "True", "reason": reason, "lastTransitionTime": now, "lastUpdateTime": now})
}

fn deployment(obj: &Value) -> Value {
    let n = int(obj, "/spec/replicas", 1);
    json!({
        "observedGeneration": generation(obj), "replicas": n, "updatedReplicas": n,
        "readyReplicas": n, "availableReplicas": n,
        "conditions": [condition("Available", "MinimumReplicasAvailable"),
                       condition("Progressing", "NewReplicaSetAvailable")],
    })
}

fn stateful_set(obj: &Value) -> Value {
    let n = int(obj, "/spec/replicas", 1);
    let revision = format!(
        "{}-{}",
        meta::name(obj).unwrap_or_default(),
        generation(obj)
    );
    json!({
        "observedGeneration": generation(obj), "replicas": n, "readyReplicas": n,
        "currentReplicas": n, "updatedReplicas": n, "availableReplicas": n,
        "currentRevision": revision, "updateRevision": revision, "collisionCount": 0,
    })
}

fn replica_set(obj: &Value) -> Value {
    let n = int(obj, "/spec/replicas", 1);
    json!({
        "observedGeneration": generation(obj), "replicas": n, "fullyLabeledReplicas": n,
        "readyReplicas": n, "availableReplicas": n,
    })
}

fn daemon_set(obj: &Value) -> Value {
    json!({
        "observedGeneration": generation(obj), "currentNumberScheduled": 1,
        "desiredNumberScheduled": 1, "numberReady": 1, "numberAvailable": 1,
        "updatedNumberScheduled": 1, "numberMisscheduled": 0,
    })
}

fn job(obj: &Value) -> Value {
    let now = clock::now_rfc3339();
    json!({
        "startTime": now, "completionTime": now, "ready": 0,
        "succeeded": int(obj, "/spec/completions", 1),
        "conditions": [condition("SuccessCriteriaMet", "CompletionsReached"),
                       condition("Complete", "CompletionsReached")],
    })
}

/// Pods that restart run forever (`Running`, ready); the others have already succeeded.
fn pod(obj: &Value) -> Value {
    let now = clock::now_rfc3339();
    let runs_once = matches!(
        obj.pointer("/spec/restartPolicy").and_then(Value::as_str),
        Some("Never" | "OnFailure")
    );
    let state = if runs_once {
        json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}})
    } else {
        json!({"running": {"startedAt": now}})
    };
    let containers: Vec<Value> = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            json!({"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": !runs_once,
                   "started": !runs_once, "restartCount": 0, "state": state,
                   "containerID": format!("emulated://{}", c.get("name").and_then(Value::as_str).unwrap_or(""))})
        })
        .collect();
    let mut conditions = vec![condition("PodScheduled", ""), condition("Initialized", "")];
    if !runs_once {
        conditions.extend([condition("ContainersReady", ""), condition("Ready", "")]);
    }
    json!({
        "phase": if runs_once { "Succeeded" } else { "Running" },
        "conditions": conditions, "containerStatuses": containers,
        "hostIP": "127.0.0.1", "podIP": "10.244.0.10", "startTime": now,
    })
}

fn claim(obj: &Value) -> Value {
    json!({
        "phase": "Bound",
        "accessModes": obj.pointer("/spec/accessModes").cloned().unwrap_or_else(|| json!(["ReadWriteOnce"])),
        "capacity": {"storage": obj.pointer("/spec/resources/requests/storage").cloned().unwrap_or_else(|| json!("1Gi"))},
    })
}

fn load_balancer(obj: &Value) -> Option<Value> {
    let is_lb = obj.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer");
    is_lb.then(|| json!({"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    fn settled(group: &str, plural: &str, mut obj: Value) -> Value {
        let reg = Registry::new(std::iter::empty());
        let info = reg.find(group, "v1", plural).unwrap();
        settle(info, &mut obj);
        obj
    }

    #[test]
    fn jobs_complete_and_run_once_pods_succeed() {
        let job = settled("batch", "jobs", json!({"spec": {}}));
        assert_eq!(job["status"]["succeeded"], 1);
        assert_eq!(job["status"]["conditions"][1]["type"], "Complete");
        let pod = settled(
            "",
            "pods",
            json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}),
        );
        assert_eq!(pod["status"]["phase"], "Succeeded");
        let pod = settled("", "pods", json!({"spec": {"containers": [{"name": "c"}]}}));
        assert_eq!(pod["status"]["phase"], "Running");
        assert_eq!(pod["status"]["containerStatuses"][0]["ready"], true);
    }

    #[test]
    fn only_load_balancer_services_get_a_status() {
        assert!(
            settled("", "services", json!({"spec": {}}))
                .get("status")
                .is_none()
        );
        let lb = settled("", "services", json!({"spec": {"type": "LoadBalancer"}}));
        assert_eq!(
            lb["status"]["loadBalancer"]["ingress"][0]["ip"],
            "127.0.0.1"
        );
    }
}
