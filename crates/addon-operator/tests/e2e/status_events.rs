//! What admins see on the embedded cluster: the Module status objects (`kubectl get modules`,
//! `kubectl describe module`) and the Events of a failing hook, an install and a refused
//! config edit.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{Embedded, demo_dir, require_tool, start_embedded, wait_for, write};

/// `kubectl` with `kubeconfig`: stdout, empty when it failed.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    addon_operator_testkit::tools::kubectl(kubeconfig, args, None).unwrap_or_default()
}

/// The Events of the `default` namespace (where Events of cluster-scoped objects are).
pub fn events(kubeconfig: &Path) -> Vec<Value> {
    let text = kubectl(
        kubeconfig,
        &["get", "events", "-n", "default", "-o", "json"],
    );
    let list: Value = serde_json::from_str(&text).unwrap_or_default();
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The first Event with `reason` on an object named `object`.
pub fn find<'a>(events: &'a [Value], object: &str, reason: &str) -> Option<&'a Value> {
    events
        .iter()
        .find(|e| e["involvedObject"]["name"] == object && e["reason"] == reason)
}

/// The demo tree plus a module whose beforeHelm hook fails with seven lines of stderr.
fn tree(dir: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(demo_dir())
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
    let hook = "#!/usr/bin/env bash\n\
        if [[ \"${1:-}\" == \"--config\" ]]; then echo '{\"configVersion\":\"v1\",\"beforeHelm\":5}'; exit 0; fi\n\
        for i in 1 2 3 4 5 6 7; do echo \"err-line-$i\" >&2; done\n\
        exit 3\n";
    write(&dir.join("modules/030-broken/hooks/fail-hook"), hook, true);
    let config = std::fs::read_to_string(dir.join("config.yaml")).unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        format!("{config}brokenEnabled: \"true\"\n"),
    )
    .unwrap();
}

