//! The API server itself calls the hooks' webhooks: through its `cluster` egress (the test's
//! CONNECT proxy stands in for the Service network) it dials the ClusterIP of the Service the
//! operator names,
//! checks the serving certificate against the caBundle the operator wrote, sends its own
//! AdmissionReview and ConversionReview, and applies its own timeouts and failure policies.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;

use addon_operator_testkit::real_cluster::{ExtraRules, RealCluster};

use crate::support::{Operator, cluster, config_map, start_operator, wait_until, write};

const NS: &str = "webhooks";

const POLICY: &str = r##"#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<'CFG'
configVersion: v1
kubernetesValidating:
- name: guard.tier.example.com
  labelSelector: {matchLabels: {tier-guarded: "yes"}}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
- name: slow-fail.tier.example.com
  labelSelector: {matchLabels: {tier-slow: fail}}
  timeoutSeconds: 2
  failurePolicy: Fail
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
- name: slow-ignore.tier.example.com
  labelSelector: {matchLabels: {tier-slow: ignore}}
  timeoutSeconds: 2
  failurePolicy: Ignore
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
kubernetesMutating:
- name: stamp.tier.example.com
  labelSelector: {matchLabels: {tier-guarded: "yes"}}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
CFG
  exit 0
fi
ctx=$(cat "$BINDING_CONTEXT_PATH")
case "$ctx" in
  *'"binding":"slow-'*) sleep 10; echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH" ;;
  *'"type":"Mutating"'*) echo '{"allowed":true,"patch":[{"op":"add","path":"/data/stamped","value":"yes"}]}' > "$ADMISSION_RESPONSE_PATH" ;;
  *'"name":"bad"'*) echo '{"allowed":false,"message":"bad configmaps are not allowed"}' > "$VALIDATING_RESPONSE_PATH" ;;
  *) echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH" ;;
esac
"##;

const CONVERT: &str = r##"#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<'CFG'
configVersion: v1
kubernetesCustomResourceConversion:
- name: crontab_versions
  crdName: crontabs.tier.example.com
  conversions:
  - {fromVersion: tier.example.com/v1alpha1, toVersion: tier.example.com/v1}
  - {fromVersion: tier.example.com/v1, toVersion: tier.example.com/v1alpha1}
CFG
  exit 0
fi
jq -c '.[0] as $c | {convertedObjects: [$c.review.request.objects[] | .apiVersion = $c.toVersion
  | if $c.toVersion == "tier.example.com/v1"
    then .spec.schedule = .spec.cronSpec | del(.spec.cronSpec)
    else .spec.cronSpec = .spec.schedule | del(.spec.schedule) end]}' \
  "$BINDING_CONTEXT_PATH" > "$CONVERSION_RESPONSE_PATH"
"##;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.tier.example.com}
spec:
  group: tier.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1alpha1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn labelled(name: &str, label: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {NS}\n  labels: {{{label}}}\ndata: {{a: b}}\n"
    )
}

/// Creates the Service `name` (port 443) as the operator's deployment does; its ClusterIP,
/// which the API server dials (through the egress proxy) with the Service's DNS name as the TLS
/// server name.
fn service_ip(cluster: &RealCluster, name: &str) -> String {
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: {NS}}}\nspec:\n  ports: [{{port: 443, targetPort: 9680}}]\n  selector: {{app: addon-operator}}\n"
    );
    cluster.kubectl_ok(&["apply", "-f", "-"], Some(&service));
    let ip = [
        "-n",
        NS,
        "get",
        "service",
        name,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ];
    cluster.kubectl_ok(&ip, None)
}

