//! API semantics checked directly: protobuf bodies, paging, dry-run, finalizers, GC, faults, errors.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use prost::Message;
use serde_json::json;

use crate::common::{raw_request, start};

fn cm(value: serde_json::Value) -> ConfigMap {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn protobuf_create_bodies_are_decoded_and_answered_with_json() {
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    let env = start().await;
    let secret = core::Secret {
        metadata: Some(meta::ObjectMeta {
            name: Some("release".into()),
            ..Default::default()
        }),
        data: [("release".to_string(), b"payload".to_vec())].into(),
        r#type: Some("helm.sh/release.v1".into()),
        ..Default::default()
    };
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("Secret".into()),
        }),
        raw: Some(secret.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\x00".to_vec();
    body.extend(unknown.encode_to_vec());
    let headers = [
        ("Content-Type", "application/vnd.kubernetes.protobuf"),
        ("Accept", "application/vnd.kubernetes.protobuf, */*"),
    ];
    let resp = raw_request(
        &env.emu.url(),
        "POST",
        "/api/v1/namespaces/default/secrets",
        &headers,
        &body,
    )
    .await;
    assert_eq!(resp.status, 201);
    assert_eq!(resp.content_type, "application/json");
    let created = resp.json();
    assert_eq!(created["data"]["release"], "cGF5bG9hZA==");
    assert_eq!(created["type"], "helm.sh/release.v1");
    let secrets: Api<Secret> = Api::namespaced(env.client().await, "default");
    let read = secrets.get("release").await.unwrap();
    assert_eq!(read.data.unwrap()["release"].0, b"payload");
}

#[tokio::test]
async fn paged_lists_show_their_first_version_and_count_the_rest_only_without_selectors() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    for i in 0..5 {
        let labeled = json!({"metadata": {"name": format!("c{i}"), "labels": {"app": "x"}}});
        cms.create(&PostParams::default(), &cm(labeled))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(first.metadata.remaining_item_count, Some(3));
    let selected = ListParams::default().limit(2).labels("app=x");
    let filtered = cms.list(&selected).await.unwrap();
    assert_eq!(filtered.metadata.remaining_item_count, None);
    assert!(filtered.metadata.continue_.is_some());
    cms.delete("c2", &DeleteParams::default()).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    let later = ListParams::default().limit(2).continue_token(&token);
    let second = cms.list(&later).await.unwrap();
    let names: Vec<_> = second
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["c2", "c3"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    assert_eq!(second.metadata.remaining_item_count, Some(1));
    env.emu.expire_history();
    let err = cms.list(&later).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 410 && s.reason == "Expired"),
        "{err:?}"
    );
    assert!(env.emu.objects_examined_by_lists() > 0);
}

#[tokio::test]
async fn lists_page_with_limit_and_continue_and_filter_by_fields_and_namespaces() {
    let env = start().await;
    let client = env.client().await;
    for ns in ["a", "b"] {
        let nss: Api<Namespace> = Api::all(client.clone());
        nss.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for i in 0..3 {
            cms.create(
                &PostParams::default(),
                &cm(json!({"metadata": {"name": format!("c{i}")}})),
            )
            .await
            .unwrap();
        }
    }
    let all: Api<ConfigMap> = Api::all(client.clone());
    let page = all.list(&ListParams::default().limit(4)).await.unwrap();
    assert_eq!(page.items.len(), 4);
    let token = page.metadata.continue_.clone().expect("continue token");
    let rest = all
        .list(&ListParams::default().limit(4).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 2);
    assert!(rest.metadata.continue_.is_none_or(|c| c.is_empty()));
    let named = all
        .list(&ListParams::default().fields("metadata.name=c1,metadata.namespace!=a"))
        .await
        .unwrap();
    let ids: Vec<_> = named
        .items
        .iter()
        .map(|c| {
            (
                c.metadata.namespace.clone().unwrap(),
                c.metadata.name.clone().unwrap(),
            )
        })
        .collect();
    assert_eq!(ids, [("b".to_string(), "c1".to_string())]);
}