#[test]
fn a_failing_hook_an_install_and_a_refused_edit_show_on_module_objects_and_events() {
    if !require_tool("jq") || !require_tool("helm") || !require_tool("kubectl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    tree(&dir);
    let retries = ["--retry-initial-delay", "1s", "--retry-max-delay", "2s"];
    let Embedded {
        running: _running,
        log,
        kubeconfig,
    } = start_embedded(tmp.path(), &dir, retries);

    wait_for("the Installed Event of echo-server", &log, || {
        find(&events(&kubeconfig), "echo-server", "Installed").is_some()
    });
    let failures = |all: &[Value]| -> Vec<Value> {
        let mut failed: Vec<Value> = (all.iter())
            .filter(|e| e["involvedObject"]["name"] == "broken" && e["reason"] == "HookFailed")
            .cloned()
            .collect();
        failed.sort_by_key(|e| std::cmp::Reverse(e["count"].as_u64()));
        failed
    };
    wait_for("a HookFailed Event of broken counted 3 times", &log, || {
        let all = events(&kubeconfig);
        failures(&all)
            .first()
            .is_some_and(|e| e["count"].as_u64() >= Some(3))
    });
    let all = events(&kubeconfig);
    let failed = &failures(&all)[0];
    assert_eq!(failed["type"], "Warning");
    assert_eq!(failed["involvedObject"]["kind"], "Module");
    assert_eq!(failed["source"]["component"], "addon-operator");
    let message = failed["message"].as_str().unwrap();
    for part in [
        "fail-hook",
        "binding beforeHelm",
        "exit status 3",
        "err-line-7",
        "retry in",
    ] {
        assert!(message.contains(part), "{part} missing from {message}");
    }
    assert!(
        !message.contains("err-line-2"),
        "only the last 5 lines: {message}"
    );
    // one per retry delay (1 s, then 2 s): identical failures update the count of one Event
    assert!(failures(&all).len() <= 2, "{:#?}", failures(&all));

    wait_for("the status of broken and echo-server", &log, || {
        let broken = kubectl(&kubeconfig, &["get", "module", "broken", "-o", "json"]);
        let broken: Value = serde_json::from_str(&broken).unwrap_or_default();
        let echo = kubectl(&kubeconfig, &["get", "module", "echo-server", "-o", "json"]);
        let echo: Value = serde_json::from_str(&echo).unwrap_or_default();
        broken["status"]["phase"] == "Failed" && echo["status"]["phase"] == "Ready"
    });
    let broken = kubectl(&kubeconfig, &["get", "module", "broken", "-o", "json"]);
    let broken: Value = serde_json::from_str(&broken).unwrap();
    let error = &broken["status"]["lastError"];
    assert!(
        error["hook"].as_str().unwrap().contains("fail-hook"),
        "{error}"
    );
    assert_eq!(error["binding"], "beforeHelm");
    assert!(error["message"].as_str().unwrap().contains("err-line-7"));
    assert_eq!(broken["status"]["conditions"][0]["type"], "Ready");
    assert_eq!(broken["status"]["conditions"][0]["status"], "False");
    assert_eq!(
        broken["metadata"]["labels"]["addon-operator.io/owner"], "default",
        "labelled as this operator's"
    );

    let table = kubectl(&kubeconfig, &["get", "modules"]);
    let header = table.lines().next().unwrap_or_default();
    for column in [
        "NAME",
        "ENABLED",
        "PHASE",
        "READY",
        "REVISION",
        "DRIFT",
        "LAST ERROR",
        "AGE",
    ] {
        assert!(header.contains(column), "{column} missing: {table}");
    }
    let echo_row = table
        .lines()
        .find(|l| l.starts_with("echo-server"))
        .unwrap_or_default();
    assert!(
        echo_row.contains("true") && echo_row.contains("Ready") && echo_row.contains("True"),
        "{table}"
    );
    assert!(
        table.lines().any(|l| l.starts_with("global.hooks")),
        "{table}"
    );
    let described = kubectl(&kubeconfig, &["describe", "module", "broken"]);
    assert!(described.contains("HookFailed"), "{described}");

    // a config edit the schema refuses (replicas has minimum 0)
    let config = std::fs::read_to_string(dir.join("config.yaml")).unwrap();
    let edited = config.replace(
        "  message: hello from the config file",
        "  message: hello from the config file\n  replicas: -5",
    );
    std::fs::write(dir.join("config.yaml"), edited).unwrap();
    wait_for("the ConfigRefused Event", &log, || {
        find(&events(&kubeconfig), "echo-server", "ConfigRefused").is_some_and(|e| {
            e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("replicas")
        })
    });

    // a module that leaves the tree (--reload-tree is on with --embedded-cluster) loses its object
    std::fs::remove_dir_all(dir.join("modules/030-broken")).unwrap();
    wait_for("the object of the removed module to go", &log, || {
        let names = kubectl(&kubeconfig, &["get", "modules", "-o", "name"]);
        names.contains("echo-server") && !names.contains("/broken")
    });
}

#[test]
fn without_status_objects_events_about_modules_go_on_the_config_map() {
    if !require_tool("jq") || !require_tool("helm") || !require_tool("kubectl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    tree(&dir);
    let Embedded {
        running: _running,
        log,
        kubeconfig,
    } = start_embedded(tmp.path(), &dir, ["--module-status-objects=false"]);
    wait_for("a HookFailed Event on the ConfigMap", &log, || {
        events(&kubeconfig).iter().any(|e| {
            e["reason"] == "HookFailed"
                && e["involvedObject"]["kind"] == "ConfigMap"
                && e["involvedObject"]["name"] == "addon-operator"
                && (e["message"].as_str()).is_some_and(|m| m.starts_with("module broken: "))
        })
    });
    let crds = kubectl(&kubeconfig, &["get", "crd", "-o", "name"]);
    assert!(!crds.contains("modules.addon-operator.io"), "{crds}");
}
