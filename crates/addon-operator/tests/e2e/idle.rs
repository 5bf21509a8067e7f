//! Helm processes of a running operator: none while nothing changes (decisions and the resource
//! monitor read helm's storage through the API), one `helm upgrade` when an object is deleted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{Embedded, path_with_tools, require_tool, start_embedded, wait_for, write};

const MODULES: [&str; 3] = ["alpha", "beta", "gamma"];

fn tree(root: &Path) {
    let mut enabled = String::new();
    for (i, name) in MODULES.iter().enumerate() {
        let dir = root.join(format!("modules/{:03}-{name}", i + 1));
        write(
            &dir.join("templates/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  a: \"1\"\n",
            false,
        );
        enabled.push_str(&format!("{name}Enabled: true\n"));
    }
    write(&root.join("modules/values.yaml"), &enabled, false);
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
    write(&root.join("config.yaml"), "global: |\n  a: 1\n", false);
}

/// A helm that appends its arguments to `calls`, then runs the real one.
fn counting_helm(dir: &Path, calls: &Path) -> std::path::PathBuf {
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v helm"])
            .env("PATH", path_with_tools())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let wrapper = dir.join("helm-wrapper");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
        calls.display(),
        real.trim()
    );
    write(&wrapper, &script, true);
    wrapper
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn config_map_exists(kubeconfig: &Path, name: &str) -> bool {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "configmap", name, "-n", "default", "-o", "name"])
        .env("PATH", path_with_tools())
        .env("HOME", kubeconfig.parent().unwrap())
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn an_idle_operator_runs_no_helm_and_a_deleted_object_costs_one_upgrade() {
    if !require_tool("helm") || !require_tool("kubectl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    tree(&root);
    let calls = tmp.path().join("helm-calls");
    let helm = counting_helm(tmp.path(), &calls);
    let extra = [
        "--resources-monitor-interval".as_ref(),
        "1s".as_ref(),
        "--helm-binary".as_ref(),
        helm.as_os_str(),
    ];
    let Embedded {
        running: _running,
        log,
        kubeconfig,
    } = start_embedded(tmp.path(), &root, extra);
    wait_for("the three releases", &log, || {
        MODULES
            .iter()
            .all(|m| config_map_exists(&kubeconfig, &format!("{m}-cm")))
    });
    wait_for("three upgrades", &log, || {
        lines(&calls)
            .iter()
            .filter(|c| c.starts_with("upgrade"))
            .count()
            == 3
    });

    // several resource monitor cycles (1 s each) with nothing changed
    let converged = lines(&calls);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(lines(&calls), converged, "no helm process while idle");
    assert!(
        converged
            .iter()
            .all(|c| c.starts_with("version") || c.starts_with("upgrade --install")),
        "only version and upgrade: {converged:?}"
    );

    assert!(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["delete", "configmap", "beta-cm", "-n", "default"])
            .env("PATH", path_with_tools())
            .env("HOME", kubeconfig.parent().unwrap())
            .status()
            .unwrap()
            .success()
    );
    wait_for("the monitor to reinstall beta-cm", &log, || {
        config_map_exists(&kubeconfig, "beta-cm") && lines(&calls).len() == converged.len() + 1
    });
    let after = lines(&calls);
    assert!(
        after[converged.len()].starts_with("upgrade --install beta"),
        "{after:?}"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        lines(&calls).len(),
        converged.len() + 1,
        "{:?}",
        lines(&calls)
    );
}
