//! The operator's client against injected faults: reads retry through server errors, writes are
//! not repeated after a `500`, and throttling is waited out.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

use crate::common::start;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }))
    .unwrap()
}

#[tokio::test]
async fn a_read_goes_through_a_few_internal_errors() {
    let env = start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    api.create(&PostParams::default(), &config_map("a"))
        .await
        .unwrap();
    env.emu.fail_next_requests(3, 500);
    let found = api.get("a").await.unwrap();
    assert_eq!(found.metadata.name.as_deref(), Some("a"));
}

#[tokio::test]
async fn a_write_answered_with_an_internal_error_is_not_repeated() {
    let env = start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    env.emu.fail_next_requests(1, 500);
    let error = api
        .create(&PostParams::default(), &config_map("b"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(s) if s.code == 500),
        "{error}"
    );
    assert!(api.get_opt("b").await.unwrap().is_none());
}

#[tokio::test]
async fn throttled_writes_are_retried_after_the_servers_delay() {
    let env = start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    env.emu.fail_next_requests(2, 429);
    api.create(&PostParams::default(), &config_map("c"))
        .await
        .unwrap();
    assert!(api.get_opt("c").await.unwrap().is_some());
}

#[tokio::test]
async fn too_many_failures_reach_the_caller() {
    let env = start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    env.emu.fail_next_requests(50, 503);
    // 1 try and 5 retries, then the caller (a task, retried by its queue) sees the error
    let error = api.get_opt("d").await.unwrap_err();
    assert!(
        error.to_string().contains("injected fault (503)"),
        "{error}"
    );
}
