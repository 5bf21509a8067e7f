//! `ObjectPatcher`: every `$KUBERNETES_PATCH_PATH` operation against ConfigMaps, Deployments and Pods, including the status subresource and `ignoreMissingObject`.

use std::time::Duration;

use addon_core::hook_output::kube_patch::parse;
use addon_operator::edges::kube::{ObjectPatcher, PatchError, PatcherSettings};
use serde_json::{Value, json};

use crate::common::{Env, pod, start};

async fn patcher(env: &Env) -> ObjectPatcher {
    let settings = PatcherSettings {
        delete_timeout: Duration::from_secs(5),
        delete_poll: Duration::from_millis(100),
        ..PatcherSettings::default()
    };
    ObjectPatcher::with_settings(env.resolver().await, settings)
}

async fn run(env: &Env, text: &str) -> Result<(), PatchError> {
    let ops = parse(text).unwrap();
    let patcher = patcher(env).await;
    // Spawned: the runtime may run patches on any worker thread.
    tokio::spawn(async move { patcher.apply(&ops).await })
        .await
        .unwrap()
}

fn cm(env: &Env, name: &str) -> Option<Value> {
    env.emu.object("", "configmaps", "default", name)
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    })
}

#[tokio::test]
async fn create_fails_on_an_existing_object_and_create_if_not_exists_leaves_it_alone() {
    let env = start().await;
    let create = r#"{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"namespace": "default", "name": "a"}, "data": {"k": "1"}}}"#;
    run(&env, create).await.unwrap();
    assert_eq!(cm(&env, "a").unwrap()["data"]["k"], "1");

    let err = run(&env, create).await.unwrap_err();
    assert_eq!(err.failures[0].index, 0);
    let text = err.to_string();
    assert!(
        text.contains("operation 0 (Create object v1/ConfigMap/default/a)")
            && text.contains("create"),
        "{text}"
    );

    let keep = r#"
operation: CreateIfNotExists
object: |
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": "a"}, "data": {"k": "2"}}
"#;
    run(&env, keep).await.unwrap();
    assert_eq!(cm(&env, "a").unwrap()["data"]["k"], "1");
}

