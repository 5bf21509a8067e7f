//! The demo tree on the embedded cluster: the real binary, real helm and kubectl, bash hooks.

use std::path::Path;
use std::process::Command;

use crate::support::{Embedded, demo_dir, path_with_tools, require_tool, start_embedded, wait_for};

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("PATH", path_with_tools())
        .env("HOME", kubeconfig.parent().unwrap())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn demo_runs_on_the_embedded_cluster_and_config_edits_reach_the_cluster() {
    if !require_tool("jq") || !require_tool("helm") || !require_tool("kubectl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("demo");
    copy_dir(&demo_dir(), &tree);
    let Embedded {
        running: _running,
        log,
        kubeconfig,
    } = start_embedded(tmp.path(), &tree, ["--resources-monitor-interval", "1s"]);
    let greeting = || {
        kubectl(
            &kubeconfig,
            &[
                "get",
                "configmap",
                "echo-server",
                "-o",
                "jsonpath={.data.greeting}",
            ],
        )
        .unwrap_or_default()
    };
    wait_for("the echo-server release", &log, || {
        greeting() == "hello from the config file (cluster laptop)"
    });
    let releases = Command::new("helm")
        .args(["list", "-A", "--kubeconfig"])
        .arg(&kubeconfig)
        .env("PATH", path_with_tools())
        .env("HELM_CONFIG_HOME", tmp.path().join("helm"))
        .env("HELM_CACHE_HOME", tmp.path().join("helm"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&releases.stdout).contains("echo-server"));
    wait_for("the watch hook to see the ConfigMap", &log, || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("watch-configmaps: Added echo-server greeting=hello from the config file")
    });

    // an edit of the module's section runs the module: helm upgrades the ConfigMap
    let config = std::fs::read_to_string(tree.join("config.yaml")).unwrap();
    std::fs::write(
        tree.join("config.yaml"),
        config.replace("hello from the config file", "edited"),
    )
    .unwrap();
    wait_for("the upgraded ConfigMap", &log, || {
        greeting() == "edited (cluster laptop)"
    });
    wait_for("the watch hook to see the change", &log, || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("watch-configmaps: Modified echo-server greeting=edited (cluster laptop)")
    });

    // auto-healing: a deleted object of the release comes back
    assert!(kubectl(&kubeconfig, &["delete", "configmap", "echo-server"]).is_some());
    wait_for(
        "the resource monitor to reinstall the ConfigMap",
        &log,
        || greeting() == "edited (cluster laptop)",
    );
    assert!(
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("drifted from its chart")
    );
}
