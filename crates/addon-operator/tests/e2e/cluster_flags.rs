//! The upstream flags that choose the cluster and what goes into it: `--kube-server` alone (no kubeconfig anywhere) reaches the cluster for the operator and helm, and `--crd-filters` decides which `crds/` files are installed.

use std::process::Stdio;

use crate::cluster::{Cluster, operator_log};
use crate::support::{Running, require_tool, start_command, wait_for, write};

fn crd(plural: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {{plural: {plural}, singular: {plural}x, kind: K{plural}}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n"
    )
}

/// Module `alpha`: a chart with one ConfigMap, and two CRD files in `crds/`.
fn tree(root: &std::path::Path) {
    let module = root.join("modules/010-alpha");
    write(
        &root.join("modules/values.yaml"),
        "alphaEnabled: true\n",
        false,
    );
    write(
        &module.join("Chart.yaml"),
        "apiVersion: v2\nname: alpha\nversion: 0.1.0\n",
        false,
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alpha-cm\ndata:\n  a: \"1\"\n";
    write(&module.join("templates/cm.yaml"), cm, false);
    write(
        &module.join("crds/doc-widgets.yaml"),
        &crd("widgets"),
        false,
    );
    write(
        &module.join("crds/skip-gadgets.yaml"),
        &crd("gadgets"),
        false,
    );
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
}

#[test]
fn kube_server_alone_reaches_the_cluster_and_crd_filters_pick_the_crd_files() {
    if !(require_tool("helm") && require_tool("kubectl")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    let cluster = Cluster::start(root);
    let config = root.join("config.yaml");
    write(&config, "alphaEnabled: true\n", false);
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .args(["--kube-server", &cluster.emulator.url()])
        .arg("--config-file")
        .arg(&config)
        .args(["--namespace", "default", "--crd-filters", "skip-"])
        // no kubeconfig for the operator or helm to find
        .env("HOME", root)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("operator.log")).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let log = root.join("operator.log");
    let get = |args: &[&str]| cluster.kubectl(args, None);
    wait_for("the chart's ConfigMap", &log, || {
        get(&["get", "configmap", "alpha-cm", "-n", "default"]).is_some()
    });
    assert!(get(&["get", "crd", "widgets.example.com"]).is_some());
    assert!(
        get(&["get", "crd", "gadgets.example.com"]).is_none(),
        "{}",
        operator_log(root)
    );
    assert!(!operator_log(root).contains("no effect here"));
}
