//! The issue's hostile filters through the real binary: `check` and `hook run` fail with a clear error and exit 1, and a running operator keeps serving while one binding's filter crashes its sandbox on every retry.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use addon_operator_testkit::tools::{path_with_tools, require_tool};
use addon_operator_testkit::wait;

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_addon-operator"))
}

/// A tree with one global hook `hooks/watch` whose kubernetes binding `pods` (ConfigMaps) has
/// `filter`, and a second global hook `hooks/startup` that creates a ConfigMap onStartup.
fn tree(dir: &Path, filter: &str) {
    let config = serde_json::json!({"configVersion": "v1", "kubernetes": [
        {"name": "pods", "kind": "ConfigMap", "jqFilter": filter}]});
    let hooks = dir.join("global-hooks/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::create_dir_all(dir.join("modules")).unwrap();
    let watch = format!(
        "#!/usr/bin/env bash\nif [ \"$1\" = --config ]; then cat <<'CFG'\n{config}\nCFG\nexit 0; fi\necho watched\n"
    );
    let startup = "#!/usr/bin/env bash\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; exit 0; fi\necho '{\"operation\":\"CreateIfNotExists\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"}}}' > \"$KUBERNETES_PATCH_PATH\"\n";
    for (name, text) in [("watch", watch.as_str()), ("startup", startup)] {
        let path = hooks.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env("PATH", path_with_tools())
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("ADDON_OPERATOR_GLOBAL_HOOKS_DIR")
        .env_remove("MODULES_DIR")
        .env_remove("GLOBAL_HOOKS_DIR")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn check_refuses_a_filter_nested_ten_thousand_levels_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = format!("{}.{}", "(".repeat(8_000), ")".repeat(8_000));
    tree(tmp.path(), &deep);
    let out = run(&["check", "--working-dir", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("nests 8000 levels deep"),
        "{}",
        text(&out)
    );
}

#[test]
fn hook_run_fails_a_binding_whose_filter_recurses_without_end() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), "def f: [f]; f");
    let objects = tmp.path().join("objects.json");
    std::fs::write(
        &objects,
        r#"[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"d"}}]"#,
    )
    .unwrap();
    let out = run(&[
        "hook",
        "run",
        "hooks/watch",
        "--binding",
        "pods",
        "--objects",
        objects.to_str().unwrap(),
        "--working-dir",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("evaluation nested deeper than 10000 levels"),
        "{}",
        text(&out)
    );
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// The operator on the embedded cluster with a binding whose filter spins: the binding's
/// Synchronization fails on the CPU deadline and is retried, the process stays up and its debug
/// socket answers.
#[test]
fn a_spinning_binding_filter_fails_its_task_and_the_operator_keeps_serving() {
    if !require_tool("helm") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), "until(false; .)");
    let log = tmp.path().join("operator.log");
    let socket = tmp.path().join("debug.socket");
    let child = Command::new(binary())
        .args(["start", "--embedded-cluster", "--jq-timeout", "1s"])
        .args(["--retry-initial-delay", "1s", "--retry-max-delay", "1s"])
        .arg("--working-dir")
        .arg(tmp.path())
        .arg("--tmp-dir")
        .arg(tmp.path().join("run"))
        .args([
            "--prometheus-listen-address",
            "127.0.0.1",
            "--prometheus-listen-port",
            "0",
        ])
        .arg("--debug-unix-socket")
        .arg(&socket)
        .env("PATH", path_with_tools())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let operator_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let retried = || {
        assert!(
            running.0.try_wait().unwrap().is_none(),
            "the operator exited"
        );
        operator_log()
            .matches("longer than the limit of 1s of CPU time")
            .count()
            >= 2
    };
    let limit = Duration::from_secs(120);
    wait::wait_for("a retried jq failure", limit, retried, operator_log);
    let queue = run(&[
        "queue",
        "list",
        "--debug-unix-socket",
        socket.to_str().unwrap(),
    ]);
    assert!(queue.status.success(), "{}", text(&queue));
    assert!(
        running.0.try_wait().unwrap().is_none(),
        "the operator exited"
    );
}
