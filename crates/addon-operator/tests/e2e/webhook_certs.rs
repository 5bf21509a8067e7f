//! Webhook servers started without certificates: a throwaway CA in local mode and with the embedded cluster (the webhooks answer over TLS checked against it), and one clear error against a cluster.

use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::json;

use crate::cluster::Cluster;
use crate::support::{Running, require_tool, start_command, wait_for, write};
use crate::webhook_client::{connector, connector_trusting, request};
use crate::webhooks::{
    CONVERT_HOOK, CRONTAB_CRD, GUARD_HOOK, POLICY_HOOK, ask_with, create_configmap, cron_tree,
    crontab_v1alpha1, free_port, kubectl_apply, kubectl_json,
};

#[test]
fn without_certificates_local_mode_serves_webhooks_checked_against_a_throwaway_ca() {
    let tmp = cron_tree(&[("policy", POLICY_HOOK)]);
    let root = tmp.path();
    let port = free_port();
    let log = root.join("operator.log");
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .args(["--validating-webhook-listen-address", "127.0.0.1"])
        .args(["--validating-webhook-listen-port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let ca = root.join("tmp/webhook-certs/validating/ca.crt");
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    wait_for("the admission server", &log, || {
        ca.exists()
            && rt
                .block_on(request(
                    &connector_trusting(&ca, None),
                    addr,
                    "GET",
                    "/healthz",
                    "",
                ))
                .is_ok_and(|(status, _)| status == 200)
    });
    let generated = connector_trusting(&ca, None);
    let denied = rt.block_on(ask_with(&generated, addr, "bad"));
    assert_eq!(denied["allowed"], false, "{denied}");
    // the certificate served is the generated one, not one another CA signed
    let other = rt.block_on(request(&connector(None), addr, "GET", "/healthz", ""));
    assert!(other.is_err(), "{other:?}");
}

#[test]
fn without_certificates_the_embedded_cluster_calls_both_webhooks_with_the_generated_ca() {
    if !require_tool("kubectl") || !require_tool("jq") {
        return;
    }
    let tmp = cron_tree(&[("guard", GUARD_HOOK), ("convert", CONVERT_HOOK)]);
    let root = tmp.path();
    let log = root.join("operator.log");
    let child = start_command(root.join("run"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--embedded-cluster")
        .args(["--namespace", "default"])
        .args(["--validating-webhook-listen-address", "127.0.0.1"])
        .args(["--validating-webhook-listen-port", &free_port().to_string()])
        .args(["--conversion-webhook-listen-address", "127.0.0.1"])
        .args(["--conversion-webhook-listen-port", &free_port().to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let kubeconfig = root.join("run/embedded-cluster.kubeconfig");
    let get = || kubectl_json(&kubeconfig, &["get", "validatingwebhookconfiguration"]);
    wait_for("the ValidatingWebhookConfiguration", &log, || {
        get().is_some_and(|list| !list["items"].as_array().unwrap().is_empty())
    });
    let ca = std::fs::read(root.join("run/webhook-certs/validating/ca.crt")).unwrap();
    let object = &get().unwrap()["items"][0];
    assert_eq!(
        object["webhooks"][0]["clientConfig"]["caBundle"],
        base64::engine::general_purpose::STANDARD.encode(ca)
    );
    let refused = create_configmap(&kubeconfig, "bad").unwrap_err();
    assert!(
        refused.contains("bad configmaps are not allowed"),
        "{refused}"
    );
    create_configmap(&kubeconfig, "good").unwrap();

    kubectl_apply(&kubeconfig, "crd.yaml", CRONTAB_CRD);
    let crd = || kubectl_json(&kubeconfig, &["get", "crd", "crontabs.stable.example.com"]);
    wait_for("the CRD's conversion webhook", &log, || {
        crd().is_some_and(|c| c["spec"]["conversion"]["strategy"] == "Webhook")
    });
    kubectl_apply(&kubeconfig, "cron.yaml", &crontab_v1alpha1("*/5 * * * *"));
    let args = [
        "get",
        "crontabs.v1.stable.example.com",
        "nightly",
        "-n",
        "default",
    ];
    let v1 = kubectl_json(&kubeconfig, &args).unwrap();
    assert_eq!(
        v1["spec"],
        json!({"schedule": "*/5 * * * *", "image": "busybox"})
    );
}

#[test]
fn against_a_cluster_a_missing_certificate_stops_the_start_naming_its_flag_once() {
    let tmp = cron_tree(&[("policy", POLICY_HOOK)]);
    let root = tmp.path();
    let cluster = Cluster::start(root);
    let config = root.join("config.yaml");
    write(&config, "cronEnabled: true\n", false);
    let log = root.join("operator.log");
    let mut child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--kube-config")
        .arg(&cluster.kubeconfig)
        .arg("--config-file")
        .arg(&config)
        .args(["--namespace", "default"])
        .args(["--validating-webhook-listen-address", "127.0.0.1"])
        .args(["--validating-webhook-listen-port", &free_port().to_string()])
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the operator did not stop");
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "{text}");
    let said = "admission webhook server: read /validating-certs/tls.crt (set by \
        --validating-webhook-server-cert or VALIDATING_WEBHOOK_SERVER_CERT): No such file or \
        directory (os error 2)";
    assert!(text.contains(said), "{text}");
    assert_eq!(text.matches("No such file").count(), 1, "{text}");
    assert!(!root.join("tmp/webhook-certs").exists());
}
