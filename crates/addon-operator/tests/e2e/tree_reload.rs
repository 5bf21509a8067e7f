//! `--reload-tree` on the embedded cluster (on by default there): module directories added and
//! removed, a hook's `--config` broken and fixed, and a burst of edits, all without a restart.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cluster::{get, http_addr, operator_log, wait_for_metrics};
use crate::support::{Running, path_with_tools, require_tool, run, start_command, wait_for, write};

const LONG: std::time::Duration = std::time::Duration::from_secs(90);

/// A bash hook printing `config` for `--config`; otherwise appends its binding to
/// `$STATE_DIR/<name>.log`.
fn hook_text(name: &str, config: &str) -> String {
    format!(
        "#!/usr/bin/env bash\nset -euo pipefail\nif [[ \"${{1:-}}\" == \"--config\" ]]; then\ncat <<'CFG'\n{config}\nCFG\nexit 0\nfi\njq -r '.[0].binding' \"$BINDING_CONTEXT_PATH\" >> \"$STATE_DIR/{name}.log\"\n"
    )
}

/// Module `name` (ORDER `order`) in `dir`: enabled, a chart with ConfigMap `<name>-cm`, and a
/// hook on onStartup and afterDeleteHelm.
fn module(dir: &Path, name: &str) {
    write(
        &dir.join("values.yaml"),
        &format!("{name}Enabled: true\n"),
        false,
    );
    write(
        &dir.join("Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        false,
    );
    write(
        &dir.join("templates/cm.yaml"),
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-cm\ndata:\n  a: \"1\"\n"
        ),
        false,
    );
    let config = "configVersion: v1\nonStartup: 1\nafterDeleteHelm: 1";
    write(&dir.join("hooks/hook"), &hook_text(name, config), true);
}

struct Operator {
    root: PathBuf,
    addr: String,
    _running: Running,
}

impl Operator {
    /// `start --embedded-cluster` on `root` (modules in `root/modules`), ready.
    fn start(root: &Path) -> Self {
        Self::start_with(root, &[])
    }

    /// [`Operator::start`] with environment variables `env`.
    fn start_with(root: &Path, env: &[(&str, &str)]) -> Self {
        std::fs::create_dir_all(root.join("global-hooks")).unwrap();
        let mut command = start_command(root.join("tmp"), root.join("debug.socket"));
        command.env_remove("ADDON_OPERATOR_RELOAD_TREE");
        command.envs(env.iter().copied());
        let child = command
            .arg("--working-dir")
            .arg(root)
            .arg("--config-file")
            .arg(root.join("config.yaml"))
            .arg("--embedded-cluster")
            .env("STATE_DIR", root)
            .env("LOG_LEVEL", "info")
            .env_remove("ADDON_OPERATOR_MODULES_DIR")
            .env_remove("MODULES_DIR")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(root.join("operator.log")).unwrap())
            .spawn()
            .unwrap();
        let running = Running(child);
        let addr = http_addr(root);
        let operator = Self {
            root: root.to_path_buf(),
            addr,
            _running: running,
        };
        wait_for_metrics(root, &operator.addr, "the first converge", LONG, |_| {
            get(&operator.addr, "/readyz").is_some_and(|(code, _)| code == 200)
        });
        operator
    }

    fn kubectl(&self, args: &[&str]) -> Option<String> {
        let kubeconfig = self.root.join("tmp/embedded-cluster.kubeconfig");
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .env("PATH", path_with_tools())
            .env("HOME", &self.root)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn configmap_exists(&self, name: &str) -> bool {
        self.kubectl(&["get", "configmap", name, "-n", "default"])
            .is_some()
    }

    /// Waits until the metrics show `count` reloads with `result`; returns the metrics text.
    fn wait_for_reloads(&self, result: &str, count: u32) -> String {
        let sample = format!("addon_operator_tree_reloads_total{{result=\"{result}\"}} {count}");
        wait_for_metrics(&self.root, &self.addr, &sample, LONG, |t| {
            t.lines().any(|l| l == sample)
        })
    }

    fn reloads(&self, result: &str) -> u64 {
        let prefix = format!("addon_operator_tree_reloads_total{{result=\"{result}\"}} ");
        get(&self.addr, "/metrics")
            .map(|(_, text)| text)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
            .unwrap_or(0)
    }

    /// The debug API's record of the last reload.
    fn last_reload(&self) -> serde_json::Value {
        let socket = self.root.join("debug.socket");
        let socket = socket.to_str().unwrap();
        let out = run(&["raw", "--debug-unix-socket", socket, "/tree/reload.json"]);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn hook_log(&self, module: &str) -> String {
        std::fs::read_to_string(self.root.join(format!("{module}.log"))).unwrap_or_default()
    }
}

/// The operator on a tree of one module, alpha, once its release is installed.
fn alpha_running() -> (tempfile::TempDir, Operator) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    module(&root.join("modules/001-alpha"), "alpha");
    let operator = Operator::start(root);
    wait_for("alpha's release", &root.join("operator.log"), || {
        operator.configmap_exists("alpha-cm")
    });
    (tmp, operator)
}

