//! Two modules whose hooks watch the same objects share one watch: each sees the same objects
//! with its own filter results, one module disabled leaves the other's events flowing, and a
//! dropped or expired watch heals both.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::cluster::{Cluster, get, http_addr, operator_log, start_operator};
use crate::support::{Running, require_tool, wait_for, write};

/// Module `name`'s hook: watches ConfigMaps labelled `shared: "yes"` with `filter`, and appends
/// each binding context it gets, one line per context, to `$STATE_DIR/<name>.jsonl`.
fn module(root: &Path, order: u32, name: &str, filter: &str) {
    let hook = format!(
        r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${{1:-}}" == "--config" ]]; then
cat <<'CFG'
configVersion: v1
kubernetes:
- name: cms
  kind: ConfigMap
  labelSelector: {{matchLabels: {{shared: "yes"}}}}
  jqFilter: '{filter}'
CFG
exit 0
fi
jq -c '.[]' "$BINDING_CONTEXT_PATH" >> "$STATE_DIR/{name}.jsonl"
"#
    );
    write(
        &root.join(format!("modules/{order:03}-{name}/hooks/watch")),
        &hook,
        true,
    );
}

fn configmap(name: &str, n: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{shared: \"yes\"}}\ndata:\n  value: \"{n}\"\n"
    )
}

