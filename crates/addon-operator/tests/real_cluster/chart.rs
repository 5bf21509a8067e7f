//! The operator's own Helm chart (`deploy/helm/addon-operator`) installed on a real API server
//! with real helm: every object it renders (RBAC, Deployment, Services, ConfigMap, the Lease
//! settings of HA) passes the server's validation, with the defaults, with HA and with the
//! webhook servers on. The cluster has no nodes, so no pod runs: the webhook case runs the
//! operator as a process with the Deployment's environment and the chart's ServiceAccount, and
//! the API server reaches its hook through the chart's Service.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command;

use addon_operator_testkit::real_cluster::{RealCluster, repo_root};
use addon_operator_testkit::tools::path_with_tools;
use serde_json::Value;

use crate::support::{cluster, operator_command, spawn, wait_until, write};

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
    let cases: [(&str, &str, &[&str]); 2] = [
        ("helm3", "chart-defaults", &[]),
        ("helm4", "chart-ha", &["ha.enabled=true"]),
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

const GUARD: &str = r##"#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","kubernetesValidating":[{"name":"chart-guard.tier.example.com","labelSelector":{"matchLabels":{"chart-guarded":"yes"}},"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}]}'
  exit 0
fi
echo '{"allowed":false,"message":"refused through the chart'"'"'s Service"}' > "$VALIDATING_RESPONSE_PATH"
"##;

/// The plain `value`s of the Deployment's container environment.
fn deployment_env(deployment: &Value) -> BTreeMap<String, String> {
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["value"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// The container port named `name` of the Deployment.
fn container_port(deployment: &Value, name: &str) -> String {
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let ports = container["ports"].as_array().unwrap();
    let port = ports.iter().find(|p| p["name"] == name).unwrap();
    port["containerPort"].to_string()
}

/// A Secret `name` with `tls.crt`, `tls.key` and `ca.crt` for both webhook Services.
fn webhook_secret(cluster: &RealCluster, dir: &Path, ns: &str, release: &str) {
    let names: Vec<String> = ["validating", "conversion"]
        .iter()
        .map(|s| format!("{release}-addon-operator-{s}.{ns}.svc"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let pair = cluster.ca.serving(dir, "chart-webhook", &names);
    let file = |p: &Path| p.to_string_lossy().into_owned();
    let (cert, key, ca) = (
        file(&pair.cert),
        file(&pair.key),
        file(&cluster.ca.pair.cert),
    );
    cluster.kubectl_ok(
        &[
            "-n",
            ns,
            "create",
            "secret",
            "generic",
            "webhook-tls",
            &format!("--from-file=tls.crt={cert}"),
            &format!("--from-file=tls.key={key}"),
            &format!("--from-file=ca.crt={ca}"),
        ],
        None,
    );
}

#[test]
fn the_chart_webhook_services_reach_an_operator_run_with_its_environment() {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    let (ns, release) = ("chart-webhooks", "wh");
    cluster.kubectl_ok(&["create", "namespace", ns], None);
    webhook_secret(cluster, work.path(), ns, release);
    let mut command = Command::new("helm3");
    command
        .args(["install", release])
        .arg(repo_root().join("deploy/helm/addon-operator"))
        .args([
            "--namespace",
            ns,
            "--set",
            "webhook.enabled=true,webhook.certsSecret=webhook-tls",
        ])
        .arg("--kubeconfig")
        .arg(&cluster.admin_kubeconfig)
        .env("PATH", path_with_tools());
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let name = format!("{release}-addon-operator");
    let deployment =
        cluster.kubectl_ok(&["-n", ns, "get", "deployment", &name, "-o", "json"], None);
    let deployment: Value = serde_json::from_str(&deployment).unwrap();
    let env = deployment_env(&deployment);
    assert_eq!(
        env["VALIDATING_WEBHOOK_SERVICE_NAME"],
        format!("{name}-validating")
    );
    assert_eq!(
        env["CONVERSION_WEBHOOK_SERVICE_NAME"],
        format!("{name}-conversion")
    );
    assert_eq!(
        container_port(&deployment, "validating"),
        env["VALIDATING_WEBHOOK_LISTEN_PORT"]
    );
    assert_eq!(
        container_port(&deployment, "conversion"),
        env["CONVERSION_WEBHOOK_LISTEN_PORT"]
    );
    let mounts =
        deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"].to_string();
    assert!(
        mounts.contains("/validating-certs") && mounts.contains("/conversion-certs"),
        "{mounts}"
    );

    // the operator as the chart's ServiceAccount, with the Deployment's environment; the
    // certificate files are the Secret's, at local paths instead of the pod's mounts
    let tree = work.path().join("tree");
    write(
        &tree.join("modules/values.yaml"),
        "guardEnabled: true\n",
        false,
    );
    write(&tree.join("modules/010-guard/hooks/guard"), GUARD, true);
    std::fs::create_dir_all(tree.join("global-hooks")).unwrap();
    let identity = cluster.service_account_identity(ns, &name);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let service = &env["VALIDATING_WEBHOOK_SERVICE_NAME"];
    let ip = cluster.kubectl_ok(
        &[
            "-n",
            ns,
            "get",
            "service",
            service,
            "-o",
            "jsonpath={.spec.clusterIP}",
        ],
        None,
    );
    cluster.egress.route(
        &format!("{ip}:443"),
        SocketAddr::from(([127, 0, 0, 1], port)),
    );
    // the pod the Deployment would run (no controller manager here makes one): the operator finds
    // its own release through it and never purges it
    let uid = deployment["metadata"]["uid"].as_str().unwrap();
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}-0\n  namespace: {ns}\n  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: {name}, uid: {uid}, controller: true}}]\nspec:\n  serviceAccountName: {name}\n  containers: [{{name: addon-operator, image: addon-operator}}]\n"
    );
    cluster.kubectl_ok(&["apply", "-f", "-"], Some(&pod));
    let mut command = operator_command(work.path(), "op", &tree, &identity.kubeconfig, &identity);
    command.env("ADDON_OPERATOR_POD", format!("{name}-0"));
    command.envs(
        env.iter()
            .filter(|(k, _)| k.contains("WEBHOOK") || k.as_str() == "ADDON_OPERATOR_CONFIG_MAP"),
    );
    let dir = work.path().to_string_lossy().into_owned();
    command
        .args(["--validating-webhook-listen-address", "127.0.0.1"])
        .args(["--validating-webhook-listen-port", &port.to_string()])
        .args([
            "--validating-webhook-server-cert",
            &format!("{dir}/chart-webhook.crt"),
        ])
        .args([
            "--validating-webhook-server-key",
            &format!("{dir}/chart-webhook.key"),
        ])
        .arg("--validating-webhook-ca")
        .arg(&cluster.ca.pair.cert);
    let op = spawn(work.path(), "op", command);
    // a new name at each try: an object created before the webhook existed would only be updated
    let mut attempt = 0;
    let mut answer = String::new();
    wait_until("a denial through the chart's Service", 90, &[&op], || {
        attempt += 1;
        let guarded = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x{attempt}, namespace: {ns}, labels: {{chart-guarded: \"yes\"}}}}\n"
        );
        answer = cluster
            .kubectl(&["create", "-f", "-"], Some(&guarded))
            .err()
            .unwrap_or_default()
            .stderr;
        answer.contains("refused through the chart's Service")
    });
    let path = "jsonpath={.webhooks[0].clientConfig.service.name}";
    let configuration = ["get", "validatingwebhookconfiguration", &name, "-o", path];
    assert_eq!(
        cluster.kubectl_ok(&configuration, None),
        format!("{name}-validating")
    );
    let log = op.log_text();
    assert!(
        log.contains("own Helm release is never purged") && !log.contains("ModulePurge"),
        "{log}"
    );
}