/// The webhook tree, the operator identity with the rules deploy/base/rbac.yaml tells users of
/// webhook and conversion bindings to add, and the operator serving both webhook servers with
/// certificates for their Services, which the egress proxy routes to.
fn start_webhook_operator(cluster: &RealCluster, work: &Path) -> Operator {
    let tree = work.join("tree");
    write(
        &tree.join("modules/values.yaml"),
        "guardEnabled: true\nversionsEnabled: true\n",
        false,
    );
    write(&tree.join("modules/010-guard/hooks/policy"), POLICY, true);
    write(
        &tree.join("modules/020-versions/hooks/convert"),
        CONVERT,
        true,
    );
    std::fs::create_dir_all(tree.join("global-hooks")).unwrap();
    let rules = ExtraRules {
        bindings: vec![],
        modules: vec![
            r#"{"apiGroups":["admissionregistration.k8s.io"],"resources":["validatingwebhookconfigurations","mutatingwebhookconfigurations"],"verbs":["get","create","update","delete"]}"#.into(),
            r#"{"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"verbs":["get","patch"]}"#.into(),
        ],
    };
    let identity = cluster.operator_identity(NS, &rules);
    let config = config_map(NS, "addon-operator", "global: |\n  {}\n");
    cluster.kubectl_ok(&["apply", "-f", "-"], Some(&config));
    cluster.kubectl_ok(&["apply", "-f", "-"], Some(CRD));
    let mut flags: Vec<String> = vec![
        "--validating-webhook-configuration-name".into(),
        "tier-webhooks".into(),
    ];
    let ca = cluster.ca.pair.cert.to_string_lossy().into_owned();
    for server in ["validating", "conversion"] {
        let service = format!("shell-operator-{server}-svc.{NS}.svc");
        let pair = cluster.ca.serving(work, server, &[&service]);
        let port = free_port();
        let to = SocketAddr::from(([127, 0, 0, 1], port));
        let ip = service_ip(cluster, &format!("shell-operator-{server}-svc"));
        cluster.egress.route(&format!("{ip}:443"), to);
        for (flag, value) in [
            ("listen-address", "127.0.0.1".to_string()),
            ("listen-port", port.to_string()),
            ("server-cert", pair.cert.to_string_lossy().into_owned()),
            ("server-key", pair.key.to_string_lossy().into_owned()),
            ("ca", ca.clone()),
        ] {
            flags.push(format!("--{server}-webhook-{flag}"));
            flags.push(value);
        }
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    start_operator(work, "op", &tree, &identity.kubeconfig, &identity, &flags)
}

#[test]
fn the_api_server_calls_admission_and_conversion_hooks() {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    let op = start_webhook_operator(cluster, work.path());
    let jsonpath = "jsonpath={.spec.conversion.strategy}";
    wait_until("the webhook configurations", 120, &[&op], || {
        let get = |kind: &str| {
            cluster
                .kubectl(&["get", kind, "tier-webhooks"], None)
                .is_ok()
        };
        get("validatingwebhookconfiguration")
            && get("mutatingwebhookconfiguration")
            && cluster
                .kubectl(
                    &["get", "crd", "crontabs.tier.example.com", "-o", jsonpath],
                    None,
                )
                .is_ok_and(|s| s == "Webhook")
    });

    // a denial with the hook's message, through kubectl apply (retried: the API server picks a
    // new configuration up within a second or so)
    let apply = |text: &str| cluster.kubectl(&["apply", "-f", "-"], Some(text));
    let mut denial = String::new();
    wait_until("a denial from the validating hook", 60, &[&op], || {
        let answer = apply(&labelled("bad", "tier-guarded: \"yes\""));
        denial = answer.err().unwrap_or_default().stderr;
        denial.contains("bad configmaps are not allowed")
    });
    assert!(denial.contains("denied the request"), "{denial}");
    assert!(
        cluster
            .kubectl(&["-n", NS, "get", "configmap", "bad"], None)
            .is_err()
    );

    // a mutation stored
    apply(&labelled("good", "tier-guarded: \"yes\"")).unwrap();
    let stamped = [
        "-n",
        NS,
        "get",
        "configmap",
        "good",
        "-o",
        "jsonpath={.data.stamped}",
    ];
    assert_eq!(cluster.kubectl_ok(&stamped, None), "yes");

    // a hook past timeoutSeconds: refused under Fail, admitted under Ignore
    let slow = apply(&labelled("slow-fail", "tier-slow: fail"))
        .expect_err("the Fail policy refuses a webhook past its timeout");
    assert!(slow.stderr.contains("slow-fail.tier.example.com"), "{slow}");
    apply(&labelled("slow-ignore", "tier-slow: ignore")).unwrap();

    // one object read at both versions through the conversion hook
    let nightly = format!(
        "apiVersion: tier.example.com/v1alpha1\nkind: CronTab\nmetadata: {{name: nightly, namespace: {NS}}}\nspec: {{cronSpec: \"*/5 * * * *\", image: busybox}}\n"
    );
    wait_until("the CronTab written as v1alpha1", 60, &[&op], || {
        apply(&nightly).is_ok()
    });
    let read = |version: &str, field: &str| {
        let kind = format!("crontabs.{version}.tier.example.com");
        let path = format!("jsonpath={{.spec.{field}}}");
        cluster.kubectl_ok(&["-n", NS, "get", &kind, "nightly", "-o", &path], None)
    };
    assert_eq!(read("v1", "schedule"), "*/5 * * * *");
    assert_eq!(read("v1alpha1", "cronSpec"), "*/5 * * * *");
    drop(op);
}
