//! `--reload-tree` applied in place: what a reloaded tree runs, and what the unchanged hooks
//! and modules keep (no second onStartup, their watches and snapshots).

use addon_core::hook_config::WatchEvent;
use addon_operator_testkit::FakeHelm;
use addon_operator_testkit::scenario::{start, tree};
use serde_json::json;

const PODS: &str = "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  executeHookOnEvent: []\n- name: nodes\n  kind: Node\n  executeHookOnSynchronization: false\n  includeSnapshotsFrom: [pods]\n";

fn web_and_db() -> tempfile::TempDir {
    tree(&[
        (
            "global-hooks/hooks/before-all",
            "configVersion: v1\nbeforeAll: 1\n",
        ),
        (
            "modules/values.yaml",
            "webEnabled: true\ndbEnabled: true\nextraEnabled: true\n",
        ),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/hooks/startup",
            "configVersion: v1\nonStartup: 1\n",
        ),
        ("modules/010-web/hooks/pods", PODS),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
        ("modules/020-db/Chart.yaml", "name: db\nversion: 0.1.0\n"),
        (
            "modules/020-db/hooks/startup",
            "configVersion: v1\nonStartup: 1\n",
        ),
        (
            "modules/020-db/hooks/deleted",
            "configVersion: v1\nafterDeleteHelm: 1\n",
        ),
    ])
}

fn pod(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}})
}

fn write(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn count(runs: &[String], line: &str) -> usize {
    runs.iter().filter(|r| r.as_str() == line).count()
}

#[tokio::test(start_paused = true)]
async fn an_added_module_starts_and_the_unchanged_ones_keep_their_onstartup_and_snapshots() {
    let op = start(web_and_db(), "", Default::default(), FakeHelm::new()).await;
    op.kube.set_objects("Pod", vec![pod("a"), pod("b")]);
    op.settle().await;
    // a listing made now would be empty: a restarted watch would lose the two pods
    op.kube.set_objects("Pod", Vec::new());
    let runs = op
        .reload(|root| {
            write(
                &root.join("modules/030-extra/hooks/startup"),
                "configVersion: v1\nonStartup: 1\n",
            );
            std::fs::write(
                root.join("modules/030-extra/Chart.yaml"),
                "name: extra\nversion: 0.1.0\n",
            )
            .unwrap();
        })
        .await
        .unwrap();
    assert_eq!(
        runs,
        [
            "run hooks/before-all beforeAll",
            "run web/hooks/before beforeHelm",
            "run extra/hooks/startup onStartup",
            "helm upgrade extra",
        ]
    );
    let all = op.runs();
    assert_eq!(count(&all, "run web/hooks/startup onStartup"), 1);
    assert_eq!(count(&all, "run db/hooks/startup onStartup"), 1);
    assert_eq!(count(&all, "run web/hooks/pods kubernetes"), 1);
    // the pods snapshot is the one listed at startup
    op.kube.emit(
        WatchEvent::Added,
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
    );
    op.settle().await;
    let call = op.hooks.calls().pop().unwrap();
    assert_eq!(call.name, "web/hooks/pods");
    let snapshot = &call.binding_context[0]["snapshots"]["pods"];
    assert_eq!(snapshot.as_array().map(Vec::len), Some(2), "{call:?}");
}

#[tokio::test(start_paused = true)]
async fn a_rebound_hook_synchronizes_again_and_its_module_runs_without_onstartup() {
    let op = start(web_and_db(), "", Default::default(), FakeHelm::new()).await;
    op.kube.set_objects("Pod", vec![pod("a")]);
    op.settle().await;
    let runs = op
        .reload(|root| {
            let pods = PODS.replace("executeHookOnEvent: []", "executeHookOnEvent: [Added]");
            write(&root.join("modules/010-web/hooks/pods"), &pods);
        })
        .await
        .unwrap();
    // the hook is a file of the chart too: Helm sees the change
    assert_eq!(
        runs,
        [
            "run web/hooks/pods kubernetes",
            "run web/hooks/before beforeHelm",
            "helm upgrade web"
        ]
    );
    assert_eq!(count(&op.runs(), "run web/hooks/startup onStartup"), 1);
    // the new binding runs on events
    op.kube.emit(WatchEvent::Added, pod("c"));
    op.settle().await;
    assert_eq!(op.hooks.calls().pop().unwrap().name, "web/hooks/pods");
}

#[tokio::test(start_paused = true)]
async fn a_hook_added_to_a_started_module_runs_its_onstartup_once() {
    let op = start(web_and_db(), "", Default::default(), FakeHelm::new()).await;
    op.settle().await;
    let runs = op
        .reload(|root| {
            write(
                &root.join("modules/020-db/hooks/new"),
                "configVersion: v1\nonStartup: 5\nbeforeHelm: 5\n",
            );
        })
        .await
        .unwrap();
    assert_eq!(
        runs,
        [
            "run db/hooks/new onStartup",
            "run db/hooks/new beforeHelm",
            "helm upgrade db",
        ]
    );
    let again = op
        .reload(|root| {
            let path = root.join("modules/020-db/templates/cm.yaml");
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "kind: ConfigMap\n").unwrap();
        })
        .await
        .unwrap();
    assert_eq!(again, ["run db/hooks/new beforeHelm", "helm upgrade db"]);
}

