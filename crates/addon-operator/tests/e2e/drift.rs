//! Field-level drift and release health against the emulator with real helm and kubectl: in
//! `enforce` a scaled Deployment is scaled back, an object annotated `warn` is reported and left
//! alone, an ignored field and a Helm hook Job give nothing, a field another writer keeps
//! changing is given up for a while, and a Deployment that turns unavailable makes the module
//! not ready, naming it.

use std::path::Path;
use std::time::Duration;

use crate::cluster::{Cluster, http_addr, operator_log, start_operator, wait_for_metrics};
use crate::support::{require_tool, wait_for, write};

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: NAME
  annotations: ANNOTATIONS
spec:
  replicas: 1
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources: {limits: {memory: 1024Mi}}
"#;

fn deployment(name: &str, annotations: &str) -> String {
    DEPLOYMENT
        .replace("NAME", name)
        .replace("ANNOTATIONS", annotations)
}

fn config_map(name: &str, annotations: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations: {annotations}\ndata:\n  key: release\n"
    )
}

const HOOK_JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations: {"helm.sh/hook": post-install, "helm.sh/hook-delete-policy": before-hook-creation}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox, command: ["true"]}]
"#;

/// Module `web`: an enforced Deployment, one whose replicas an HPA owns, a ConfigMap reported
/// only (`warn`), one another writer fights over, and a post-install hook Job.
fn tree(root: &Path) {
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\n",
        false,
    );
    let module = root.join("modules/010-web");
    write(
        &module.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        false,
    );
    let templates = [
        ("web.yaml", deployment("web", "{}")),
        (
            "scaled.yaml",
            deployment(
                "scaled",
                r#"{"drift.addon-operator.io/ignore": "/spec/replicas"}"#,
            ),
        ),
        (
            "settings.yaml",
            config_map("settings", r#"{"drift.addon-operator.io/mode": warn}"#),
        ),
        ("fought.yaml", config_map("fought", "{}")),
        ("job.yaml", HOOK_JOB.to_string()),
    ];
    for (file, text) in templates {
        write(&module.join("templates").join(file), &text, false);
    }
}

fn get(cluster: &Cluster, args: &[&str]) -> String {
    cluster.kubectl(args, None).unwrap_or_default()
}

fn replicas(cluster: &Cluster, name: &str) -> String {
    let path = "jsonpath={.spec.replicas}";
    get(
        cluster,
        &["get", "deploy", name, "-n", "default", "-o", path],
    )
}

fn data(cluster: &Cluster, name: &str) -> String {
    let path = "jsonpath={.data.key}";
    get(cluster, &["get", "cm", name, "-n", "default", "-o", path])
}

