//! Hooks, module list and runtime log level through the debug API and the debug CLI.

use std::path::Path;

use addon_operator::cli::debug::{get, post};
use serde_json::{Value, json};

use crate::debug_api::{start, start_with};
use crate::fake::FakeStatus;

async fn cli(socket: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_addon-operator"))
        .args(args)
        .arg("--debug-unix-socket")
        .arg(socket)
        .env_remove("DEBUG_UNIX_SOCKET")
        .output()
        .await
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (
        output.status.code(),
        text(output.stdout),
        text(output.stderr),
    )
}

#[tokio::test]
async fn hook_list_is_a_table_in_text_and_the_hooks_in_json() {
    let server = start();
    let (code, stdout, stderr) = cli(&server.socket, &["hook", "list"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "HOOK                  MODULE        BINDINGS\n\
         global-hooks/hook.sh  -             onStartup: 1, schedule: every-minute (*/1 * * * *)\n\
         hooks/pods            module-alpha  kubernetes: pods (Pod)\n"
    );
    let (code, stdout, _) = cli(&server.socket, &["hook", "list", "-o", "json"]).await;
    assert_eq!(code, Some(0));
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["hooks"][1]["module"], "module-alpha");
    assert_eq!(doc["hooks"][0]["bindings"][0], "onStartup: 1");
}

#[tokio::test]
async fn hook_snapshot_shows_one_hooks_bindings_and_names_a_missing_hook() {
    let mut status = FakeStatus::new();
    status.with_snapshots = true;
    let server = start_with(status);
    let args = [
        "hook",
        "snapshot",
        "hooks/pods",
        "--module",
        "module-alpha",
        "-o",
        "json",
    ];
    let (code, stdout, stderr) = cli(&server.socket, &args).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!({"pods": []})
    );
    let (code, _, stderr) = cli(&server.socket, &["hook", "snapshot", "hooks/nope"]).await;
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("global hook 'hooks/nope' not found"),
        "{stderr}"
    );
    let missing = get(&server.socket, "/hook/hooks/pods/snapshots.json").await;
    assert!(
        missing.unwrap_err().to_string().contains("HTTP 404"),
        "a module hook asked without its module is not a global hook"
    );
}

#[tokio::test]
async fn module_list_text_is_one_enabled_module_per_line() {
    let server = start();
    let (code, stdout, stderr) = cli(&server.socket, &["module", "list", "-o", "text"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "module-alpha\nmodule-beta\n");
    let (_, stdout, _) = cli(&server.socket, &["module", "list", "-o", "json"]).await;
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        doc,
        json!({"enabledModules": ["module-alpha", "module-beta"]})
    );
}

#[tokio::test]
async fn bad_log_level_requests_are_refused_with_the_reason() {
    let server = start();
    let err = post(&server.socket, "/config/set?name=log.level&value=loud")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown log level 'loud'"),
        "{err}"
    );
    let err = post(&server.socket, "/config/set?name=color&value=red")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown runtime setting 'color'"),
        "{err}"
    );
    let err = post(&server.socket, "/queue/list").await.unwrap_err();
    assert!(err.to_string().contains("HTTP 404"), "{err}");
}