#[tokio::test(start_paused = true)]
async fn a_removed_module_is_uninstalled_and_runs_its_after_delete_hooks_from_the_kept_copy() {
    let op = start(web_and_db(), "", Default::default(), FakeHelm::new()).await;
    op.settle().await;
    let runs = op
        .reload(|root| std::fs::remove_dir_all(root.join("modules/020-db")).unwrap())
        .await
        .unwrap();
    assert_eq!(
        runs,
        [
            "run hooks/before-all beforeAll",
            "helm uninstall db",
            "run db/hooks/deleted afterDeleteHelm",
            "run web/hooks/before beforeHelm",
        ]
    );
    let deleted = (op.hooks.calls().into_iter())
        .find(|c| c.name == "db/hooks/deleted")
        .unwrap();
    assert!(
        deleted.path.starts_with(op.root().join("kept")),
        "{deleted:?}"
    );
    let enabled: Vec<String> = (op.handle.enabled_modules().iter())
        .map(ToString::to_string)
        .collect();
    assert_eq!(enabled, ["web"]);
    assert!(op.handle.removed_modules().is_empty());
    assert!(!op.helm.release_names().contains(&"db".to_string()));
}

#[tokio::test(start_paused = true)]
async fn a_tree_whose_schema_rejects_the_running_config_changes_nothing() {
    let op = start(
        web_and_db(),
        "db: {size: 1}\n",
        Default::default(),
        FakeHelm::new(),
    )
    .await;
    op.settle().await;
    let problems = op
        .reload(|root| {
            std::fs::create_dir_all(root.join("modules/020-db/openapi")).unwrap();
            std::fs::write(
                root.join("modules/020-db/openapi/config-values.yaml"),
                "type: object\nproperties:\n  size: {type: string}\n",
            )
            .unwrap();
        })
        .await
        .unwrap_err();
    assert!(problems.join("\n").contains("size"), "{problems:?}");
    // the running schemas go on: an integer is still accepted
    assert_eq!(op.edit_config("db: {size: 2}\n").await, ["helm upgrade db"]);
}

#[tokio::test(start_paused = true)]
async fn a_new_global_hook_runs_its_onstartup_then_all_modules_reload() {
    let op = start(web_and_db(), "", Default::default(), FakeHelm::new()).await;
    op.kube.set_objects(
        "Node",
        vec![json!({"kind": "Node", "metadata": {"name": "n1"}})],
    );
    op.settle().await;
    let runs = op
        .reload(|root| {
            write(
                &root.join("global-hooks/hooks/nodes"),
                "configVersion: v1\nonStartup: 1\nkubernetes:\n- name: nodes\n  kind: Node\n",
            );
        })
        .await
        .unwrap();
    assert_eq!(
        runs,
        [
            "run hooks/nodes onStartup",
            "run hooks/nodes kubernetes",
            "run hooks/before-all beforeAll",
            "run web/hooks/before beforeHelm",
        ]
    );
    let sync = (op.hooks.calls().into_iter())
        .find(|c| c.name == "hooks/nodes" && c.binding_context[0]["type"] == "Synchronization")
        .unwrap();
    assert_eq!(
        sync.binding_context[0]["objects"].as_array().map(Vec::len),
        Some(1)
    );
    // removed again: its watch stops
    assert!(
        op.kube
            .monitors()
            .iter()
            .any(|k| k.hook.as_str() == "hooks/nodes")
    );
    let runs = op
        .reload(|root| std::fs::remove_file(root.join("global-hooks/hooks/nodes")).unwrap())
        .await
        .unwrap();
    assert!(
        !op.kube
            .monitors()
            .iter()
            .any(|k| k.hook.as_str() == "hooks/nodes")
    );
    assert_eq!(runs[0], "run hooks/before-all beforeAll");
}

#[tokio::test(start_paused = true)]
async fn queued_runs_of_a_removed_hook_are_dropped() {
    let hooks = addon_operator_testkit::FakeHooks::new();
    // web's beforeHelm holds main while pod events queue runs of web's pods hook
    hooks.take_time(|call| {
        if call.name == "web/hooks/before" {
            std::time::Duration::from_secs(10)
        } else {
            std::time::Duration::ZERO
        }
    });
    let op = start(web_and_db(), "", hooks, FakeHelm::new()).await;
    op.settle().await;
    let pods = PODS.replace("executeHookOnEvent: []", "executeHookOnEvent: [Added]");
    op.reload(|root| write(&root.join("modules/010-web/hooks/pods"), &pods))
        .await
        .unwrap();
    // a run of web holds main; an event queues the pods hook behind it
    let config = addon_core::config::Config::from_file("config.yaml", "web: {a: 1}\n");
    op.config.edit(Ok(config.unwrap()));
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    op.kube.emit(WatchEvent::Added, pod("x"));
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(
        op.handle.queues_text().contains("web:hooks/pods"),
        "{}",
        op.handle.queues_text()
    );
    let runs = op
        .reload(|root| std::fs::remove_file(root.join("modules/010-web/hooks/pods")).unwrap())
        .await
        .unwrap();
    assert!(!runs.iter().any(|r| r.contains("hooks/pods")), "{runs:?}");
}