fn patch_data(cluster: &Cluster, name: &str, value: &str) {
    let patch = format!(r#"{{"data":{{"key":"{value}"}}}}"#);
    let args = ["patch", "cm", name, "-n", "default", "-p", &patch];
    assert!(cluster.kubectl(&args, None).is_some(), "patch {name}");
}

/// Whether an Event with `reason` is on the object `kind/name` in `default`.
fn has_event(cluster: &Cluster, kind: &str, name: &str, reason: &str) -> bool {
    let events = crate::status_events::events(&cluster.kubeconfig);
    crate::status_events::find(&events, name, reason)
        .is_some_and(|e| e["involvedObject"]["kind"] == kind)
}

fn module_status(cluster: &Cluster, module: &str) -> serde_json::Value {
    let text = get(
        cluster,
        &["get", "modules.addon-operator.io", module, "-o", "json"],
    );
    serde_json::from_str::<serde_json::Value>(&text).unwrap_or_default()["status"].clone()
}

fn count(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn drift_is_restored_reported_ignored_and_given_up_and_health_names_the_object() {
    if !(require_tool("helm") && require_tool("kubectl") && require_tool("jq")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    let cluster = Cluster::start(root);
    let _operator = start_operator(root, &cluster, &["--drift-mode", "enforce"]);
    let log_file = root.join("operator.log");
    wait_for("the release to be ready", &log_file, || {
        operator_log(root).contains("the module's release is ready")
    });
    let addr = http_addr(root);

    // server-set fields (status, defaults) and the hook Job are not drift
    let log = operator_log(root);
    assert_eq!(count(&log, "drift"), 0, "{log}");
    assert!(get(&cluster, &["get", "job", "web-migrate", "-n", "default"]).contains("web-migrate"));

    // an ignored field is left alone, an enforced one is restored
    let scale = |name: &str, n: &str| {
        let args = ["scale", "deploy", name, "-n", "default", "--replicas", n];
        assert!(cluster.kubectl(&args, None).is_some(), "scale {name}");
    };
    scale("scaled", "3");
    scale("web", "5");
    wait_for("web to be scaled back", &log_file, || {
        replicas(&cluster, "web") == "1"
    });
    let log = operator_log(root);
    assert!(log.contains("drift restored"), "{log}");
    wait_for(
        "the DriftRestored Event on the Deployment",
        &log_file,
        || has_event(&cluster, "Deployment", "web", "DriftRestored"),
    );
    assert_eq!(replicas(&cluster, "scaled"), "3");
    assert!(
        !log.lines()
            .any(|l| l.contains("drift") && l.contains("Deployment/scaled")),
        "{log}"
    );

    // warn: reported and counted, not written
    patch_data(&cluster, "settings", "edited");
    wait_for_metrics(
        root,
        &addr,
        "the warn-mode drift to be counted",
        Duration::from_secs(60),
        |text| text.contains(r#"module_drift_total{module="web",kind="ConfigMap",mode="warn"} 1"#),
    );
    let log = operator_log(root);
    assert!(
        log.lines()
            .any(|l| l.contains("fields of a release object changed")
                && l.contains("ConfigMap/settings")),
        "{log}"
    );
    assert_eq!(data(&cluster, "settings"), "edited");
    wait_for(
        "the DriftDetected Event on the ConfigMap",
        &log_file,
        || has_event(&cluster, "ConfigMap", "settings", "DriftDetected"),
    );
    wait_for("the drift count in the module's status", &log_file, || {
        module_status(&cluster, "web")["driftCount"].as_u64() >= Some(1)
    });

    // a fight: restored each time until the guard backs off, then left alone
    let mut backed_off = false;
    for round in 0..12 {
        let value = format!("other-{round}");
        patch_data(&cluster, "fought", &value);
        wait_for("the fought field to be handled", &log_file, || {
            data(&cluster, "fought") == "release" || operator_log(root).contains("not enforcing it")
        });
        if operator_log(root).contains("not enforcing it for a while") {
            backed_off = true;
            assert_eq!(
                data(&cluster, "fought"),
                value,
                "left alone after the back-off"
            );
            break;
        }
    }
    assert!(backed_off, "{}", operator_log(root));

    // health: the Deployment turns unavailable (its status, as a controller would write it)
    let status = r#"{"status":{"availableReplicas":0,"readyReplicas":0,"conditions":[{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable"}]}}"#;
    let args = [
        "patch",
        "deploy",
        "web",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ];
    assert!(cluster.kubectl(&args, None).is_some(), "patch the status");
    wait_for("the module to be not ready", &log_file, || {
        operator_log(root).lines().any(|l| {
            l.contains("the module's release is not ready yet")
                && l.contains("default/Deployment/web")
        })
    });
    let socket = root.join("debug.socket");
    let socket = socket.to_string_lossy();
    let list =
        crate::support::run_ok(&["raw", "--debug-unix-socket", &socket, "/module/list.json"]);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let web = &list["releases"]["web"];
    assert_eq!(web["health"], "progressing", "{list}");
    assert_eq!(web["object"], "default/Deployment/web", "{list}");
    assert!(web["restores"].as_u64().unwrap() >= 1, "{list}");
    wait_for(
        "the module's status to say which object is not ready",
        &log_file,
        || {
            let status = module_status(&cluster, "web");
            let ready = &status["conditions"][0];
            status["ready"] == "False"
                && ready["reason"] == "ReleaseNotReady"
                && ready["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("default/Deployment/web"))
        },
    );
    wait_for_metrics(
        root,
        &addr,
        "module_ready 0",
        Duration::from_secs(30),
        |text| text.contains(r#"module_ready{module="web"} 0"#),
    );
}
