//! `ConfigMapStore`: load, save, and edits by others on the watch (parsed, invalid, deleted), our own saves staying silent.

use std::collections::BTreeMap;
use std::time::Duration;

use addon_core::config::Config;
use addon_operator::kube::{ConfigMapStore, DEFAULT_CONFIGMAP_NAME};
use addon_operator::runtime::edges::{ConfigBackend, ConfigBackendError, ConfigUpdate};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use tokio::sync::mpsc;

use crate::common::{Env, start};

const NS: &str = "d8-system";

async fn store(env: &Env) -> ConfigMapStore {
    if env.emu.object("", "namespaces", "", NS).is_none() {
        env.namespace(NS).await;
    }
    env.edge().await.config_store(NS, DEFAULT_CONFIGMAP_NAME)
}

fn config(pairs: &[(&str, &str)]) -> Config {
    let data: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_data(&data).unwrap()
}

async fn edit(env: &Env, data: serde_json::Value) {
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, NS);
    let patch = json!({"data": data});
    api.patch(
        DEFAULT_CONFIGMAP_NAME,
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
}

async fn next_update(rx: &mut mpsc::UnboundedReceiver<ConfigUpdate>) -> ConfigUpdate {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("an update within 10 s")
        .expect("the watch is open")
}

async fn no_update(rx: &mut mpsc::UnboundedReceiver<ConfigUpdate>, wait: Duration) {
    if let Ok(Some(update)) = tokio::time::timeout(wait, rx.recv()).await {
        panic!("unexpected update {update:?}");
    }
}

#[tokio::test]
async fn loading_a_missing_configmap_gives_an_empty_config() {
    let env = start().await;
    assert_eq!(store(&env).await.load().await.unwrap(), Config::empty());
}

#[tokio::test]
async fn a_saved_config_loads_back_equal_and_an_update_keeps_the_configmap() {
    let env = start().await;
    let store = store(&env).await;
    let first = config(&[("global", "a: 1\n"), ("someModuleEnabled", "true")]);
    store.save(&first).await.unwrap();
    assert_eq!(store.load().await.unwrap(), first);
    let created = env
        .emu
        .object("", "configmaps", NS, DEFAULT_CONFIGMAP_NAME)
        .unwrap();

    let second = config(&[("global", "a: 2\n"), ("someModule", "x: y\n")]);
    store.save(&second).await.unwrap();
    assert_eq!(store.load().await.unwrap(), second);
    let updated = env
        .emu
        .object("", "configmaps", NS, DEFAULT_CONFIGMAP_NAME)
        .unwrap();
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        updated["data"],
        json!({"global": "a: 2\n", "someModule": "x: y\n"})
    );
}

#[tokio::test]
async fn an_external_edit_arrives_on_the_watch_as_a_parsed_config() {
    let env = start().await;
    let store = store(&env).await;
    store.save(&config(&[("global", "a: 1\n")])).await.unwrap();
    store.load().await.unwrap();
    let mut rx = store.watch();

    edit(
        &env,
        json!({"global": "a: 5\n", "someModuleEnabled": "false"}),
    )
    .await;
    let got = next_update(&mut rx).await.unwrap();
    assert_eq!(
        got,
        config(&[("global", "a: 5\n"), ("someModuleEnabled", "false")])
    );
    assert_eq!(got.global_values(), json!({"a": 5}));
}

#[tokio::test]
async fn a_bad_yaml_edit_arrives_as_a_parse_error_and_a_deletion_as_an_empty_config() {
    let env = start().await;
    let store = store(&env).await;
    store.save(&config(&[("global", "a: 1\n")])).await.unwrap();
    let mut rx = store.watch();
    tokio::time::sleep(Duration::from_millis(300)).await;

    edit(&env, json!({"global": "a: [unclosed\n"})).await;
    match next_update(&mut rx).await {
        Err(e @ ConfigBackendError::Parse(_)) => assert!(e.to_string().contains("global"), "{e}"),
        other => panic!("expected a parse error, got {other:?}"),
    }

    let api: Api<ConfigMap> = Api::namespaced(env.client().await, NS);
    api.delete(DEFAULT_CONFIGMAP_NAME, &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(next_update(&mut rx).await.unwrap(), Config::empty());
}

#[tokio::test]
async fn our_own_save_produces_no_update() {
    let env = start().await;
    let store = store(&env).await;
    assert_eq!(store.load().await.unwrap(), Config::empty());
    let mut rx = store.watch();
    tokio::time::sleep(Duration::from_millis(300)).await;

    store.save(&config(&[("global", "a: 1\n")])).await.unwrap();
    store.save(&config(&[("global", "a: 2\n")])).await.unwrap();
    no_update(&mut rx, Duration::from_millis(700)).await;

    edit(&env, json!({"global": "a: 3\n"})).await;
    assert_eq!(
        next_update(&mut rx).await.unwrap(),
        config(&[("global", "a: 3\n")])
    );
}

#[tokio::test]
async fn an_edit_made_while_the_watch_is_down_arrives_once_and_a_relist_of_unchanged_data_is_silent()
 {
    let env = start().await;
    let store = store(&env).await;
    store.save(&config(&[("global", "a: 1\n")])).await.unwrap();
    let mut rx = store.watch();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A relist (expired history) of the same data reports nothing.
    env.emu.expire_history();
    env.emu.drop_watches();
    no_update(&mut rx, Duration::from_millis(500)).await;

    env.emu.drop_watches();
    edit(&env, json!({"global": "a: 2\n"})).await;
    assert_eq!(
        next_update(&mut rx).await.unwrap(),
        config(&[("global", "a: 2\n")])
    );
    env.emu.expire_history();
    env.emu.drop_watches();
    edit(&env, json!({"global": "a: 3\n"})).await;
    assert_eq!(
        next_update(&mut rx).await.unwrap(),
        config(&[("global", "a: 3\n")])
    );
    no_update(&mut rx, Duration::from_millis(500)).await;
}
