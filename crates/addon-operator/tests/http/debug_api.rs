//! The debug API on a unix socket in a temp dir: every route and format, stale sockets, shutdown.

use std::path::PathBuf;
use std::sync::Arc;

use addon_operator::cli::debug::{DebugClientError, get};
use addon_operator::edges::http;
use addon_operator_testkit::wait::wait_for_async;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::fake::FakeStatus;

pub struct DebugServer {
    pub socket: PathBuf,
    _dir: tempfile::TempDir,
}

pub fn start_with(status: FakeStatus) -> DebugServer {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run/addon-operator/debug.socket");
    let listener = http::bind_debug_socket(&socket).unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let socket = socket.clone();
        async move { http::serve_debug_listener(listener, &socket, Arc::new(status), shutdown).await }
    });
    DebugServer { socket, _dir: dir }
}

pub fn start() -> DebugServer {
    start_with(FakeStatus::new())
}

async fn json_of(server: &DebugServer, path: &str) -> Value {
    serde_json::from_str(&get(&server.socket, path).await.unwrap()).unwrap()
}

#[tokio::test]
async fn the_root_says_the_endpoint_is_alive() {
    let server = start();
    assert_eq!(
        get(&server.socket, "/").await.unwrap(),
        "debug endpoint is alive\n"
    );
}

#[tokio::test]
async fn queue_list_is_text_by_default_and_json_or_yaml_by_extension() {
    let server = start();
    let text = get(&server.socket, "/queue/list").await.unwrap();
    assert_eq!(text, get(&server.socket, "/queue/list.text").await.unwrap());
    assert!(text.starts_with("Queue 'main': length 2"), "{text}");
    assert!(text.contains(" 1. ModuleRun:main:module-alpha\n"), "{text}");
    assert!(!text.contains("Empty queues"), "{text}");
    let doc = json_of(&server, "/queue/list.json").await;
    assert_eq!(doc["summary"]["totalTasks"], 2);
    assert_eq!(doc["active"][0]["tasks"][1]["index"], 2);
    assert!(doc.get("empty").is_none());
    let yaml = get(&server.socket, "/queue/list.yaml").await.unwrap();
    assert_eq!(addon_core::yaml::parse(&yaml).unwrap(), doc);
}

#[tokio::test]
async fn show_empty_lists_empty_queues() {
    let server = start();
    let text = get(&server.socket, "/queue/list.text?showEmpty=true")
        .await
        .unwrap();
    assert!(text.contains("Empty queues (1):\n- idle-queue\n"), "{text}");
    let doc = json_of(&server, "/queue/list.json?showEmpty=true").await;
    assert_eq!(
        doc["empty"],
        json!([{"name": "idle-queue", "tasksCount": 0}])
    );
}

#[tokio::test]
async fn queue_main_shows_the_main_queue() {
    let server = start();
    let text = get(&server.socket, "/queue/main").await.unwrap();
    assert!(text.starts_with("Queue 'main': length 2"), "{text}");
    let doc = json_of(&server, "/queue/main.json").await;
    assert_eq!(doc["name"], "main");
    assert_eq!(doc["tasksCount"], 2);
}

#[tokio::test]
async fn global_routes_show_hooks_values_and_config() {
    let server = start();
    assert_eq!(
        json_of(&server, "/global/list.json").await,
        json!({"globalHooks": ["global-hooks/hook.sh"]})
    );
    assert_eq!(
        json_of(&server, "/global/values.json").await,
        json!({"enabledModules": ["module-alpha"], "discovery": {"ready": true}})
    );
    assert_eq!(
        get(&server.socket, "/global/config.yaml").await.unwrap(),
        "param: 1\n"
    );
}

#[tokio::test]
async fn module_list_shows_enabled_modules_sorted() {
    let server = start();
    assert_eq!(
        json_of(&server, "/module/list.json").await,
        json!({"enabledModules": ["module-alpha", "module-beta"]})
    );
    assert_eq!(
        get(&server.socket, "/module/list.yaml").await.unwrap(),
        "enabledModules:\n- module-alpha\n- module-beta\n"
    );
}

