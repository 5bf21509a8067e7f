//! Kubernetes bindings on a real API server: Synchronization, Added/Modified/Deleted with the
//! snapshot after each, and a watch resumed after an etcd compaction: the operator's
//! connections are cut and held while objects change and etcd compacts, so its watch resumes
//! from a resourceVersion etcd no longer has (`410 Gone`; PodTemplates bypass the watch cache
//! in this tier) and must relist without losing or duplicating an object.

use std::collections::BTreeSet;

use addon_operator_testkit::real_cluster::{ExtraRules, FrontProxy};

use crate::support::{cluster, config_map, hook_log, start_operator, wait_until, write};

const NS: &str = "bindings";

/// Logs each binding context as `TYPE EVENT NAME | snapshot NAMES` (names sorted, comma-joined).
const WATCHER: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<'CFG'
configVersion: v1
kubernetes:
- name: templates
  kind: PodTemplate
  namespace: {nameSelector: {matchNames: [bindings]}}
  jqFilter: .metadata.labels
  includeSnapshotsFrom: [templates]
CFG
  exit 0
fi
jq -r '.[] | "\(.type) \(.watchEvent // "-") \(.object.metadata.name // "-") | snapshot \([(.snapshots.templates // .objects)[]?.object.metadata.name] | sort | join(","))"' \
  "$BINDING_CONTEXT_PATH" >> "$HOOK_LOG"
"#;

fn template(name: &str, label: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PodTemplate\nmetadata:\n  name: {name}\n  namespace: {NS}\n  labels: {{step: \"{label}\"}}\ntemplate:\n  spec:\n    containers: [{{name: c, image: busybox}}]\n"
    )
}

fn snapshot(line: &str) -> &str {
    line.split("| snapshot ").nth(1).unwrap_or_default()
}

#[test]
fn events_and_snapshots_survive_a_watch_resumed_after_an_etcd_compaction() {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    write(&tree.join("global-hooks/templates"), WATCHER, true);
    std::fs::create_dir_all(tree.join("modules")).unwrap();
    let rules = ExtraRules {
        bindings: vec![
            r#"{"apiGroups":[""],"resources":["podtemplates"],"verbs":["get","list","watch"]}"#
                .into(),
        ],
        modules: vec![],
    };
    let identity = cluster.operator_identity(NS, &rules);
    let config = config_map(NS, "addon-operator", "global: |\n  {}\n");
    let apply = |text: &str| cluster.kubectl_ok(&["apply", "-f", "-"], Some(text));
    apply(&config);
    apply(&template("a", "1"));
    apply(&template("b", "1"));
    let proxy = FrontProxy::start(cluster.server_addr);
    let kubeconfig = identity.through(&proxy, cluster);
    let op = start_operator(work.path(), "op", &tree, &kubeconfig, &identity, &[]);
    let logged = |line: &str| hook_log(work.path()).iter().any(|l| l == line);
    wait_until("Synchronization", 90, &[&op], || {
        logged("Synchronization - - | snapshot a,b")
    });

    apply(&template("c", "1"));
    wait_until("Added c", 30, &[&op], || {
        logged("Event Added c | snapshot a,b,c")
    });
    apply(&template("a", "2"));
    wait_until("Modified a", 30, &[&op], || {
        logged("Event Modified a | snapshot a,b,c")
    });
    cluster.kubectl_ok(&["-n", NS, "delete", "podtemplate", "b"], None);
    wait_until("Deleted b", 30, &[&op], || {
        logged("Event Deleted b | snapshot a,c")
    });
    let seen_before = hook_log(work.path()).len();
    let list = format!("/api/v1/namespaces/{NS}/podtemplates");
    let list: serde_json::Value =
        serde_json::from_str(&cluster.kubectl_ok(&["get", "--raw", &list], None)).unwrap();
    let old_rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    proxy.cut_and_hold();
    apply(&template("d", "1"));
    cluster.kubectl_ok(&["-n", NS, "delete", "podtemplate", "c"], None);
    apply(&template("a", "3"));
    cluster.compact_etcd();
    // the operator's resourceVersion is gone from etcd: a watch from it is refused with 410
    let watch = format!(
        "/api/v1/namespaces/{NS}/podtemplates?watch=1&timeoutSeconds=1&resourceVersion={old_rv}"
    );
    let gone = cluster.kubectl_ok(&["get", "--raw", &watch], None);
    assert!(
        gone.contains("\"code\":410"),
        "a watch from {old_rv}: {gone}"
    );
    proxy.release();

    wait_until("the snapshot after the relist", 60, &[&op], || {
        let lines = hook_log(work.path());
        lines.len() > seen_before && lines.last().is_some_and(|l| snapshot(l) == "a,d")
    });
    let lines = hook_log(work.path());
    for line in &lines {
        let names: Vec<&str> = snapshot(line).split(',').collect();
        let unique: BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(
            names.len(),
            unique.len(),
            "an object twice in a snapshot: {line}"
        );
    }
    // the changes made while the watch was down reach the hook once each, as events or as a
    // new Synchronization
    let after = &lines[seen_before..];
    eprintln!("after the relist: {after:?}");
    let count = |prefix: &str| after.iter().filter(|l| l.starts_with(prefix)).count();
    let evented = count("Event Added d") == 1 && count("Event Deleted c") == 1;
    let resynced = after
        .iter()
        .any(|l| l.starts_with("Synchronization") && snapshot(l) == "a,d");
    assert!(evented || resynced, "after the relist: {after:?}");
    assert!(
        count("Event Added d") <= 1 && count("Event Deleted c") <= 1,
        "{after:?}"
    );
    drop(op);
}
