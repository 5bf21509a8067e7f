//! The config ConfigMap shared by a person and the operator on a real API server: `kubectl
//! patch` edits one module's key while a global hook patches `global.counter` on every change of
//! a ticking object. No user edit is ever reverted (a watch of the ConfigMap sees the user's
//! values only grow) and no hook increment is lost (the counter equals the hook's runs).

use std::io::Read;
use std::process::{Command, Stdio};

use addon_operator_testkit::real_cluster::ExtraRules;
use addon_operator_testkit::tools::path_with_tools;

use crate::support::{
    cluster, config_map, configmaps_rule, hook_log, start_operator, wait_until, write,
};

const NS: &str = "config-edits";
const EDITS: u32 = 30;

const COUNTER: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"ticker","kind":"ConfigMap","nameSelector":{"matchNames":["ticker"]},"namespace":{"nameSelector":{"matchNames":["config-edits"]}},"jqFilter":".data"}]}'
  exit 0
fi
next=$(( $(jq -r '.global.counter // 0' "$CONFIG_VALUES_PATH") + 1 ))
echo "[{\"op\":\"add\",\"path\":\"/global/counter\",\"value\":$next}]" > "$CONFIG_VALUES_JSON_PATCH_PATH"
echo "$next" >> "$HOOK_LOG"
"#;

const SCHEMA: &str = "type: object\nproperties:\n  counter: {type: integer}\n";
const NOTES_SCHEMA: &str = "type: object\nproperties:\n  edit: {type: integer}\n";

fn data_key(cluster: &addon_operator_testkit::real_cluster::RealCluster, key: &str) -> String {
    let path = format!("jsonpath={{.data.{key}}}");
    cluster.kubectl_ok(
        &["-n", NS, "get", "configmap", "addon-operator", "-o", &path],
        None,
    )
}

#[test]
fn kubectl_edits_beside_hook_config_patches_lose_nothing() {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    write(&tree.join("global-hooks/counter"), COUNTER, true);
    write(
        &tree.join("global-hooks/openapi/config-values.yaml"),
        SCHEMA,
        false,
    );
    write(
        &tree.join("modules/values.yaml"),
        "notesEnabled: true\n",
        false,
    );
    let notes_schema = tree.join("modules/010-notes/openapi/config-values.yaml");
    write(&notes_schema, NOTES_SCHEMA, false);
    let rules = ExtraRules {
        bindings: vec![configmaps_rule()],
        modules: vec![],
    };
    let identity = cluster.operator_identity(NS, &rules);
    let config = config_map(
        NS,
        "addon-operator",
        "global: |\n  counter: 0\nnotes: |\n  edit: 0\n",
    );
    let apply = |text: &str| cluster.kubectl_ok(&["apply", "-f", "-"], Some(text));
    apply(&config);
    apply(&config_map(NS, "ticker", "n: \"0\"\n"));
    let op = start_operator(
        work.path(),
        "op",
        &tree,
        &identity.kubeconfig,
        &identity,
        &[],
    );
    wait_until("the hook's Synchronization run", 90, &[&op], || {
        !hook_log(work.path()).is_empty()
    });

    // every version of the ConfigMap's `notes` key, as a watch sees it
    let mut watch = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&cluster.admin_kubeconfig)
        .args(["-n", NS, "get", "configmap", "addon-operator", "--watch"])
        .args(["-o", "jsonpath={.data.notes}{\"|\\n\"}"])
        .env("PATH", path_with_tools())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for i in 1..=EDITS {
        let tick = format!(r#"{{"data":{{"n":"{i}"}}}}"#);
        let edit = format!(r#"{{"data":{{"notes":"edit: {i}\n"}}}}"#);
        let patch = |name: &str, body: &str| {
            cluster.kubectl_ok(
                &[
                    "-n",
                    NS,
                    "patch",
                    "configmap",
                    name,
                    "--type=merge",
                    "-p",
                    body,
                ],
                None,
            )
        };
        patch("ticker", &tick);
        patch("addon-operator", &edit);
    }
    let runs = || hook_log(work.path()).len();
    let counter = || {
        data_key(cluster, "global")
            .trim()
            .trim_start_matches("counter:")
            .trim()
            .parse::<usize>()
            .ok()
    };
    wait_until("the counter to match the hook's runs", 60, &[&op], || {
        let before = runs();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        before == runs() && counter() == Some(runs())
    });
    assert_eq!(data_key(cluster, "notes").trim(), format!("edit: {EDITS}"));
    let _ = watch.kill();
    let _ = watch.wait();
    let mut seen = String::new();
    watch
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut seen)
        .unwrap();
    let values: Vec<u32> = seen
        .split('|')
        .filter_map(|v| v.trim().strip_prefix("edit: ")?.parse().ok())
        .collect();
    assert!(values.len() > 1, "the watch saw the edits: {seen:?}");
    assert!(
        values.windows(2).all(|w| w[0] <= w[1]),
        "a user edit was reverted: {values:?}"
    );
    drop(op);
}
