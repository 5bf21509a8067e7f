//! `addon-operator start` with real bash hooks (using jq) on temporary trees, checked through the
//! log the hooks append to, the values files they copy, and the config file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use addon_operator_testkit::wait;
use serde_json::{Value, json};

use crate::support::{binary, path_with_tools, require_tool, start_command, write};

/// A running operator on a temp tree.
struct Operator {
    child: Child,
    root: tempfile::TempDir,
}

impl Operator {
    fn start(root: tempfile::TempDir, extra: &[&str]) -> Self {
        let log = root.path().join("operator.log");
        let mut cmd = start_command(root.path().join("tmp"), root.path().join("debug.socket"));
        cmd.arg("--working-dir")
            .arg(root.path())
            .arg("--config-file")
            .arg(root.path().join("config.yaml"))
            .args(["--retry-initial-delay", "200ms", "--retry-max-delay", "1s"])
            .args(extra)
            .env("HOOK_LOG", root.path().join("hooks.log"))
            .env("SEEN_DIR", root.path().join("seen"))
            .env("LOG_LEVEL", "info")
            .env_remove("ADDON_OPERATOR_MODULES_DIR")
            .env_remove("MODULES_DIR")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap());
        let child = cmd.spawn().expect("start addon-operator");
        std::fs::create_dir_all(root.path().join("seen")).unwrap();
        Self { child, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn hook_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("hooks.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn operator_log(&self) -> String {
        std::fs::read_to_string(self.path("operator.log")).unwrap_or_default()
    }

    /// Waits until `done(hook log)` holds (at most 30 s).
    fn wait_for(&self, what: &str, done: impl Fn(&[String]) -> bool) {
        self.wait_until(what, Duration::from_secs(30), || done(&self.hook_log()));
    }

    /// Waits until `done()` holds (at most `limit`), else fails with both logs.
    fn wait_until(&self, what: &str, limit: Duration, done: impl FnMut() -> bool) {
        wait::wait_for(what, limit, done, || {
            format!(
                "hook log:\n{}\noperator log:\n{}",
                self.hook_log().join("\n"),
                self.operator_log()
            )
        });
    }

    fn seen(&self, name: &str) -> Value {
        let text = std::fs::read_to_string(self.path(&format!("seen/{name}"))).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// A bash hook that prints `config` for `--config`, else appends `<name> <bindings>` to
/// `$HOOK_LOG`, copies its values files to `$SEEN_DIR/<name>.{values,config}.json`, then runs
/// `body`.
fn hook(root: &Path, rel: &str, name: &str, config: &str, body: &str) {
    let text = format!(
        r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${{1:-}}" == "--config" ]]; then
cat <<'CFG'
{config}
CFG
exit 0
fi
echo "{name} $(jq -r '[.[].binding] | join(",")' "$BINDING_CONTEXT_PATH")" >> "$HOOK_LOG"
cp "$VALUES_PATH" "$SEEN_DIR/{name}.values.json"
cp "$CONFIG_VALUES_PATH" "$SEEN_DIR/{name}.config.json"
{body}
"#
    );
    write(&root.join(rel), &text, true);
}

fn count(log: &[String], line: &str) -> usize {
    log.iter().filter(|l| *l == line).count()
}

fn lifecycle_tree() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    hook(
        r,
        "global-hooks/startup",
        "startup",
        "configVersion: v1\nonStartup: 1",
        "",
    );
    hook(
        r,
        "global-hooks/password",
        "password",
        "configVersion: v1\nbeforeAll: 1",
        r#"if [[ "$(jq -r '.global.password // ""' "$CONFIG_VALUES_PATH")" == "" ]]; then
  echo '[{"op": "add", "path": "/global/password", "value": "s3cret"}]' > "$CONFIG_VALUES_JSON_PATCH_PATH"
fi"#,
    );
    write(
        &r.join("modules/values.yaml"),
        "global:\n  param1: 100\n  param2: \"Yes\"\nsomeModuleEnabled: true\notherEnabled: true\n",
        false,
    );
    write(
        &r.join("modules/001-some-module/values.yaml"),
        "someModule:\n  param1: String\n",
        false,
    );
    hook(
        r,
        "modules/001-some-module/hooks/before",
        "some-before",
        "configVersion: v1\nbeforeHelm: 1",
        "",
    );
    hook(
        r,
        "modules/002-other/hooks/before",
        "other-before",
        "configVersion: v1\nbeforeHelm: 1",
        "",
    );
    write(
        &r.join("config.yaml"),
        "global: |\n  param1: 200\nsomeModule: |\n  param1: Long string\n  param2: FOO\n",
        false,
    );
    root
}

#[test]
fn lifecycle_order_values_files_config_patches_and_file_edits() {
    if !require_tool("jq") {
        return;
    }
    let op = Operator::start(lifecycle_tree(), &[]);
    op.wait_for("the first converge", |log| {
        log.iter().any(|l| l == "other-before beforeHelm")
    });
    assert_eq!(
        op.hook_log(),
        [
            "startup onStartup",
            "password beforeAll",
            "some-before beforeHelm",
            "other-before beforeHelm",
        ]
    );
    // the VALUES seed example, plus the global password the beforeAll hook stored in the config
    assert_eq!(
        op.seen("some-before.config.json"),
        json!({"global": {"param1": 200, "password": "s3cret"},
               "someModule": {"param1": "Long string", "param2": "FOO"}})
    );
    assert_eq!(
        op.seen("some-before.values.json"),
        json!({"global": {"param1": 200, "param2": "Yes", "password": "s3cret",
                          "enabledModules": ["some-module", "other"]},
               "someModule": {"param1": "Long string", "param2": "FOO"}})
    );
    assert_eq!(
        op.seen("startup.values.json"),
        json!({"global": {"param1": 200, "param2": "Yes"}})
    );
    let config = std::fs::read_to_string(op.path("config.yaml")).unwrap();
    assert!(config.contains("password: s3cret"), "{config}");
    assert!(
        config.contains("Long string"),
        "untouched keys are kept: {config}"
    );

    // editing only a module section re-runs only that module
    write(
        &op.path("config.yaml"),
        &config.replace("FOO", "BAR"),
        false,
    );
    op.wait_for("the module run after the edit", |log| {
        count(log, "some-before beforeHelm") == 2
    });
    std::thread::sleep(Duration::from_millis(500));
    let log = op.hook_log();
    assert_eq!(count(&log, "other-before beforeHelm"), 1, "{log:?}");
    assert_eq!(count(&log, "password beforeAll"), 1, "{log:?}");
    assert_eq!(
        op.seen("some-before.values.json")["someModule"]["param2"],
        "BAR"
    );

    // a broken edit is rejected with a clear log line and changes nothing
    write(
        &op.path("config.yaml"),
        "global: |\n  param1: [broken\n",
        false,
    );
    op.wait_until("the edit to be rejected", Duration::from_secs(20), || {
        op.operator_log().contains("config edit rejected")
    });
    assert_eq!(op.hook_log().len(), log.len());
}

#[test]
fn hanging_hook_is_killed_at_the_timeout_and_invalid_patch_is_retried() {
    if !require_tool("jq") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    // hangs on its first run only
    hook(
        r,
        "global-hooks/hang",
        "hang",
        "configVersion: v1\nonStartup: 1",
        r#"if [[ ! -f "$SEEN_DIR/hung" ]]; then touch "$SEEN_DIR/hung"; sleep 60; fi"#,
    );
    // writes garbage as its values patch on its first run only
    hook(
        r,
        "global-hooks/garbage",
        "garbage",
        "configVersion: v1\nonStartup: 2",
        r#"if [[ ! -f "$SEEN_DIR/garbled" ]]; then touch "$SEEN_DIR/garbled"; echo 'this is not json' > "$VALUES_JSON_PATCH_PATH"; fi"#,
    );
    write(&r.join("modules/.keep"), "", false);
    write(&r.join("config.yaml"), "", false);
    let started = Instant::now();
    let op = Operator::start(
        root,
        &["--hook-timeout", "1s", "--hook-kill-grace", "200ms"],
    );
    op.wait_for("both hooks to succeed", |log| {
        count(log, "garbage onStartup") == 2
    });
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        op.hook_log(),
        [
            "hang onStartup",
            "hang onStartup",
            "garbage onStartup",
            "garbage onStartup"
        ]
    );
    let log = op.operator_log();
    assert!(log.contains("timed out"), "{log}");
    assert!(log.contains("garbage"), "{log}");
    assert!(log.contains("retried"), "{log}");
}

/// Runs `start` on `root` until it exits (it does at once when the tree or config is invalid).
fn start_once(root: &Path) -> std::process::Output {
    Command::new(binary())
        .arg("start")
        .arg("--working-dir")
        .arg(root)
        .arg("--config-file")
        .arg(root.join("config.yaml"))
        .arg("--tmp-dir")
        .arg(root.join("tmp"))
        .env("PATH", path_with_tools())
        .output()
        .unwrap()
}

#[test]
fn invalid_tree_and_config_stop_the_start_with_every_error_listed() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(
        &r.join("global-hooks/openapi/config-values.yaml"),
        "type: object\nrequired: [project, clusterName]\nproperties:\n  project: {type: string}\n  clusterName: {type: string}\n",
        false,
    );
    write(&r.join("modules/values.yaml"), "", false);
    write(
        &r.join("config.yaml"),
        "global: |\n  project: myProject\n",
        false,
    );
    hook(
        r,
        "global-hooks/bad",
        "bad",
        "configVersion: v1\nonStartup: soon",
        "",
    );
    let out = start_once(r);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("onStartup"), "{stderr}");
    let hook_errors = stderr.lines().filter(|l| l.contains("hook 'bad'")).count();
    assert_eq!(hook_errors, 1, "{stderr}");

    // with the hook fixed, the invalid config (the VALUES seed example) is what stops it
    hook(
        r,
        "global-hooks/bad",
        "bad",
        "configVersion: v1\nonStartup: 1",
        "",
    );
    let out = start_once(r);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("clusterName"), "{stderr}");
}

