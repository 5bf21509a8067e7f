//! The Module status objects and the Events on a real API server with the shipped RBAC only:
//! the operator creates the CRD, one labelled object per module, writes their status, and its
//! Events of a cluster-scoped Module (in `default`, as the API server requires) are accepted.

use serde_json::Value;

use addon_operator_testkit::real_cluster::ExtraRules;

use crate::support::{cluster, config_map, start_operator, wait_until, write};

const NS: &str = "status-events";

const FAILING: &str = r#"#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi
echo "cannot reach the backend" >&2
exit 2
"#;

const CHART: &str = "apiVersion: v2\nname: status-web\nversion: 0.1.0\n";
const TEMPLATE: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: status-web\ndata:\n  a: b\n";

#[test]
fn module_objects_status_and_events_work_with_the_shipped_rbac() {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    write(
        &tree.join("modules/010-status-web/Chart.yaml"),
        CHART,
        false,
    );
    write(
        &tree.join("modules/010-status-web/templates/cm.yaml"),
        TEMPLATE,
        false,
    );
    write(
        &tree.join("modules/020-status-broken/hooks/fail"),
        FAILING,
        true,
    );
    write(&tree.join("global-hooks/.keep"), "", false);
    let identity = cluster.operator_identity(NS, &ExtraRules::default());
    let config = config_map(
        NS,
        "addon-operator",
        "statusWebEnabled: \"true\"\nstatusBrokenEnabled: \"true\"\n",
    );
    cluster.kubectl_ok(&["apply", "-f", "-"], Some(&config));
    let op = start_operator(
        work.path(),
        "op",
        &tree,
        &identity.kubeconfig,
        &identity,
        &[],
    );
    let module = |name: &str| -> Value {
        let text = cluster
            .kubectl(
                &["get", "modules.addon-operator.io", name, "-o", "json"],
                None,
            )
            .unwrap_or_default();
        serde_json::from_str(&text).unwrap_or_default()
    };
    wait_until("status-web Ready with revision 1", 120, &[&op], || {
        let web = module("status-web");
        web["status"]["phase"] == "Ready" && web["status"]["revision"] == 1
    });
    wait_until("status-broken Failed", 60, &[&op], || {
        module("status-broken")["status"]["phase"] == "Failed"
    });
    let broken = module("status-broken");
    assert_eq!(broken["metadata"]["labels"]["addon-operator.io/owner"], NS);
    assert_eq!(broken["status"]["lastError"]["binding"], "beforeHelm");
    let events = |object: &str| -> Vec<Value> {
        let selector = format!("involvedObject.name={object}");
        let args = [
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            &selector,
            "-o",
            "json",
        ];
        let text = cluster.kubectl(&args, None).unwrap_or_default();
        let list: Value = serde_json::from_str(&text).unwrap_or_default();
        list["items"].as_array().cloned().unwrap_or_default()
    };
    wait_until(
        "a HookFailed Event counted more than once",
        60,
        &[&op],
        || {
            (events("status-broken").iter())
                .any(|e| e["reason"] == "HookFailed" && e["count"].as_u64() >= Some(2))
        },
    );
    let failed = events("status-broken");
    let failed = failed.iter().find(|e| e["reason"] == "HookFailed").unwrap();
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("exit status 2") && message.contains("cannot reach the backend"),
        "{message}"
    );
    assert_eq!(failed["involvedObject"]["uid"], broken["metadata"]["uid"]);
    assert!(
        events("status-web")
            .iter()
            .any(|e| e["reason"] == "Installed")
    );
    assert!(
        !op.log_text().contains("cannot create"),
        "{}",
        op.log_text()
    );
    drop(op);
}
