//! `ConfigMapStore`: load, key-level saves onto the current object, and edits by others on the watch (parsed, invalid, deleted), our own saves coming back as echoes only.

use std::collections::BTreeMap;
use std::time::Duration;

use addon_core::config::Config;
use addon_operator::edges::kube::{ConfigMapStore, DEFAULT_CONFIGMAP_NAME};
use addon_operator::runtime::edges::{
    ConfigBackend, ConfigBackendError, ConfigKeyChange, ConfigUpdate, ParsedConfig,
};
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

/// Saves every key of `config` that differs from what the store holds (as the config writer does).
async fn save(store: &ConfigMapStore, config: &Config) {
    let current = store.load().await.unwrap();
    store
        .apply(&ConfigKeyChange::between(&current, config))
        .await
        .unwrap();
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

/// The next edit by others (echoes of our own writes are skipped).
async fn next_update(rx: &mut mpsc::UnboundedReceiver<ConfigUpdate>) -> ParsedConfig {
    loop {
        let update = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an update within 10 s")
            .expect("the watch is open");
        if let ConfigUpdate::Edited { config, .. } = update {
            return config;
        }
    }
}

/// Fails on an edit by others within `wait`; returns how many echoes of our writes came.
async fn no_update(rx: &mut mpsc::UnboundedReceiver<ConfigUpdate>, wait: Duration) -> usize {
    let deadline = tokio::time::Instant::now() + wait;
    let mut echoes = 0;
    while let Ok(Some(update)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        match update {
            ConfigUpdate::OwnWrite => echoes += 1,
            edited => panic!("unexpected update {edited:?}"),
        }
    }
    echoes
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
    save(&store, &first).await;
    assert_eq!(store.load().await.unwrap(), first);
    let created = env
        .emu
        .object("", "configmaps", NS, DEFAULT_CONFIGMAP_NAME)
        .unwrap();

    let second = config(&[("global", "a: 2\n"), ("someModule", "x: z\n")]);
    save(&store, &second).await;
    assert_eq!(store.load().await.unwrap(), second);
    let updated = env
        .emu
        .object("", "configmaps", NS, DEFAULT_CONFIGMAP_NAME)
        .unwrap();
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        updated["data"],
        json!({"global": "a: 2\n", "someModule": "x: z\n"})
    );
}

#[tokio::test]
async fn an_external_edit_arrives_on_the_watch_as_a_parsed_config() {
    let env = start().await;
    let store = store(&env).await;
    save(&store, &config(&[("global", "a: 1\n")])).await;
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
    save(&store, &config(&[("global", "a: 1\n")])).await;
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

    save(&store, &config(&[("global", "a: 1\n")])).await;
    save(&store, &config(&[("global", "a: 2\n")])).await;
    assert_eq!(no_update(&mut rx, Duration::from_millis(700)).await, 2);

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
    save(&store, &config(&[("global", "a: 1\n")])).await;
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

#[tokio::test]
async fn a_save_writes_only_its_keys_and_never_reverts_an_edit_made_after_our_read() {
    let env = start().await;
    let store = store(&env).await;
    save(
        &store,
        &config(&[("global", "counter: 1\n"), ("web", "x: 1\n")]),
    )
    .await;
    // The operator's memory still holds `web: x: 1`; a user changes it and adds a key.
    edit(&env, json!({"web": "x: 2\n", "dbEnabled": "false"})).await;
    let saved = store
        .apply(&ConfigKeyChange::default().with("global", Some(json!({"counter": 2}))))
        .await
        .unwrap();
    let stored = env
        .emu
        .object("", "configmaps", NS, DEFAULT_CONFIGMAP_NAME)
        .unwrap();
    assert_eq!(stored["data"]["web"], "x: 2\n");
    assert_eq!(stored["data"]["dbEnabled"], "false");
    assert_eq!(stored["data"]["global"], "counter: 2\n");
    let stored = saved.stored.unwrap();
    assert_eq!(stored.global_values(), json!({"counter": 2}));
    assert_eq!(
        stored,
        config(&[
            ("global", "counter: 2\n"),
            ("web", "x: 2\n"),
            ("dbEnabled", "false")
        ])
    );
}

#[tokio::test]
async fn a_conflict_reapplies_the_same_key_change_to_a_fresh_read() {
    let env = start().await;
    let store = store(&env).await;
    save(&store, &config(&[("global", "counter: 1\n")])).await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, NS);
    // A client that read before us and writes during our save: its PUT lands first.
    let mut theirs = api.get(DEFAULT_CONFIGMAP_NAME).await.unwrap();
    let mut rx = store.watch();
    tokio::time::sleep(Duration::from_millis(300)).await;
    theirs
        .data
        .get_or_insert_default()
        .insert("web".into(), "x: user\n".into());
    api.replace(DEFAULT_CONFIGMAP_NAME, &Default::default(), &theirs)
        .await
        .unwrap();
    store
        .apply(&ConfigKeyChange::default().with("global", Some(json!({"counter": 2}))))
        .await
        .unwrap();
    let data = env
        .emu
        .object("", "configmaps", NS, DEFAULT_CONFIGMAP_NAME)
        .unwrap()["data"]
        .clone();
    assert_eq!(data, json!({"global": "counter: 2\n", "web": "x: user\n"}));
    // The user's edit arrives at most once; our write only as an echo.
    let mut edits = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(800);
    while let Ok(Some(update)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        if let ConfigUpdate::Edited { config, .. } = update {
            edits += 1;
            assert_eq!(
                config
                    .unwrap()
                    .module_values(&addon_core::names::ModuleName::new("web").unwrap()),
                json!({"x": "user"})
            );
        }
    }
    assert!(edits <= 1, "{edits} edits reported");
}

#[tokio::test]
async fn a_failing_api_fails_the_save_and_changes_nothing() {
    let env = start().await;
    let store = store(&env).await;
    save(&store, &config(&[("global", "counter: 1\n")])).await;
    // more failures than the client's retries of a read (a write answered 500 is never retried)
    env.emu.fail_next_requests(100, 500);
    let error = store
        .apply(&ConfigKeyChange::default().with("global", Some(json!({"counter": 2}))))
        .await
        .unwrap_err();
    env.emu.fail_next_requests(0, 500);
    assert_eq!(error.category(), "config_save");
    assert_eq!(
        env.emu
            .object("", "configmaps", NS, DEFAULT_CONFIGMAP_NAME)
            .unwrap()["data"]["global"],
        "counter: 1\n"
    );
}