#[test]
fn a_broken_module_hook_config_stops_the_start_before_any_module_runs() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(&r.join("modules/values.yaml"), "", false);
    write(&r.join("config.yaml"), "", false);
    let script = |config: &str, marker: &str| {
        let marker = r.join(marker);
        format!(
            "#!/bin/sh\nif [ \"$1\" = --config ]; then printf '%s' '{config}'; exit 0; fi\ntouch '{}'\n",
            marker.display()
        )
    };
    let global = script("{\"configVersion\":\"v1\",\"onStartup\":1}", "global-ran");
    // `.sh`: no `hook list` probe (which would run the body)
    write(&r.join("global-hooks/first.sh"), &global, true);
    let good = script("{\"configVersion\":\"v1\",\"onStartup\":1}", "module-ran");
    write(&r.join("modules/010-web/hooks/good.sh"), &good, true);
    let bad = script(
        "{\"configVersion\":\"v1\",\"beforeHelm\":\"later\"}",
        "bad-ran",
    );
    write(&r.join("modules/010-web/hooks/bad.sh"), &bad, true);
    let out = start_once(r);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let problem = stderr.lines().find(|l| l.contains("module 'web'"));
    assert!(
        problem.is_some_and(|l| l.contains("beforeHelm")),
        "{stderr}"
    );
    assert!(
        !r.join("module-ran").exists(),
        "a module hook ran: {stderr}"
    );
    assert!(!r.join("bad-ran").exists(), "{stderr}");
}

