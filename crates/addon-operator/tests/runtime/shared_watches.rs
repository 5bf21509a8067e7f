//! Several modules watching the same objects (the shape of a large tree): what their events
//! leave queued.

use addon_core::hook_config::WatchEvent;
use addon_operator_testkit::scenario::{start, tree};
use addon_operator_testkit::{FakeHelm, FakeHooks};
use serde_json::json;

const MODULES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const CHANGES: usize = 40;

fn watching_tree() -> tempfile::TempDir {
    let hook = "configVersion: v1\nkubernetes:\n- name: cms\n  kind: ConfigMap\n  executeHookOnSynchronization: false\n";
    let values: String = MODULES
        .iter()
        .map(|m| format!("{m}Enabled: true\n"))
        .collect();
    let mut files = vec![("modules/values.yaml".to_string(), values)];
    for (i, m) in MODULES.iter().enumerate() {
        files.push((format!("modules/0{i}0-{m}/hooks/watch"), hook.to_string()));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    tree(&files)
}

/// Each change of a watched object gives one event to each of the six modules, interleaved.
/// Today's main queued one task per event (each holding its own copy of the object), which no
/// neighbour could combine with: 240 hook runs, and under load a queue that grows with every
/// change. Grouped by binding, each module's events queue next to each other and run combined.
#[tokio::test(start_paused = true)]
async fn interleaved_events_of_modules_watching_the_same_objects_run_combined_per_module() {
    let op = start(watching_tree(), "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    let before = op.hooks.calls().len();
    for i in 0..CHANGES {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{}", i % 10), "namespace": "ns",
                         "resourceVersion": (100 + i).to_string()},
            "data": {"n": i.to_string()}});
        op.kube.emit(WatchEvent::Modified, object);
    }
    op.settle().await;
    let runs = &op.hooks.calls()[before..];
    let mut events_seen = 0;
    for m in MODULES {
        let name = format!("{m}/hooks/watch");
        let contexts: Vec<serde_json::Value> = runs
            .iter()
            .filter(|c| c.name == name)
            .flat_map(|c| c.binding_context.as_array().cloned().unwrap_or_default())
            .collect();
        let order: Vec<&str> = contexts
            .iter()
            .map(|c| c["object"]["data"]["n"].as_str().unwrap_or_default())
            .collect();
        let expected: Vec<String> = (0..CHANGES).map(|i| i.to_string()).collect();
        assert_eq!(order, expected, "{name} sees every change, in order");
        events_seen += contexts.len();
    }
    assert_eq!(events_seen, MODULES.len() * CHANGES);
    assert!(
        runs.len() <= 2 * MODULES.len(),
        "{} hook runs for {} events: events of one module were not combined",
        runs.len(),
        events_seen
    );
}

/// The debug API's hook snapshot: one hook's bindings, an object at a time from the cache, the
/// same objects as the module's snapshots document holds for that hook.
#[tokio::test(start_paused = true)]
async fn a_hook_snapshot_lists_the_objects_of_that_hook_only() {
    use addon_operator::edges::http::StatusSource;
    let op = start(watching_tree(), "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    for i in 0..3 {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}"), "namespace": "ns", "resourceVersion": "1"}});
        op.kube.emit(WatchEvent::Added, object);
    }
    op.settle().await;
    let items = op
        .handle
        .hook_snapshot_items(Some("b"), "hooks/watch")
        .unwrap();
    assert_eq!(items.len(), 1, "one binding");
    let (binding, objects) = &items[0];
    assert_eq!(binding, "cms");
    let names: Vec<&str> = objects.iter().map(|o| &*o.id.name).collect();
    assert_eq!(names, ["cm-0", "cm-1", "cm-2"]);
    let whole = op.handle.module_snapshots("b").unwrap();
    let listed: Vec<serde_json::Value> = objects.iter().map(|o| o.to_json()).collect();
    assert_eq!(
        whole["hooks/watch"]["cms"],
        serde_json::Value::Array(listed)
    );
    assert!(
        op.handle
            .hook_snapshot_items(Some("nope"), "hooks/watch")
            .is_none()
    );
    assert!(
        op.handle
            .hook_snapshot_items(None, "hooks/watch")
            .unwrap()
            .is_empty(),
        "no global hook of that name"
    );
}