fn tools_present() -> bool {
    require_tool("jq") && require_tool("helm") && require_tool("kubectl")
}

#[test]
fn an_added_module_directory_is_installed_and_a_removed_one_uninstalled_without_a_restart() {
    if !tools_present() {
        return;
    }
    let (tmp, operator) = alpha_running();
    let root = tmp.path();

    // a new module directory appears at once (made aside, then moved in)
    module(&root.join("staging/002-beta"), "beta");
    std::fs::rename(root.join("staging/002-beta"), root.join("modules/002-beta")).unwrap();
    operator.wait_for_reloads("applied", 1);
    wait_for(
        "beta's release and onStartup",
        &root.join("operator.log"),
        || operator.configmap_exists("beta-cm") && operator.hook_log("beta").contains("onStartup"),
    );
    assert!(
        operator_log(root).contains("added: beta"),
        "{}",
        operator_log(root)
    );
    assert_eq!(
        operator.last_reload()["changes"]["added"],
        serde_json::json!(["beta"])
    );
    // alpha did not change: its onStartup ran once, at startup
    assert_eq!(operator.hook_log("alpha"), "onStartup\n");

    // a removed module directory: its release is uninstalled and its afterDeleteHelm hook runs
    // (from the copy the operator kept, the directory being gone)
    std::fs::remove_dir_all(root.join("modules/001-alpha")).unwrap();
    operator.wait_for_reloads("applied", 2);
    wait_for(
        "alpha's release uninstalled and its afterDeleteHelm hook",
        &root.join("operator.log"),
        || {
            !operator.configmap_exists("alpha-cm")
                && operator.hook_log("alpha").contains("afterDeleteHelm")
        },
    );
    assert_eq!(operator.hook_log("alpha"), "onStartup\nafterDeleteHelm\n");
    assert!(operator.configmap_exists("beta-cm"));
    assert_eq!(operator.hook_log("beta"), "onStartup\n");
    assert!(operator_log(root).contains("removed: alpha"));
    assert_eq!(operator.reloads("failed"), 0);
    // the kept copy goes once the module is deleted and the next reload comes
    let kept = root.join("tmp/reload-tree");
    assert!(kept.join("beta").is_dir());
    write(
        &root.join("modules/002-beta/templates/extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n",
        false,
    );
    operator.wait_for_reloads("applied", 3);
    assert!(!kept.join("alpha").exists());
}

#[test]
fn a_broken_hook_config_keeps_the_running_tree_and_its_fix_applies() {
    if !tools_present() {
        return;
    }
    let (tmp, operator) = alpha_running();
    let root = tmp.path();
    let hook = root.join("modules/001-alpha/hooks/hook");
    let broken = "configVersion: v1\nonStartup: [not, a, number]";
    write(&hook, &hook_text("alpha", broken), true);
    operator.wait_for_reloads("failed", 1);
    let record = operator.last_reload();
    assert_eq!(record["result"], "failed");
    let problems = record["problems"].to_string();
    assert!(problems.contains("hook"), "{record}");
    let logged = |log: &str| log.matches("module tree not reloaded").count();
    assert!(logged(&operator_log(root)) >= 1);
    // the same problem after another edit: counted and shown again, not logged again
    let before = logged(&operator_log(root));
    let broken_again = format!("{}# another edit\n", hook_text("alpha", broken));
    write(&hook, &broken_again, true);
    operator.wait_for_reloads("failed", 2);
    assert_eq!(
        logged(&operator_log(root)),
        before,
        "{}",
        operator_log(root)
    );
    // the running tree goes on: still ready, the release still there, nothing applied
    assert_eq!(
        get(&operator.addr, "/readyz").map(|(code, _)| code),
        Some(200)
    );
    assert!(operator.configmap_exists("alpha-cm"));
    assert_eq!(operator.reloads("applied"), 0);

    let fixed = "configVersion: v1\nonStartup: 2\nafterDeleteHelm: 1";
    write(&hook, &hook_text("alpha", fixed), true);
    operator.wait_for_reloads("applied", 1);
    let record = operator.last_reload();
    assert_eq!(record["changes"]["changed"], serde_json::json!(["alpha"]));
    assert_eq!(
        record["changes"]["hooks"]["alpha"]["rebound"],
        serde_json::json!(["hooks/hook"])
    );
    assert_eq!(record["result"], "applied");
    // a rebound hook is not a new one: no second onStartup
    assert_eq!(operator.hook_log("alpha"), "onStartup\n");
}

#[test]
fn a_hundred_rapid_edits_cause_one_or_two_reloads() {
    if !tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    module(&root.join("modules/001-alpha"), "alpha");
    let operator = Operator::start(root);
    let template = root.join("modules/001-alpha/templates/cm.yaml");
    for i in 0..100 {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alpha-cm\ndata:\n  a: \"{i}\"\n"
        );
        write(&template, &text, false);
    }
    operator.wait_for_reloads("applied", 1);
    wait_for(
        "the last edit in the cluster",
        &root.join("operator.log"),
        || {
            operator.kubectl(&["get", "configmap", "alpha-cm", "-o", "jsonpath={.data.a}"])
                == Some("99".into())
        },
    );
    // no reload is still pending: a marker edit after the burst is the next (and last) one
    let marker = root.join("modules/001-alpha/templates/marker.yaml");
    let before = operator.reloads("applied");
    write(
        &marker,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: marker\n",
        false,
    );
    operator.wait_for_reloads("applied", u32::try_from(before).unwrap() + 1);
    assert!(before <= 2, "{before} reloads for a burst of 100 edits");
    wait_for(
        "the marker in the cluster",
        &root.join("operator.log"),
        || operator.configmap_exists("marker"),
    );
    assert_eq!(operator.reloads("applied"), before + 1);
}