#[tokio::test]
async fn create_or_update_creates_then_replaces_the_whole_object() {
    let env = start().await;
    let op = |replicas: i64| {
        json!({"operation": "CreateOrUpdate", "object": deployment("web", replicas)}).to_string()
    };
    run(&env, &op(1)).await.unwrap();
    run(&env, &op(3)).await.unwrap();
    let d = env
        .emu
        .object("apps", "deployments", "default", "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);
}

#[tokio::test]
async fn every_delete_removes_the_object_and_a_missing_object_is_fine() {
    let env = start().await;
    for name in ["fg", "bg", "orphan"] {
        env.create(deployment(name, 1)).await;
    }
    let ops = r#"
operation: Delete
apiVersion: apps/v1
kind: Deployment
namespace: default
name: fg
---
operation: DeleteInBackground
kind: deploy
namespace: default
name: bg
---
operation: DeleteNonCascading
kind: deployments
namespace: default
name: orphan
---
operation: Delete
kind: ConfigMap
namespace: default
name: never-existed
"#;
    run(&env, ops).await.unwrap();
    assert!(env.emu.objects("apps", "deployments").is_empty());
}

#[tokio::test]
async fn jq_patch_updates_the_object_and_honours_ignore_missing_object() {
    let env = start().await;
    env.create(deployment("web", 1)).await;
    let ops = r#"
{"operation": "JQPatch", "kind": "Deployment", "namespace": "default", "name": "web", "jqFilter": ".spec.replicas = 4 | .spec.template.metadata.labels.patched = \"yes\""}
{"operation": "JQPatch", "kind": "Deployment", "namespace": "default", "name": "web", "jqFilter": "."}
{"operation": "JQPatch", "kind": "Deployment", "namespace": "default", "name": "gone", "jqFilter": ".spec.replicas = 1", "ignoreMissingObject": true}
"#;
    run(&env, ops).await.unwrap();
    let d = env
        .emu
        .object("apps", "deployments", "default", "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 4);
    assert_eq!(
        d["spec"]["template"]["metadata"]["labels"]["patched"],
        "yes"
    );
    assert_eq!(
        d["metadata"]["generation"], 2,
        "the no-op filter wrote nothing"
    );
}

#[tokio::test]
async fn merge_and_json_patches_change_the_object_and_its_status_subresource() {
    let env = start().await;
    env.create(deployment("web", 1)).await;
    env.create(pod("default", "p", "x")).await;
    let ops = r#"
{"operation": "MergePatch", "kind": "Deployment", "namespace": "default", "name": "web", "mergePatch": {"spec": {"replicas": 2}}}
{"operation": "JSONPatch", "kind": "Deployment", "namespace": "default", "name": "web", "jsonPatch": "[{\"op\": \"add\", \"path\": \"/metadata/labels\", \"value\": {\"a\": \"b\"}}]"}
{"operation": "MergePatch", "kind": "Pod", "namespace": "default", "name": "p", "subresource": "status", "mergePatch": "status:\n  phase: Running\n"}
{"operation": "JSONPatch", "kind": "Pod", "namespace": "default", "name": "p", "subresource": "status", "jsonPatch": [{"op": "add", "path": "/status/message", "value": "hi"}]}
"#;
    run(&env, ops).await.unwrap();
    let d = env
        .emu
        .object("apps", "deployments", "default", "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["labels"], json!({"a": "b"}));
    let p = env.emu.object("", "pods", "default", "p").unwrap();
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(p["status"]["message"], "hi");
}

#[tokio::test]
async fn patches_of_a_missing_object_fail_unless_ignore_missing_object_is_set() {
    let env = start().await;
    let ignored = r#"
{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "default", "name": "gone", "ignoreMissingObject": true, "mergePatch": {"data": {"a": "b"}}}
{"operation": "JSONPatch", "kind": "ConfigMap", "namespace": "default", "name": "gone", "ignoreMissingObject": true, "jsonPatch": [{"op": "add", "path": "/data", "value": {}}]}
"#;
    run(&env, ignored).await.unwrap();

    let failing = r#"
{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "default", "name": "gone", "mergePatch": {"data": {"a": "b"}}}
{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": "made"}}}
{"operation": "JQPatch", "kind": "ConfigMap", "namespace": "default", "name": "gone", "jqFilter": "."}
{"operation": "MergePatch", "kind": "Gadget", "namespace": "default", "name": "g", "mergePatch": {}}
"#;
    let err = run(&env, failing).await.unwrap_err();
    let indexes: Vec<usize> = err.failures.iter().map(|f| f.index).collect();
    assert_eq!(indexes, [0, 2, 3], "{err}");
    assert!(cm(&env, "made").is_some(), "the other operations still ran");
    let text = err.to_string();
    assert!(
        text.starts_with("3 of 4 Kubernetes operations failed"),
        "{text}"
    );
    assert!(
        text.contains("operation 2 (JQPatch object /ConfigMap/default/gone): get"),
        "{text}"
    );
    assert!(text.contains("kind 'Gadget' is not served"), "{text}");
}

/// Operations built without the parser (whoever builds them) still cannot put a path or query
/// into a request URL: the patcher checks names again and the object stays.
#[tokio::test]
async fn a_target_name_with_a_path_is_refused_before_any_request() {
    use addon_core::hook_output::kube_patch::{DeletePropagation, KubeOperation, ObjectRef};
    let env = start().await;
    run(&env, r#"{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": "victim"}}}"#)
        .await
        .unwrap();
    let ops = vec![KubeOperation::Delete {
        target: ObjectRef {
            api_version: Some("v1".into()),
            kind: "ConfigMap".into(),
            namespace: Some("default".into()),
            name: "x/../victim".into(),
            subresource: None,
        },
        propagation: DeletePropagation::Background,
    }];
    let err = patcher(&env).await.apply(&ops).await.unwrap_err();
    assert!(
        err.to_string().contains("is not a valid Kubernetes name"),
        "{err}"
    );
    assert!(cm(&env, "victim").is_some());
}