#[tokio::test]
async fn module_list_adds_the_reasons_enabled_scripts_gave_for_disabled_modules() {
    let mut status = FakeStatus::new();
    status
        .disabled
        .insert("module-gamma".into(), "no nodes".into());
    let server = start_with(status);
    assert_eq!(
        json_of(&server, "/module/list.json").await,
        json!({"enabledModules": ["module-alpha", "module-beta"],
               "disabledReasons": {"module-gamma": "no nodes"}})
    );
}

#[tokio::test]
async fn module_values_and_config_with_and_without_the_global_section() {
    let server = start();
    assert_eq!(
        json_of(&server, "/module/module-alpha/values.json").await,
        json!({"replicas": 2})
    );
    assert_eq!(
        json_of(&server, "/module/module-alpha/config.json").await,
        json!({"replicas": 1})
    );
    assert_eq!(
        json_of(&server, "/module/module-alpha/values.json?global=true").await,
        json!({
            "global": {"enabledModules": ["module-alpha"], "discovery": {"ready": true}},
            "moduleAlpha": {"replicas": 2}
        })
    );
    assert_eq!(
        json_of(&server, "/module/module-alpha/config.json?global=true").await,
        json!({"global": {"param": 1}, "moduleAlpha": {"replicas": 1}})
    );
}

#[tokio::test]
async fn an_unknown_module_is_a_404_naming_it() {
    let server = start();
    let err = get(&server.socket, "/module/nope/values.json")
        .await
        .unwrap_err();
    let DebugClientError::Status { status, body, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (*status, body.as_str()),
        (404, "Error: module 'nope' not found")
    );
}

#[tokio::test]
async fn optional_routes_are_404_until_the_runtime_provides_them() {
    let server = start();
    for path in [
        "/global/patches.json",
        "/global/snapshots.json",
        "/module/resource-monitor.json",
    ] {
        let err = get(&server.socket, path).await.unwrap_err();
        assert!(err.to_string().contains("HTTP 404"), "{path}: {err}");
    }
    let mut status = FakeStatus::new();
    status.with_snapshots = true;
    let server = start_with(status);
    assert_eq!(
        json_of(&server, "/module/module-alpha/snapshots.json").await,
        json!({"hooks/pods": {"pods": []}})
    );
}

#[tokio::test]
async fn unknown_routes_and_formats_are_404() {
    let server = start();
    for path in [
        "/queue/list.xml",
        "/nothing",
        "/module/a/b/c",
        "/module/module-alpha/render",
    ] {
        let err = get(&server.socket, path).await.unwrap_err();
        assert!(err.to_string().contains("HTTP 404"), "{path}: {err}");
    }
}

#[tokio::test]
async fn discovery_lists_the_debug_routes() {
    let server = start();
    let text = get(&server.socket, "/discovery").await.unwrap();
    assert!(
        text.contains("GET /module/{name}/values.{json|yaml|text}?global=true\n"),
        "{text}"
    );
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced_and_removed_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("debug.socket");
    std::fs::write(&socket, "stale").unwrap();
    let shutdown = CancellationToken::new();
    let status = Arc::new(FakeStatus::new());
    let task = tokio::spawn({
        let (socket, shutdown) = (socket.clone(), shutdown.clone());
        async move { http::serve_debug_socket(&socket, status, shutdown).await }
    });
    let answers = || async { get(&socket, "/").await.is_ok() };
    let limit = std::time::Duration::from_secs(5);
    wait_for_async("the debug socket to answer", limit, answers, String::new).await;
    let answer = get(&socket, "/").await.ok();
    assert_eq!(answer.as_deref(), Some("debug endpoint is alive\n"));
    shutdown.cancel();
    task.await.unwrap().unwrap();
    assert!(!socket.exists(), "socket file removed on shutdown");
}

#[tokio::test]
async fn the_debug_api_is_also_served_over_tcp() {
    let listener = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn(http::serve_debug_tcp(
        listener,
        Arc::new(FakeStatus::new()),
        shutdown.clone(),
    ));
    let response = crate::client::get(addr, "/module/list.json").await;
    assert_eq!(response.status, 200);
    let doc: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(doc["enabledModules"][0], "module-alpha");
    shutdown.cancel();
}
