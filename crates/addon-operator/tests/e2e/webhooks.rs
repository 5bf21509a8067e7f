//! Webhooks end to end: the real binary with the test certificates serves a module's hooks over HTTPS; denial with the hook's message, a hook past `timeoutSeconds` under each failure policy, garbage, the webhook leaving with its module, and a CR converted between versions through the embedded cluster.

use std::net::{SocketAddr, TcpListener};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::{Running, path_with_tools, require_tool, start_command, wait_for, write};
use crate::webhook_client::{certs, connector, request};

pub const POLICY_HOOK: &str = r##"#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<'EOF'
configVersion: v1
kubernetesValidating:
- name: crontab-policy.example.com
  timeoutSeconds: 1
  rules:
  - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
EOF
  exit 0
fi
ctx=$(cat "$BINDING_CONTEXT_PATH")
case "$ctx" in
  *'"type":"Validating"'*) ;;
  *) exit 7 ;;
esac
case "$ctx" in
  *'"name":"sleepy"'*) sleep 20 ;;
  *'"name":"garbage"'*) echo 'allowed: yes' > "$VALIDATING_RESPONSE_PATH" ;;
  *'"name":"bad"'*) echo '{"allowed":false,"message":"bad crontabs are not allowed"}' > "$ADMISSION_RESPONSE_PATH" ;;
  *) echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH" ;;
esac
"##;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A tree of the module `010-cron`, enabled, with `hooks` (name, text) and no global hooks.
pub fn cron_tree(hooks: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("modules/values.yaml"),
        "cronEnabled: true\n",
        false,
    );
    for (name, text) in hooks {
        write(&root.join("modules/010-cron/hooks").join(name), text, true);
    }
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
    tmp
}

/// The admission server on the loopback `port` with the test certificates.
pub fn admission_server_args(port: u16) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = [
        "--validating-webhook-listen-address",
        "127.0.0.1",
        "--validating-webhook-listen-port",
    ]
    .map(Into::into)
    .into();
    args.push(port.to_string().into());
    for (flag, file) in [
        ("--validating-webhook-server-cert", "tls.crt"),
        ("--validating-webhook-server-key", "tls.key"),
        ("--validating-webhook-ca", "ca.crt"),
    ] {
        args.push(flag.into());
        args.push(certs().join(file).into());
    }
    args
}

/// Waits until the admission server on the loopback `port` answers `/healthz`; the runtime to
/// ask it with and its address.
pub fn admission_server_up(
    port: u16,
    log: &std::path::Path,
) -> (tokio::runtime::Runtime, SocketAddr) {
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    wait_for("the admission server", log, || {
        rt.block_on(request(&connector(None), addr, "GET", "/healthz", ""))
            .is_ok_and(|(status, _)| status == 200)
    });
    (rt, addr)
}

fn review(name: &str) -> String {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{name}"),
            "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
            "name": name,
            "namespace": "default",
            "operation": "CREATE",
            "object": {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": name}}
        }
    })
    .to_string()
}

/// The HTTP status and body of a review posted to the policy webhook.
pub async fn post(addr: SocketAddr, name: &str) -> (u16, String) {
    request(
        &connector(None),
        addr,
        "POST",
        "/hooks/crontab-policy-example-com",
        &review(name),
    )
    .await
    .unwrap()
}

pub async fn ask_with(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    name: &str,
) -> Value {
    let path = "/hooks/crontab-policy-example-com";
    let (status, body) = request(connector, addr, "POST", path, &review(name))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    serde_json::from_str::<Value>(&body).unwrap()["response"].clone()
}

async fn ask(addr: SocketAddr, name: &str) -> Value {
    let (status, body) = post(addr, name).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str::<Value>(&body).unwrap()["response"].clone()
}