#[test]
fn an_edited_schedule_changes_when_the_hook_runs() {
    if !tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    module(&root.join("modules/001-alpha"), "alpha");
    let hook = root.join("modules/001-alpha/hooks/ticker");
    let yearly = "configVersion: v1\nschedule:\n- {name: tick, crontab: \"0 0 1 1 *\"}";
    write(&hook, &hook_text("ticker", yearly), true);
    let operator = Operator::start(root);
    assert!(!operator.hook_log("ticker").contains("tick"));
    let every_second = "configVersion: v1\nschedule:\n- {name: tick, crontab: \"*/1 * * * * *\"}";
    write(&hook, &hook_text("ticker", every_second), true);
    operator.wait_for_reloads("applied", 1);
    assert_eq!(
        operator.last_reload()["changes"]["changed"],
        serde_json::json!(["alpha"])
    );
    wait_for(
        "the new schedule to run the hook",
        &root.join("operator.log"),
        || operator.hook_log("ticker").contains("tick"),
    );
}

#[test]
fn the_tree_is_watched_by_default_on_the_embedded_cluster_and_not_when_turned_off() {
    if !tools_present() {
        return;
    }
    const WATCHED: &str = "the module tree is reloaded when its files change";
    let tmp = tempfile::tempdir().unwrap();
    module(&tmp.path().join("on/modules/001-alpha"), "alpha");
    let on = Operator::start(&tmp.path().join("on"));
    assert!(operator_log(&on.root).contains(WATCHED));
    drop(on);
    module(&tmp.path().join("off/modules/001-alpha"), "alpha");
    let off = Operator::start_with(
        &tmp.path().join("off"),
        &[("ADDON_OPERATOR_RELOAD_TREE", "false")],
    );
    assert!(!operator_log(&off.root).contains(WATCHED));
}
