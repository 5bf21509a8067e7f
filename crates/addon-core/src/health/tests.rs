use std::time::Duration;

use serde_json::json;

use super::*;

fn deployment(spec: i64, status: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "generation": 2},
        "spec": {"replicas": spec}, "status": status})
}

#[test]
fn object_statuses_follow_the_kstatus_rules() {
    let available = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
        "readyReplicas": 2, "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True"}]});
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "available deployment",
            deployment(2, available.clone()),
            "current",
        ),
        (
            "deployment without status",
            deployment(2, json!({})),
            "replicas: 0/2",
        ),
        (
            "deployment behind its generation",
            deployment(2, json!({"observedGeneration": 1, "replicas": 2})),
            "generation 2",
        ),
        (
            "deployment with unavailable pods",
            deployment(
                2,
                json!({"observedGeneration": 2,
            "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 1}),
            ),
            "available: 1/2",
        ),
        (
            "deployment past its deadline",
            deployment(
                2,
                json!({"observedGeneration": 2,
            "conditions": [{"type": "Progressing", "status": "False",
                "reason": "ProgressDeadlineExceeded", "message": "too slow"}]}),
            ),
            "failed",
        ),
        (
            "statefulset rolled out",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "spec": {"replicas": 1}, "status": {"replicas": 1, "readyReplicas": 1,
            "currentReplicas": 1, "updatedReplicas": 1, "currentRevision": "a",
            "updateRevision": "a"}}),
            "current",
        ),
        (
            "statefulset mid-rollout",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "spec": {"replicas": 1}, "status": {"replicas": 1, "readyReplicas": 1,
            "currentReplicas": 1, "currentRevision": "a", "updateRevision": "b"}}),
            "revision",
        ),
        (
            "daemonset not scheduled",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "status": {"observedGeneration": 1, "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3,
            "numberReady": 2}}),
            "ready: 2/3",
        ),
        (
            "daemonset never observed",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "status": {}}),
            "observedGeneration",
        ),
        (
            "complete job",
            json!({"apiVersion": "batch/v1", "kind": "Job", "status":
            {"conditions": [{"type": "Complete", "status": "True"}]}}),
            "current",
        ),
        (
            "failed job",
            json!({"apiVersion": "batch/v1", "kind": "Job", "status":
            {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}}),
            "failed",
        ),
        (
            "running job",
            json!({"apiVersion": "batch/v1", "kind": "Job", "status": {}}),
            "not complete",
        ),
        (
            "custom resource not ready",
            json!({"apiVersion": "example.com/v1", "kind": "Db",
            "status": {"conditions": [{"type": "Ready", "status": "False",
            "reason": "Provisioning", "message": "disk"}]}}),
            "Ready=False",
        ),
        (
            "custom resource stalled",
            json!({"apiVersion": "example.com/v1", "kind": "Db",
            "status": {"conditions": [{"type": "Stalled", "status": "True"}]}}),
            "failed",
        ),
        (
            "custom resource ready",
            json!({"apiVersion": "example.com/v1", "kind": "Db",
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            "current",
        ),
        (
            "configmap",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}),
            "current",
        ),
        (
            "unbound claim",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "status": {"phase": "Pending"}}),
            "not bound",
        ),
        (
            "object being deleted",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            "deleted",
        ),
    ];
    for (name, object, expected) in cases {
        let got = assess(&object);
        let matched = match (&got, expected) {
            (ObjectHealth::Current, "current") => true,
            (ObjectHealth::Failed(_), "failed") => true,
            (ObjectHealth::InProgress(reason), want) => reason.contains(want),
            _ => false,
        };
        assert!(matched, "{name}: got {got:?}, want {expected}");
    }
}

#[test]
fn a_module_is_ready_only_when_every_object_is_current() {
    let current = ObjectHealth::Current;
    let waiting = ObjectHealth::InProgress("available: 0/1".into());
    let timeout = Duration::from_secs(300);
    let ready = summarize([("ConfigMap/a", &current)], Duration::ZERO, timeout);
    assert_eq!(ready, ModuleHealth::Ready);
    let progressing = summarize(
        [("ConfigMap/a", &current), ("Deployment/web", &waiting)],
        Duration::from_secs(10),
        timeout,
    );
    assert_eq!(
        progressing,
        ModuleHealth::Progressing {
            object: "Deployment/web".into(),
            reason: "available: 0/1".into()
        }
    );
}

#[test]
fn a_module_still_progressing_after_the_timeout_fails_naming_the_object() {
    let waiting = ObjectHealth::InProgress("available: 0/1".into());
    let health = summarize(
        [("Deployment/web", &waiting)],
        Duration::from_secs(300),
        Duration::from_secs(300),
    );
    let ModuleHealth::Failed { object, reason } = health else {
        panic!("{health:?}");
    };
    assert_eq!(object, "Deployment/web");
    assert!(reason.contains("available: 0/1"), "{reason}");
}

#[test]
fn a_failed_object_fails_the_module_before_the_timeout() {
    let failed = ObjectHealth::Failed("job failed".into());
    let waiting = ObjectHealth::InProgress("x".into());
    let health = summarize(
        [("Deployment/web", &waiting), ("Job/migrate", &failed)],
        Duration::ZERO,
        Duration::from_secs(300),
    );
    assert_eq!(health.as_str(), "failed");
    assert_eq!(health.detail(), Some(("Job/migrate", "job failed")));
}