/// The binding contexts module `name` got so far.
fn contexts(root: &Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(root.join(format!("{name}.jsonl")))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `(object name, data.value, filterResult)` of a context's objects (Synchronization) or object.
fn seen(context: &Value) -> Vec<(String, String, Value)> {
    let one = |o: &Value| {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        (
            text(&o["object"]["metadata"]["name"]),
            text(&o["object"]["data"]["value"]),
            o["filterResult"].clone(),
        )
    };
    match context["objects"].as_array() {
        Some(objects) => objects.iter().map(one).collect(),
        None => vec![one(context)],
    }
}

/// Whether module `name` has seen an Event of `cm` with `data.value` = `n`.
fn has_event(root: &Path, name: &str, cm: &str, n: &str) -> bool {
    contexts(root, name).iter().any(|c| {
        c["type"] == "Event"
            && c["object"]["metadata"]["name"] == cm
            && c["object"]["data"]["value"] == n
    })
}

/// Writes `modules` (`(order, name, jqFilter)`), all enabled.
fn modules(root: &Path, modules: &[(u32, &str, &str)]) {
    let mut values = String::new();
    for (order, name, filter) in modules {
        module(root, *order, name, filter);
        values.push_str(&format!("{name}Enabled: true\n"));
    }
    write(&root.join("modules/values.yaml"), &values, false);
}

fn apply(cluster: &Cluster, text: &str) {
    cluster
        .kubectl(&["apply", "--validate=false", "-f", "-"], Some(text))
        .unwrap();
}

/// Starts the operator on `root` and waits for its first converge.
fn start_ready(root: &Path, cluster: &Cluster) -> Running {
    let operator = start_operator(root, cluster, &[]);
    let addr = http_addr(root);
    wait_for("the first converge", &root.join("operator.log"), || {
        get(&addr, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    operator
}

/// What module `name`'s first Synchronization held.
fn first_sync(root: &Path, name: &str) -> Vec<(String, String, Value)> {
    let all = contexts(root, name);
    let first = all.iter().find(|c| c["type"] == "Synchronization");
    first.map(seen).unwrap_or_default()
}

#[test]
fn modules_watching_the_same_objects_share_a_watch_that_survives_a_disable_and_heals_after_a_drop()
{
    if !(require_tool("jq") && require_tool("kubectl")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    modules(
        root,
        &[
            (10, "first", ".data.value"),
            (20, "second", r#".metadata.name + "=" + .data.value"#),
        ],
    );
    let cluster = Cluster::start(root);
    let apply = |text: &str| apply(&cluster, text);
    apply(&configmap("one", "1"));
    apply(&configmap("two", "2"));
    let _operator = start_ready(root, &cluster);
    let log = root.join("operator.log");

    // the same objects, each module with its own filter results
    let sync = |name: &str| first_sync(root, name);
    let text = |s: &str| s.to_string();
    assert_eq!(
        sync("first"),
        [
            (text("one"), text("1"), Value::from("1")),
            (text("two"), text("2"), Value::from("2"))
        ]
    );
    assert_eq!(
        sync("second"),
        [
            (text("one"), text("1"), Value::from("one=1")),
            (text("two"), text("2"), Value::from("two=2"))
        ]
    );
    let joined = operator_log(root)
        .lines()
        .filter(|l| l.contains("joined a running watch"))
        .count();
    assert_eq!(joined, 1, "{}", operator_log(root));

    apply(&configmap("one", "10"));
    wait_for("both modules see the change", &log, || {
        has_event(root, "first", "one", "10") && has_event(root, "second", "one", "10")
    });
    let event = contexts(root, "second")
        .into_iter()
        .rfind(|c| c["type"] == "Event")
        .unwrap();
    assert_eq!(event["filterResult"], "one=10");
    assert_eq!(event["watchEvent"], "Modified");

    // the watch dropped after its history expired: it relists, and both modules heal
    cluster.emulator.expire_history();
    cluster.emulator.drop_watches();
    apply(&configmap("two", "20"));
    wait_for("both modules see the change after the drop", &log, || {
        has_event(root, "first", "two", "20") && has_event(root, "second", "two", "20")
    });

    // the module whose binding started the watch is disabled: the other still gets events
    let disable = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\n  namespace: default\ndata:\n  firstEnabled: \"false\"\n";
    apply(disable);
    wait_for("the first module's delete", &log, || {
        operator_log(root).contains("kubernetes binding watch stopped")
    });
    let before = contexts(root, "first").len();
    apply(&configmap("one", "100"));
    wait_for("the second module sees the change", &log, || {
        has_event(root, "second", "one", "100")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        contexts(root, "first").len(),
        before,
        "a disabled module's hook runs no more"
    );
}

#[test]
fn modules_with_the_same_filter_on_a_shared_watch_get_the_same_results_for_listing_and_events() {
    if !(require_tool("jq") && require_tool("kubectl")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // the later modules join the first one's watch and take its filter results (same filter)
    let same = r#".metadata.name + "=" + .data.value"#;
    modules(
        root,
        &[
            (10, "first", same),
            (20, "same", same),
            (30, "other", ".data.value"),
        ],
    );
    let cluster = Cluster::start(root);
    for (name, n) in [("one", "1"), ("two", "2"), ("three", "3")] {
        apply(&cluster, &configmap(name, n));
    }
    let _operator = start_ready(root, &cluster);
    let log = root.join("operator.log");
    let sync = |name: &str| first_sync(root, name);
    let expected: Vec<(String, String, Value)> = [("one", "1"), ("three", "3"), ("two", "2")]
        .iter()
        .map(|(name, n)| {
            (
                name.to_string(),
                n.to_string(),
                Value::from(format!("{name}={n}")),
            )
        })
        .collect();
    assert_eq!(sync("first"), expected);
    assert_eq!(sync("same"), expected);
    assert_eq!(sync("other")[0].2, Value::from("1"));

    apply(&cluster, &configmap("two", "20"));
    wait_for("every module sees the change", &log, || {
        ["first", "same", "other"]
            .iter()
            .all(|m| has_event(root, m, "two", "20"))
    });
    let last_event = |name: &str| {
        contexts(root, name)
            .into_iter()
            .rfind(|c| c["type"] == "Event")
            .map(|c| c["filterResult"].clone())
    };
    assert_eq!(last_event("first"), Some(Value::from("two=20")));
    assert_eq!(last_event("same"), Some(Value::from("two=20")));
    assert_eq!(last_event("other"), Some(Value::from("20")));
}