#[test]
fn a_modules_validating_hook_answers_over_https_until_the_module_is_disabled() {
    let tmp = cron_tree(&[("policy", POLICY_HOOK)]);
    let root = tmp.path();
    let config = root.join("config.yaml");
    write(&config, "cronEnabled: true\n", false);
    let port = free_port();
    let log = root.join("operator.log");
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--config-file")
        .arg(&config)
        .args(admission_server_args(port))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let (rt, addr) = admission_server_up(port, &log);

    let denied = rt.block_on(ask(addr, "bad"));
    assert_eq!(
        denied,
        json!({"uid": "uid-bad", "allowed": false, "status": {"code": 403, "message": "bad crontabs are not allowed"}})
    );
    assert_eq!(rt.block_on(ask(addr, "good"))["allowed"], true);

    // no answer in time is an error (500), not a denial: the API server applies failurePolicy
    let late = rt.block_on(post(addr, "sleepy"));
    assert_eq!(
        late,
        (
            500,
            "hook 'hooks/policy' did not answer within 1s\n".to_string()
        )
    );
    let garbage = rt.block_on(ask(addr, "garbage"));
    let message = garbage["status"]["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("hook 'hooks/policy': $VALIDATING_RESPONSE_PATH not JSON"),
        "{message}"
    );
    // the operator keeps serving
    assert_eq!(rt.block_on(ask(addr, "good"))["allowed"], true);

    write(&config, "cronEnabled: false\n", false);
    wait_for("the webhook to leave with its module", &log, || {
        rt.block_on(ask(addr, "bad"))["status"]["code"] == 500
    });
    let gone = rt.block_on(ask(addr, "bad"));
    assert_eq!(
        gone["status"]["message"],
        "no enabled hook answers webhook 'crontab-policy-example-com' (its module may be disabled)"
    );
}

/// The example's hook (examples/webhooks): a mutating and a validating webhook for ConfigMaps.
pub const GUARD_HOOK: &str =
    include_str!("../../../../examples/webhooks/modules/010-configmap-policy/hooks/policy");

/// A hook whose two validating webhooks (one per failure policy, told apart by a label) never
/// answer within their timeout.
const SLEEPY_HOOK: &str = r##"#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<'EOF'
configVersion: v1
kubernetesValidating:
- name: sleepy-ignore.example.com
  failurePolicy: Ignore
  timeoutSeconds: 1
  labelSelector: {matchLabels: {sleepy: ignore}}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
- name: sleepy-fail.example.com
  failurePolicy: Fail
  timeoutSeconds: 1
  labelSelector: {matchLabels: {sleepy: fail}}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
EOF
  exit 0
fi
sleep 5
echo '{"allowed":false,"message":"too late"}' > "$VALIDATING_RESPONSE_PATH"
"##;

/// `kubectl create -f` of a guarded ConfigMap: `Ok(())` or kubectl's stderr.
pub fn create_configmap(kubeconfig: &std::path::Path, name: &str) -> Result<(), String> {
    create_labelled_configmap(kubeconfig, name, "guarded: \"yes\"")
}

/// `kubectl create -f` of a ConfigMap with these labels (YAML flow mapping content).
fn create_labelled_configmap(
    kubeconfig: &std::path::Path,
    name: &str,
    labels: &str,
) -> Result<(), String> {
    let manifest = kubeconfig.with_file_name(format!("{name}.yaml"));
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{{labels}}}\ndata: {{a: b}}\n"
    );
    std::fs::write(&manifest, text).unwrap();
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["create", "-f"])
        .arg(&manifest)
        .env("PATH", path_with_tools())
        .env("HOME", kubeconfig.parent().unwrap())
        .output()
        .unwrap();
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