#[test]
fn sigterm_stops_a_running_hook_and_the_operator_exits_cleanly() {
    if !require_tool("jq") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    hook(
        r,
        "global-hooks/slow",
        "slow",
        "configVersion: v1\nonStartup: 1",
        r#"trap 'echo "slow got TERM" >> "$HOOK_LOG"; exit 1' TERM
echo "slow ready" >> "$HOOK_LOG"
sleep 60 &
wait"#,
    );
    write(&r.join("modules/.keep"), "", false);
    write(&r.join("config.yaml"), "", false);
    let mut op = Operator::start(root, &["--hook-kill-grace", "5s"]);
    op.wait_for("the slow hook to trap TERM", |log| {
        log.iter().any(|l| l == "slow ready")
    });
    let started = Instant::now();
    Command::new("kill")
        .args(["-TERM", &op.child.id().to_string()])
        .status()
        .unwrap();
    let status = op.child.wait().unwrap();
    assert!(status.success(), "{}", op.operator_log());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "exited after the grace period"
    );
    assert!(
        op.hook_log().iter().any(|l| l == "slow got TERM"),
        "{:?}",
        op.hook_log()
    );
}

#[test]
fn missing_config_file_is_an_empty_config_and_the_first_config_patch_creates_it() {
    if !require_tool("jq") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    hook(
        r,
        "global-hooks/gen",
        "gen",
        "configVersion: v1\nonStartup: 1",
        r#"echo '[{"op": "add", "path": "/global/token", "value": "abc"}]' > "$CONFIG_VALUES_JSON_PATCH_PATH""#,
    );
    write(&r.join("modules/.keep"), "", false);
    let op = Operator::start(root, &[]);
    op.wait_for("the hook", |log| log.iter().any(|l| l == "gen onStartup"));
    op.wait_until("the config file", Duration::from_secs(10), || {
        op.path("config.yaml").exists()
    });
    let text = std::fs::read_to_string(op.path("config.yaml")).unwrap();
    assert!(text.contains("token: abc"), "{text}");
}