#[tokio::test]
async fn dry_run_writes_are_answered_but_not_stored() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    cms.create(&dry, &cm(json!({"metadata": {"name": "ghost"}})))
        .await
        .unwrap();
    assert!(
        env.emu
            .object("", "configmaps", "default", "ghost")
            .is_none()
    );
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "real"}, "data": {"a": "1"}})),
    )
    .await
    .unwrap();
    let patch = json!({"data": {"a": "2"}});
    cms.patch(
        "real",
        &PatchParams::default().dry_run(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
    cms.delete("real", &DeleteParams::default().dry_run())
        .await
        .unwrap();
    assert_eq!(
        env.emu.object("", "configmaps", "default", "real").unwrap()["data"]["a"],
        "1"
    );
}

#[tokio::test]
async fn finalizers_hold_deletion_until_the_last_one_is_removed() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let body = cm(json!({"metadata": {"name": "held", "finalizers": ["x/a", "x/b"]}}));
    cms.create(&PostParams::default(), &body).await.unwrap();
    cms.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = cms.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    let one = json!({"metadata": {"finalizers": ["x/b"]}});
    cms.patch("held", &PatchParams::default(), &Patch::Merge(&one))
        .await
        .unwrap();
    assert!(cms.get("held").await.is_ok());
    let none = json!({"metadata": {"finalizers": null}});
    cms.patch("held", &PatchParams::default(), &Patch::Merge(&none))
        .await
        .unwrap();
    assert!(
        env.emu
            .object("", "configmaps", "default", "held")
            .is_none()
    );
}

#[tokio::test]
async fn deleting_an_owner_collects_its_dependents_unless_orphaned() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let owner = cms
        .create(
            &PostParams::default(),
            &cm(json!({"metadata": {"name": "owner"}})),
        )
        .await
        .unwrap();
    let reference = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]);
    for name in ["child", "grandchild-owner"] {
        cms.create(
            &PostParams::default(),
            &cm(json!({"metadata": {"name": name, "ownerReferences": reference}})),
        )
        .await
        .unwrap();
    }
    let child_uid = env
        .emu
        .object("", "configmaps", "default", "grandchild-owner")
        .unwrap()["metadata"]["uid"]
        .clone();
    let nested = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "grandchild-owner", "uid": child_uid}]);
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "grandchild", "ownerReferences": nested}})),
    )
    .await
    .unwrap();
    cms.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    for name in ["owner", "child", "grandchild-owner", "grandchild"] {
        assert!(
            env.emu.object("", "configmaps", "default", name).is_none(),
            "{name} survived"
        );
    }

    let owner = cms
        .create(
            &PostParams::default(),
            &cm(json!({"metadata": {"name": "owner2"}})),
        )
        .await
        .unwrap();
    let reference = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": owner.metadata.uid}]);
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "kept", "ownerReferences": reference}})),
    )
    .await
    .unwrap();
    cms.delete("owner2", &DeleteParams::orphan()).await.unwrap();
    assert!(
        env.emu
            .object("", "configmaps", "default", "kept")
            .is_some()
    );
}

#[tokio::test]
async fn injected_failures_answer_500_and_429_then_the_api_recovers() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    env.emu.fail_next_requests(1, 500);
    let err = cms.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 500),
        "{err:?}"
    );
    let admin = raw_request(
        &env.emu.url(),
        "POST",
        "/emulator/fail?count=1&code=429",
        &[],
        b"",
    )
    .await;
    assert_eq!(admin.status, 200);
    let resp = raw_request(&env.emu.url(), "GET", "/api/v1/namespaces", &[], b"").await;
    assert_eq!(
        (resp.status, resp.json()["reason"].as_str()),
        (429, Some("TooManyRequests"))
    );
    assert!(cms.list(&ListParams::default()).await.is_ok());
}

