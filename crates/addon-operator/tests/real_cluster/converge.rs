//! Converging on a real API server: the demo tree installed with real helm 3 and helm 4 (release
//! objects labelled `heritage: addon-operator`), a module disabled in the ConfigMap uninstalled,
//! and a module's `crds/` created and established before its release and its hook's watch.

use addon_operator_testkit::real_cluster::ExtraRules;

use crate::support::{
    cluster, config_map, example, hook_log, start_demo, start_operator, wait_until,
};

fn demo_converges_and_uninstalls_with(helm: &str, namespace: &str) {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    // the demo's global hook watches ConfigMaps labelled demo=true in every namespace
    let op = start_demo(cluster, work.path(), namespace, &["--helm-binary", helm]);
    let echo = || {
        cluster
            .kubectl(
                &[
                    "-n",
                    namespace,
                    "get",
                    "configmap",
                    "echo-server",
                    "-o",
                    "json",
                ],
                None,
            )
            .ok()
            .map(|text| serde_json::from_str::<serde_json::Value>(&text).unwrap())
    };
    wait_until("the echo-server release's ConfigMap", 120, &[&op], || {
        echo().is_some()
    });
    let object = echo().unwrap();
    assert_eq!(object["metadata"]["labels"]["heritage"], "addon-operator");
    assert_eq!(object["data"]["message"], "hello from a real API server");
    assert_eq!(object["data"]["cluster"], "real");
    let releases = cluster.kubectl_ok(
        &[
            "-n",
            namespace,
            "get",
            "secrets",
            "-l",
            "owner=helm,name=echo-server",
            "-o",
            "name",
        ],
        None,
    );
    assert!(
        releases.contains("sh.helm.release.v1.echo-server.v1"),
        "{releases}"
    );
    wait_until(
        "the watching hook sees the chart's ConfigMap",
        60,
        &[&op],
        || {
            std::fs::read_to_string(&op.log)
                .unwrap_or_default()
                .contains("watch-configmaps: Added echo-server")
                || hook_log(work.path())
                    .iter()
                    .any(|l| l.contains("Added echo-server"))
        },
    );

    cluster.kubectl_ok(
        &[
            "-n",
            namespace,
            "patch",
            "configmap",
            "addon-operator",
            "--type=merge",
            "-p",
            r#"{"data":{"echoServerEnabled":"false"}}"#,
        ],
        None,
    );
    wait_until(
        "the disabled module's release is uninstalled",
        90,
        &[&op],
        || {
            echo().is_none()
                && cluster
                    .kubectl_ok(
                        &[
                            "-n",
                            namespace,
                            "get",
                            "secrets",
                            "-l",
                            "owner=helm",
                            "-o",
                            "name",
                        ],
                        None,
                    )
                    .trim()
                    .is_empty()
        },
    );
    let log = op.log_text();
    assert!(
        !log.contains("Forbidden"),
        "the operator was refused something:\n{log}"
    );
}

#[test]
fn the_demo_tree_converges_with_helm3_and_a_disabled_module_is_uninstalled() {
    demo_converges_and_uninstalls_with("helm3", "demo-helm3");
}

#[test]
fn the_demo_tree_converges_with_helm4_and_a_disabled_module_is_uninstalled() {
    demo_converges_and_uninstalls_with("helm4", "demo-helm4");
}

#[test]
fn a_module_crd_is_established_before_its_release_and_its_hook_watches_it() {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    let namespace = "crds";
    // the rules examples/crds/README.md and deploy/base/rbac.yaml tell a user to add
    let rules = ExtraRules {
        bindings: vec![
            r#"{"apiGroups":["stable.example.com"],"resources":["crontabs"],"verbs":["get","list","watch"]}"#.into(),
        ],
        modules: vec![
            r#"{"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"verbs":["get","list","create","update","patch"]}"#.into(),
            r#"{"apiGroups":["stable.example.com"],"resources":["crontabs"],"verbs":["get","list","watch","create","update","patch","delete"]}"#.into(),
        ],
    };
    let identity = cluster.operator_identity(namespace, &rules);
    cluster.kubectl_ok(
        &["apply", "-f", "-"],
        Some(&config_map(
            namespace,
            "addon-operator",
            "global: |\n  {}\n",
        )),
    );
    let op = start_operator(
        work.path(),
        "op",
        &example("crds"),
        &identity.kubeconfig,
        &identity,
        &[],
    );
    wait_until("the hook sees the chart's CronTab", 120, &[&op], || {
        hook_log(work.path())
            .iter()
            .any(|l| l == "Added crontab nightly")
    });
    let established = cluster.kubectl_ok(
        &[
            "get",
            "crd",
            "crontabs.stable.example.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
        ],
        None,
    );
    assert_eq!(established, "True");
    let lines = hook_log(work.path());
    let sync = lines.iter().position(|l| l.starts_with("synchronization:"));
    let added = lines.iter().position(|l| l == "Added crontab nightly");
    assert!(
        sync < added,
        "Synchronization before the Added event: {lines:?}"
    );
    let crontab = cluster.kubectl_ok(
        &["-n", namespace, "get", "crontab", "nightly", "-o", "json"],
        None,
    );
    let crontab: serde_json::Value = serde_json::from_str(&crontab).unwrap();
    assert_eq!(crontab["metadata"]["labels"]["heritage"], "addon-operator");
}