/// Two unnumbered modules (both of ORDER 1) whose beforeHelm hooks wait for each other: each
/// marks that it started and waits (at most 20 s) for the other's mark, so both succeed only
/// when their runs overlap.
fn rendezvous_tree() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(
        &r.join("modules/values.yaml"),
        "leftEnabled: true\nrightEnabled: true\n",
        false,
    );
    for (me, other) in [("left", "right"), ("right", "left")] {
        let body = format!(
            r#"touch "$SEEN_DIR/{me}.here"
for _ in $(seq 400); do
  if [[ -e "$SEEN_DIR/{other}.here" ]]; then echo "{me} met {other}" >> "$HOOK_LOG"; exit 0; fi
  sleep 0.05
done
echo "{me} never met {other}" >&2
exit 1"#
        );
        hook(
            r,
            &format!("modules/{me}/hooks/before"),
            &format!("{me}-before"),
            "configVersion: v1\nbeforeHelm: 1",
            &body,
        );
    }
    write(&r.join("config.yaml"), "", false);
    root
}

/// With `--parallel-module-runs 1` the hooks never meet (checked when the test was written).
#[test]
fn unnumbered_modules_run_side_by_side_in_the_real_binary() {
    if !require_tool("jq") {
        return;
    }
    let op = Operator::start(rendezvous_tree(), &[]);
    op.wait_for("both beforeHelm hooks to meet", |log| {
        count(log, "left met right") == 1 && count(log, "right met left") == 1
    });
    op.wait_until("the ready log line", Duration::from_secs(30), || {
        op.operator_log().contains(" ready modules=2")
    });
    let log = op.operator_log();
    assert!(log.contains("parallel module run started"), "{log}");
    assert!(
        log.contains("parallel_queue_"),
        "the lanes are in the log: {log}"
    );
}