pub fn kubectl_json(kubeconfig: &std::path::Path, args: &[&str]) -> Option<Value> {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .args(["-o", "json"])
        .env("PATH", path_with_tools())
        .env("HOME", kubeconfig.parent().unwrap())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

#[test]
fn on_a_cluster_the_validating_configuration_comes_and_goes_with_the_module() {
    if !require_tool("kubectl") {
        return;
    }
    let tmp = cron_tree(&[
        ("policy", POLICY_HOOK),
        ("guard", GUARD_HOOK),
        ("sleepy", SLEEPY_HOOK),
    ]);
    let root = tmp.path();
    let config = root.join("config.yaml");
    write(&config, "cronEnabled: true\n", false);
    let log = root.join("operator.log");
    let child = start_command(root.join("run"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--config-file")
        .arg(&config)
        .arg("--embedded-cluster")
        .args(["--namespace", "default"])
        .args(admission_server_args(free_port()))
        .args([
            "--validating-webhook-configuration-name",
            "addon-operator-hooks",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let kubeconfig = root.join("run/embedded-cluster.kubeconfig");
    let get = || {
        kubectl_json(
            &kubeconfig,
            &[
                "get",
                "validatingwebhookconfiguration",
                "addon-operator-hooks",
            ],
        )
    };
    wait_for("the ValidatingWebhookConfiguration", &log, || {
        get().is_some()
    });
    let object = get().unwrap();
    let names: Vec<&str> = (object["webhooks"].as_array().unwrap().iter())
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "configmap-guard.example.com",
            "crontab-policy.example.com",
            "sleepy-ignore.example.com",
            "sleepy-fail.example.com"
        ]
    );
    let webhook = &object["webhooks"][1];
    assert_eq!(
        webhook["clientConfig"]["service"],
        json!({"namespace": "default", "name": "shell-operator-validating-svc", "path": "/hooks/crontab-policy-example-com"})
    );
    let ca = std::fs::read(certs().join("ca.crt")).unwrap();
    use base64::Engine as _;
    assert_eq!(
        webhook["clientConfig"]["caBundle"],
        base64::engine::general_purpose::STANDARD.encode(ca)
    );
    assert_eq!(webhook["failurePolicy"], "Fail");
    assert_eq!(webhook["timeoutSeconds"], 1);

    // the embedded API server calls the module's hooks through the operator's server
    let denied = create_configmap(&kubeconfig, "bad").unwrap_err();
    assert!(
        denied.contains(
            "admission webhook \"configmap-guard.example.com\" denied the request: bad configmaps are not allowed"
        ),
        "{denied}"
    );
    create_configmap(&kubeconfig, "good").unwrap();
    let good = kubectl_json(&kubeconfig, &["get", "configmap", "good", "-n", "default"]).unwrap();
    assert_eq!(good["data"], json!({"a": "b", "stamped": "yes"}));

    // a hook past timeoutSeconds: the webhook's failurePolicy decides
    create_labelled_configmap(&kubeconfig, "late-ignored", "sleepy: ignore").unwrap();
    let ignored = ["get", "configmap", "late-ignored", "-n", "default"];
    assert!(kubectl_json(&kubeconfig, &ignored).is_some());
    let failed = create_labelled_configmap(&kubeconfig, "late-failed", "sleepy: fail").unwrap_err();
    assert!(
        failed.contains("failed calling webhook \"sleepy-fail.example.com\""),
        "{failed}"
    );
    assert!(!failed.contains("too late"), "{failed}");
    let rejected = ["get", "configmap", "late-failed", "-n", "default"];
    assert!(kubectl_json(&kubeconfig, &rejected).is_none());

    write(&config, "cronEnabled: false\n", false);
    wait_for("the configuration to be removed", &log, || get().is_none());
    create_configmap(&kubeconfig, "bad").unwrap();
}

/// The example's conversion hook (examples/webhooks): CronTab v1alpha1 `spec.cronSpec` <-> v1
/// `spec.schedule`, with jq.
pub const CONVERT_HOOK: &str =
    include_str!("../../../../examples/webhooks/modules/020-crontab-versions/hooks/convert");

pub const CRONTAB_CRD: &str = include_str!("../../../../examples/webhooks/crontab/crd.yaml");

/// `kubectl apply -f` of `text`; panics with kubectl's stderr when it fails.
pub fn kubectl_apply(kubeconfig: &std::path::Path, file: &str, text: &str) {
    let manifest = kubeconfig.with_file_name(file);
    std::fs::write(&manifest, text).unwrap();
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["apply", "-f"])
        .arg(&manifest)
        .env("PATH", path_with_tools())
        .env("HOME", kubeconfig.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl apply {file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn crontab_v1alpha1(schedule: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1alpha1\nkind: CronTab\nmetadata: {{name: nightly, namespace: default}}\nspec: {{cronSpec: \"{schedule}\", image: busybox}}\n"
    )
}

#[test]
fn a_cr_written_as_v1alpha1_reads_back_as_v1_through_a_modules_conversion_hook() {
    if !require_tool("kubectl") || !require_tool("jq") {
        return;
    }
    let tmp = cron_tree(&[("convert", CONVERT_HOOK)]);
    let root = tmp.path();
    let log = root.join("operator.log");
    let child = start_command(root.join("run"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--embedded-cluster")
        .args(["--namespace", "default"])
        .args(["--conversion-webhook-listen-address", "127.0.0.1"])
        .args(["--conversion-webhook-listen-port", &free_port().to_string()])
        .arg("--conversion-webhook-server-cert")
        .arg(certs().join("conversion.crt"))
        .arg("--conversion-webhook-server-key")
        .arg(certs().join("conversion.key"))
        .arg("--conversion-webhook-ca")
        .arg(certs().join("conversion-ca.crt"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let kubeconfig = root.join("run/embedded-cluster.kubeconfig");
    wait_for("the embedded cluster", &log, || kubeconfig.exists());
    kubectl_apply(&kubeconfig, "crd.yaml", CRONTAB_CRD);
    let crd = || kubectl_json(&kubeconfig, &["get", "crd", "crontabs.stable.example.com"]);
    wait_for("the CRD's conversion webhook", &log, || {
        crd().is_some_and(|c| c["spec"]["conversion"]["strategy"] == "Webhook")
    });

    kubectl_apply(&kubeconfig, "cron.yaml", &crontab_v1alpha1("*/5 * * * *"));
    let get = |resource: &str| {
        kubectl_json(&kubeconfig, &["get", resource, "nightly", "-n", "default"]).unwrap()
    };
    let v1 = get("crontabs.v1.stable.example.com");
    assert_eq!(v1["apiVersion"], "stable.example.com/v1");
    assert_eq!(
        v1["spec"],
        json!({"schedule": "*/5 * * * *", "image": "busybox"})
    );
    let alpha = get("crontabs.v1alpha1.stable.example.com");
    assert_eq!(alpha["apiVersion"], "stable.example.com/v1alpha1");
    assert_eq!(
        alpha["spec"],
        json!({"cronSpec": "*/5 * * * *", "image": "busybox"})
    );

    // a second apply patches the v1alpha1 view of the stored v1 object; a v1alpha1 watch sees
    // the change converted
    let watch = Running(
        std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "get",
                "crontabs.v1alpha1.stable.example.com",
                "-n",
                "default",
            ])
            .args(["--watch", "-o", "json"])
            .env("PATH", path_with_tools())
            .env("HOME", root)
            .stdout(std::fs::File::create(root.join("watch.out")).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the watch's first object", &log, || {
        std::fs::read_to_string(root.join("watch.out")).is_ok_and(|t| t.contains("*/5"))
    });
    kubectl_apply(&kubeconfig, "cron.yaml", &crontab_v1alpha1("0 3 * * *"));
    wait_for("the converted watch event", &log, || {
        std::fs::read_to_string(root.join("watch.out"))
            .is_ok_and(|t| t.contains("\"cronSpec\": \"0 3 * * *\""))
    });
    drop(watch);
    let watched = std::fs::read_to_string(root.join("watch.out")).unwrap();
    assert!(!watched.contains("\"schedule\""), "{watched}");
    assert_eq!(
        get("crontabs.v1.stable.example.com")["spec"],
        json!({"schedule": "0 3 * * *", "image": "busybox"})
    );
    let listed = kubectl_json(
        &kubeconfig,
        &[
            "get",
            "crontabs.v1alpha1.stable.example.com",
            "-n",
            "default",
        ],
    )
    .unwrap();
    assert_eq!(listed["items"][0]["spec"]["cronSpec"], "0 3 * * *");
}

#[test]
fn a_tree_with_webhooks_reloads_while_its_webhook_bindings_stay_the_same() {
    let tmp = cron_tree(&[("policy", POLICY_HOOK)]);
    let root = tmp.path();
    let hook = root.join("modules/010-cron/hooks/policy");
    let port = free_port();
    let log = root.join("operator.log");
    // local mode: --reload-tree is on by default
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .env_remove("ADDON_OPERATOR_RELOAD_TREE")
        .args(admission_server_args(port))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let (rt, addr) = admission_server_up(port, &log);
    let message = |name| rt.block_on(ask(addr, name))["status"]["message"].clone();
    assert_eq!(message("bad"), "bad crontabs are not allowed");

    // the script changes, its webhook binding does not: the tree reloads
    let kinder = POLICY_HOOK.replace("bad crontabs are not allowed", "please fix this crontab");
    write(&hook, &kinder, true);
    wait_for("the reload", &log, || {
        let logged = std::fs::read_to_string(&log).unwrap();
        logged.contains("module tree reloaded changes=\"changed: cron\"")
    });
    assert_eq!(message("bad"), "please fix this crontab");

    // a changed webhook binding is a reload problem: the running tree goes on
    let renamed = kinder.replace("crontab-policy.example.com", "renamed.example.com");
    write(&hook, &renamed, true);
    wait_for("the reload problem", &log, || {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("webhook bindings were added, removed or changed")
    });
    assert_eq!(message("bad"), "please fix this crontab");
}