#[tokio::test]
async fn errors_are_status_objects_with_the_right_code_and_reason() {
    let env = start().await;
    let url = env.emu.url();
    let cases: [(&str, &str, &[u8], u16, &str); 6] = [
        (
            "PUT",
            "/api/v1/namespaces/default/configmaps",
            b"{}",
            405,
            "MethodNotAllowed",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            b"{\"metadata\":{}}",
            422,
            "Invalid",
        ),
        (
            "GET",
            "/api/v1/configmaps?labelSelector=a%20in%20b",
            b"",
            400,
            "BadRequest",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps/nope",
            b"",
            404,
            "NotFound",
        ),
        (
            "POST",
            "/api/v1/namespaces/missing/configmaps",
            b"{\"metadata\":{\"name\":\"x\"}}",
            404,
            "NotFound",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            b"{\"metadata\":{\"name\":\"a/b\"}}",
            422,
            "Invalid",
        ),
    ];
    for (method, path, body, code, reason) in cases {
        let resp = raw_request(
            &url,
            method,
            path,
            &[("Content-Type", "application/json")],
            body,
        )
        .await;
        let status = resp.json();
        assert_eq!(
            (
                resp.status,
                status["kind"].as_str(),
                status["reason"].as_str()
            ),
            (code, Some("Status"), Some(reason)),
            "{method} {path}"
        );
        assert_eq!(status["code"], code);
    }
}

#[tokio::test]
async fn status_subresource_updates_only_status_and_main_updates_keep_it() {
    let env = start().await;
    let url = env.emu.url();
    let json_ct = [("Content-Type", "application/json")];
    let pod = br#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#;
    assert_eq!(
        raw_request(
            &url,
            "POST",
            "/api/v1/namespaces/default/pods",
            &json_ct,
            pod
        )
        .await
        .status,
        201
    );
    let merge = [("Content-Type", "application/merge-patch+json")];
    let status = br#"{"status":{"phase":"Running"},"spec":{"nodeName":"ignored"}}"#;
    let resp = raw_request(
        &url,
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status",
        &merge,
        status,
    )
    .await;
    assert_eq!(resp.status, 200);
    let stored = env.emu.object("", "pods", "default", "p").unwrap();
    assert_eq!(stored["status"]["phase"], "Running");
    assert!(stored["spec"].get("nodeName").is_none());
    let main = br#"{"status":{"phase":"Failed"},"metadata":{"labels":{"l":"1"}}}"#;
    raw_request(
        &url,
        "PATCH",
        "/api/v1/namespaces/default/pods/p",
        &merge,
        main,
    )
    .await;
    let stored = env.emu.object("", "pods", "default", "p").unwrap();
    assert_eq!(
        (
            stored["status"]["phase"].as_str(),
            stored["metadata"]["labels"]["l"].as_str()
        ),
        (Some("Running"), Some("1"))
    );
}

#[tokio::test]
async fn deletes_answer_a_success_status_unless_finalizers_keep_the_object() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "gone"}})),
    )
    .await
    .unwrap();
    assert!(
        cms.delete("gone", &DeleteParams::default())
            .await
            .unwrap()
            .is_right()
    );
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "kept", "finalizers": ["x/y"]}})),
    )
    .await
    .unwrap();
    assert!(
        cms.delete("kept", &DeleteParams::default())
            .await
            .unwrap()
            .is_left()
    );
}

#[tokio::test]
async fn access_reviews_are_always_allowed_and_never_stored() {
    let env = start().await;
    let review = br#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}"#;
    let resp = raw_request(
        &env.emu.url(),
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &[("Content-Type", "application/json")],
        review,
    )
    .await;
    assert_eq!(resp.status, 201);
    assert_eq!(resp.json()["status"]["allowed"], true);
    assert!(
        env.emu
            .objects("authorization.k8s.io", "selfsubjectaccessreviews")
            .is_empty()
    );
}
