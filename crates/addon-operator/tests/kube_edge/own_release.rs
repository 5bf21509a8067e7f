//! The operator's own Helm release is found from its pod's controllers against the emulator.

use addon_operator::edges::kube::own_release::own_release;
use serde_json::json;

use crate::common::start;

fn owner(kind: &str, name: &str) -> serde_json::Value {
    json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "u", "controller": true}])
}

#[tokio::test]
async fn the_release_of_the_pods_deployment_is_found_through_its_replica_set() {
    let env = start().await;
    env.namespace("addons").await;
    let annotations = json!({"meta.helm.sh/release-name": "operator", "meta.helm.sh/release-namespace": "addons"});
    env.create(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "namespace": "addons", "annotations": annotations},
        "spec": {"selector": {"matchLabels": {"app": "op"}}, "replicas": 0,
                 "template": {"metadata": {"labels": {"app": "op"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
        .await;
    env.create(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "op-5d", "namespace": "addons", "ownerReferences": owner("Deployment", "op")},
        "spec": {"selector": {"matchLabels": {"app": "op"}}, "replicas": 0,
                 "template": {"metadata": {"labels": {"app": "op"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
        .await;
    env.create(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "op-5d-x", "namespace": "addons", "ownerReferences": owner("ReplicaSet", "op-5d")},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .await;
    env.create(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bare", "namespace": "addons"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .await;
    let client = env.client().await;
    assert_eq!(
        own_release(&client, "addons", "op-5d-x").await.as_deref(),
        Some("operator")
    );
    assert_eq!(own_release(&client, "addons", "bare").await, None);
    assert_eq!(own_release(&client, "addons", "missing").await, None);
}
