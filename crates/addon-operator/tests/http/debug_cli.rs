//! The built binary's debug commands against a debug socket served by the test.

use std::path::Path;

use tokio::process::Command;

use crate::debug_api::start;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn run(socket: &Path, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_addon-operator"))
        .args(args)
        .arg("--debug-unix-socket")
        .arg(socket)
        .env_remove("DEBUG_UNIX_SOCKET")
        .output()
        .await
        .unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

#[tokio::test]
async fn queue_list_prints_the_text_dump() {
    let server = start();
    let out = run(&server.socket, &["queue", "list"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Queue 'main': length 2, status: ''\n\
         \n 1. ModuleRun:main:module-alpha\n \
         2. GlobalHookRun:main:schedule:global-hooks/hook.sh:every-minute\n\
         \n\
         Summary:\n\
         - 'main' queue: 2 tasks.\n\
         - 1 other queues (0 active, 1 empty): 0 tasks.\n\
         - total 2 tasks to handle.\n"
    );
}

#[tokio::test]
async fn queue_list_json_with_empty_queues() {
    let server = start();
    let out = run(
        &server.socket,
        &["queue", "list", "-o", "json", "--show-empty"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["empty"][0]["name"], "idle-queue");
    assert_eq!(doc["summary"]["mainQueueTasks"], 2);
}

#[tokio::test]
async fn global_values_print_yaml_by_default() {
    let server = start();
    let out = run(&server.socket, &["global", "values"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "enabledModules:\n- module-alpha\ndiscovery:\n  ready: true\n"
    );
}

#[tokio::test]
async fn module_list_and_module_values_print_what_the_operator_holds() {
    let server = start();
    let list = run(&server.socket, &["module", "list", "-o", "json"]).await;
    let doc: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(
        doc,
        serde_json::json!({"enabledModules": ["module-alpha", "module-beta"]})
    );
    let values = run(&server.socket, &["module", "values", "module-alpha"]).await;
    assert_eq!(
        (values.code, values.stdout.as_str()),
        (Some(0), "replicas: 2\n")
    );
    let with_global = run(&server.socket, &["module", "values", "module-alpha", "-g"]).await;
    assert!(
        with_global.stdout.starts_with("global:\n"),
        "{}",
        with_global.stdout
    );
    assert!(
        with_global.stdout.contains("moduleAlpha:\n  replicas: 2\n"),
        "{}",
        with_global.stdout
    );
}

#[tokio::test]
async fn an_unknown_module_exits_1_with_the_servers_message() {
    let server = start();
    let out = run(&server.socket, &["module", "values", "nope"]).await;
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .contains("HTTP 404: Error: module 'nope' not found"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn raw_gets_any_route() {
    let server = start();
    let out = run(&server.socket, &["raw", "/global/list.json"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["globalHooks"][0], "global-hooks/hook.sh");
}

#[tokio::test]
async fn without_a_running_operator_the_cli_says_so_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("debug.socket");
    let out = run(&socket, &["queue", "list"]).await;
    assert_eq!(out.code, Some(1));
    let expected = format!(
        "addon-operator: cannot connect to {}: is addon-operator running?",
        socket.display()
    );
    assert!(out.stderr.starts_with(&expected), "{}", out.stderr);
}
