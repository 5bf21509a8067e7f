//! The operator's own Helm chart (`deploy/helm/addon-operator`) installed on a real API server
//! with real helm: every object it renders (RBAC, Deployment, Services, ConfigMap, the Lease
//! settings of HA) passes the server's validation, with the defaults, with HA and with the
//! webhook server on. The cluster has no nodes: the objects are stored, no pod runs.

use std::process::Command;

use addon_operator_testkit::real_cluster::{RealCluster, repo_root};
use addon_operator_testkit::tools::path_with_tools;

use crate::support::cluster;

fn helm_install(cluster: &RealCluster, helm: &str, release: &str, sets: &[&str]) {
    let mut command = Command::new(helm);
    command
        .args(["install", release])
        .arg(repo_root().join("deploy/helm/addon-operator"))
        .args(["--namespace", release, "--create-namespace"])
        .arg("--kubeconfig")
        .arg(&cluster.admin_kubeconfig)
        .env("PATH", path_with_tools());
    for set in sets {
        command.args(["--set", set]);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{helm} install {release} {sets:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_operator_chart_installs_with_defaults_ha_and_webhooks() {
    let Some(cluster) = cluster() else { return };
    let cases: [(&str, &str, &[&str]); 3] = [
        ("helm3", "chart-defaults", &[]),
        ("helm4", "chart-ha", &["ha.enabled=true"]),
        ("helm3", "chart-webhooks", &["webhook.enabled=true"]),
    ];
    for (helm, release, sets) in cases {
        helm_install(cluster, helm, release, sets);
        let deployment = cluster.kubectl_ok(
            &[
                "-n",
                release,
                "get",
                "deployments",
                "-o",
                "jsonpath={.items[*].spec.replicas}",
            ],
            None,
        );
        let want = if release == "chart-ha" { "2" } else { "1" };
        assert_eq!(deployment, want, "{release}");
        let account = cluster.kubectl_ok(
            &["-n", release, "get", "serviceaccounts", "-o", "name"],
            None,
        );
        assert!(account.contains("addon-operator"), "{release}: {account}");
    }
}
