//! `KubeWatches`: initial lists, selectors, namespaces, recovery from dropped watches and restarts, CRD kinds and unknown kinds, bursts of writes.

use std::time::Duration;

use addon_operator::edges::kube::KubeWatches;
use addon_operator::runtime::edges::{KubeEvent, KubeEvents};
use futures::StreamExt as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::mpsc;

use crate::common::{Env, bindings, key, names, next_events, no_events, pod, start};

async fn watches(env: &Env) -> (KubeWatches, mpsc::Receiver<KubeEvent>) {
    let (tx, rx) = addon_operator::runtime::edges::kube_event_channel();
    (env.edge().await.watches(tx), rx)
}

fn ev(event: &str, name: &str) -> (String, String) {
    (event.to_string(), name.to_string())
}

async fn relabel(env: &Env, ns: &str, name: &str, app: &str) {
    let api = env.api_of(&pod(ns, name, app)).await;
    let patch = json!({"metadata": {"labels": {"app": app}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

async fn touch(env: &Env, ns: &str, name: &str, value: &str) {
    let api = env.api_of(&pod(ns, name, "")).await;
    let patch = json!({"metadata": {"annotations": {"touched": value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

async fn delete(env: &Env, ns: &str, name: &str) {
    let api = env.api_of(&pod(ns, name, "")).await;
    api.delete(name, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn a_label_selected_pod_binding_lists_existing_pods_then_reports_changes_of_matching_pods_only()
 {
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    env.create(pod("default", "b", "db")).await;
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n")[0];

    let objects = watches.start(&key(0), binding).await.unwrap();
    assert_eq!(names(&objects), ["default/a"]);
    assert_eq!(objects[0]["kind"], "Pod");
    assert_eq!(objects[0]["apiVersion"], "v1");

    env.create(pod("default", "c", "web")).await;
    env.create(pod("default", "d", "db")).await;
    touch(&env, "default", "a", "1").await;
    touch(&env, "default", "b", "1").await;
    relabel(&env, "default", "c", "db").await;
    assert_eq!(
        next_events(&mut rx, 3).await,
        [
            ev("Added", "default/c"),
            ev("Modified", "default/a"),
            ev("Deleted", "default/c")
        ]
    );
    delete(&env, "default", "a").await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Deleted", "default/a")]);
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_namespace_restricted_binding_sees_only_its_namespaces() {
    let env = start().await;
    for ns in ["one", "two", "three"] {
        env.namespace(ns).await;
        env.create(pod(ns, "old", "x")).await;
    }
    let (watches, mut rx) = watches(&env).await;
    let binding =
        &bindings("- kind: pods\n  namespace: {nameSelector: {matchNames: [one, two]}}\n")[0];

    let objects = watches.start(&key(0), binding).await.unwrap();
    assert_eq!(names(&objects), ["one/old", "two/old"]);

    env.create(pod("three", "new", "x")).await;
    env.create(pod("two", "new", "x")).await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "two/new")]);
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_name_selector_limits_the_binding_to_the_named_objects() {
    let env = start().await;
    for name in ["a", "b", "c"] {
        env.create(pod("default", name, "x")).await;
    }
    let (watches, mut rx) = watches(&env).await;
    let bs = bindings(concat!(
        "- kind: po\n  nameSelector: {matchNames: [b]}\n",
        "- kind: Pod\n  nameSelector: {matchNames: [a, c]}\n",
    ));
    let one = watches.start(&key(0), &bs[0]).await.unwrap();
    let two = watches.start(&key(1), &bs[1]).await.unwrap();
    assert_eq!(names(&one), ["default/b"]);
    assert_eq!(names(&two), ["default/a", "default/c"]);

    touch(&env, "default", "c", "1").await;
    touch(&env, "default", "b", "1").await;
    let mut got: Vec<_> = Vec::new();
    for _ in 0..2 {
        let e = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap()
            .unwrap();
        got.push((
            e.key.binding,
            e.event.as_str(),
            e.object["metadata"]["name"].clone(),
        ));
    }
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        [(0, "Modified", json!("b")), (1, "Modified", json!("c"))]
    );
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn changes_made_while_watches_are_dropped_arrive_once_without_duplicate_added_events() {
    let env = start().await;
    for name in ["a", "b", "c"] {
        env.create(pod("default", name, "x")).await;
    }
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];
    assert_eq!(watches.start(&key(0), binding).await.unwrap().len(), 3);
    // Once the watch is open, cut it and change things while it reconnects.
    env.watching("pods", 1).await;
    env.emu.drop_watches();
    touch(&env, "default", "a", "1").await;
    delete(&env, "default", "b").await;
    env.create(pod("default", "d", "x")).await;
    let mut got = next_events(&mut rx, 3).await;
    got.sort();
    assert_eq!(
        got,
        [
            ev("Added", "default/d"),
            ev("Deleted", "default/b"),
            ev("Modified", "default/a")
        ]
    );

    // Expired history: the watch relists (410 Gone) and reports only the differences.
    env.emu.expire_history();
    env.emu.drop_watches();
    touch(&env, "default", "c", "1").await;
    delete(&env, "default", "a").await;
    let mut got = next_events(&mut rx, 2).await;
    got.sort();
    assert_eq!(
        got,
        [ev("Deleted", "default/a"), ev("Modified", "default/c")]
    );
    no_events(&mut rx, Duration::from_millis(500)).await;
}

#[tokio::test]
async fn after_an_emulator_restart_changes_made_meanwhile_arrive_once() {
    let mut env = start().await;
    for name in ["a", "b"] {
        env.create(pod("default", name, "x")).await;
    }
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];
    assert_eq!(watches.start(&key(0), binding).await.unwrap().len(), 2);
    env.watching("pods", 1).await;

    env.emu.restart().await.unwrap();
    touch(&env, "default", "b", "1").await;
    env.create(pod("default", "c", "x")).await;
    let mut got = next_events(&mut rx, 2).await;
    got.sort();
    assert_eq!(got, [ev("Added", "default/c"), ev("Modified", "default/b")]);
    no_events(&mut rx, Duration::from_millis(500)).await;
}

const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.io"},
  "spec": {"group": "example.io", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
}"#;

#[tokio::test]
async fn a_crd_kind_is_watched_once_its_crd_exists() {
    let env = start().await;
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- apiVersion: example.io/v1\n  kind: Widget\n  name: widgets\n")[0];
    let err = watches.start(&key(0), binding).await.unwrap_err();
    assert!(err.to_string().contains("'widgets'"), "{err}");

    let crds: Api<CustomResourceDefinition> = Api::all(env.client().await);
    crds.create(&PostParams::default(), &serde_json::from_str(CRD).unwrap())
        .await
        .unwrap();
    assert!(watches.start(&key(0), binding).await.unwrap().is_empty());
    env.create(json!({"apiVersion": "example.io/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 1}}))
        .await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "default/w1")]);
}

#[tokio::test]
async fn an_unknown_kind_fails_start_with_an_error_naming_the_kind_and_the_binding() {
    let env = start().await;
    let (watches, _rx) = watches(&env).await;
    let binding = &bindings("- kind: Gadget\n  name: gadgets\n")[0];
    let err = watches.start(&key(0), binding).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("Gadget") && text.contains("'gadgets'") && text.contains("not served"),
        "{text}"
    );
    assert_eq!(watches.running(), 0);
}

#[tokio::test]
async fn start_is_idempotent_per_key_and_stop_ends_the_watch() {
    let env = start().await;
    env.create(pod("default", "a", "x")).await;
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];
    assert_eq!(watches.start(&key(0), binding).await.unwrap().len(), 1);
    assert_eq!(watches.start(&key(0), binding).await.unwrap().len(), 1);
    assert_eq!(watches.running(), 1);

    env.create(pod("default", "b", "x")).await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "default/b")]);
    no_events(&mut rx, Duration::from_millis(300)).await;

    watches.stop(&key(0));
    assert_eq!(watches.running(), 0);
    env.create(pod("default", "c", "x")).await;
    no_events(&mut rx, Duration::from_millis(300)).await;
}

async fn label_namespace(env: &Env, ns: &str, team: &str) {
    let api = env
        .api_of(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        .await;
    let patch = json!({"metadata": {"labels": {"team": team}}});
    api.patch(ns, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_namespace_label_selector_follows_namespaces_gaining_and_losing_the_labels() {
    let env = start().await;
    for (ns, team) in [("red", "a"), ("blue", "a"), ("green", "b")] {
        env.create(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"team": team}}}))
            .await;
        env.create(pod(ns, "p", "x")).await;
    }
    let (watches, mut rx) = watches(&env).await;
    let binding =
        &bindings("- kind: Pod\n  namespace: {labelSelector: {matchLabels: {team: a}}}\n")[0];
    let objects = watches.start(&key(0), binding).await.unwrap();
    assert_eq!(names(&objects), ["blue/p", "red/p"]);

    env.create(pod("green", "q", "x")).await;
    env.create(pod("red", "q", "x")).await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "red/q")]);
    no_events(&mut rx, Duration::from_millis(300)).await;

    label_namespace(&env, "green", "a").await;
    let mut got = next_events(&mut rx, 2).await;
    got.sort();
    assert_eq!(got, [ev("Added", "green/p"), ev("Added", "green/q")]);

    label_namespace(&env, "red", "b").await;
    env.watching("pods", 2).await;
    env.create(pod("red", "r", "x")).await;
    env.create(pod("green", "r", "x")).await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "green/r")]);
    no_events(&mut rx, Duration::from_millis(300)).await;

    watches.stop(&key(0));
    env.create(pod("green", "s", "x")).await;
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_failing_api_server_fails_start_and_a_later_start_succeeds() {
    let env = start().await;
    env.create(pod("default", "a", "x")).await;
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];
    // Discovery and the list both need the server: enough failures to exhaust kube-rs' retries.
    env.emu.fail_next_requests(20, 503);
    assert!(watches.start(&key(0), binding).await.is_err());
    env.emu.fail_next_requests(0, 503);
    assert_eq!(watches.start(&key(0), binding).await.unwrap().len(), 1);

    // Failures while watching only delay events.
    let api = env.api_of(&pod("default", "b", "x")).await;
    env.watching("pods", 1).await;
    env.emu.fail_next_requests(3, 503);
    env.emu.drop_watches();
    let b: kube::api::DynamicObject = serde_json::from_value(pod("default", "b", "x")).unwrap();
    while api.create(&PostParams::default(), &b).await.is_err() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "default/b")]);
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_watch_start_asks_for_one_streaming_list_and_its_watch_goes_on_from_it() {
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    env.create(pod("default", "b", "web")).await;
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];

    let (lists, streamed) = (env.emu.list_starts(), env.emu.streaming_lists());
    let objects = watches.start(&key(0), binding).await.unwrap();
    assert_eq!(names(&objects), ["default/a", "default/b"]);
    env.create(pod("default", "c", "web")).await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "default/c")]);
    assert_eq!(
        (env.emu.list_starts(), env.emu.streaming_lists() - streamed),
        (lists, 1),
        "one streaming list per start, no paged list"
    );
    no_events(&mut rx, Duration::from_millis(200)).await;
}

/// Starts `binding` as key 0 and checks that it made one list request, paged with `limit`.
async fn start_in_pages(
    env: &Env,
    watches: &KubeWatches,
    binding: &addon_core::hook_config::KubernetesBinding,
) -> Vec<serde_json::Value> {
    let before = env.emu.list_starts();
    let objects = watches.start(&key(0), binding).await.unwrap();
    let after = env.emu.list_starts();
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (1, 1),
        "one list per start, paged with `limit`"
    );
    objects
}

#[tokio::test]
async fn a_server_refusing_streaming_lists_is_listed_once_in_pages() {
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    env.create(pod("default", "b", "web")).await;
    env.emu.refuse_streaming_lists(true);
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];

    let objects = start_in_pages(&env, &watches, binding).await;
    assert_eq!(names(&objects), ["default/a", "default/b"]);
    env.create(pod("default", "c", "web")).await;
    assert_eq!(next_events(&mut rx, 1).await, [ev("Added", "default/c")]);
    no_events(&mut rx, Duration::from_millis(200)).await;
}

#[tokio::test]
async fn a_streaming_list_without_an_end_fails_the_start_and_the_retry_lists_in_pages() {
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    env.emu.ignore_streaming_lists(true);
    let (watches, _rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];

    let error = watches.start(&key(0), binding).await.unwrap_err();
    let chain = format!("{:?}", anyhow::Error::new(error));
    assert!(chain.contains("streaming list sent nothing"), "{chain}");
    let objects = start_in_pages(&env, &watches, binding).await;
    assert_eq!(names(&objects), ["default/a"], "the retry lists in pages");
}

#[tokio::test]
async fn a_streaming_list_closed_before_its_end_fails_the_start_at_once() {
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    env.emu.ignore_streaming_lists(true);
    let (watches, _rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];

    let started = std::time::Instant::now();
    let closing = async {
        env.watching("pods", 1).await;
        env.emu.drop_watches();
    };
    let first = key(0);
    let (result, ()) = tokio::join!(watches.start(&first, binding), closing);
    let chain = format!("{:?}", anyhow::Error::new(result.unwrap_err()));
    assert!(chain.contains("began again before its end"), "{chain}");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "not by the 10 s stall rule"
    );
    env.emu.ignore_streaming_lists(false);
    let objects = start_in_pages(&env, &watches, binding).await;
    assert_eq!(names(&objects), ["default/a"], "later starts list in pages");
}

#[tokio::test]
async fn a_burst_of_concurrent_writes_reaches_the_watch_without_a_loss() {
    let env = start().await;
    let objects = 20;
    for i in 0..objects {
        env.create(pod("default", &format!("p{i}"), "x")).await;
    }
    let (watches, mut rx) = watches(&env).await;
    let binding = &bindings("- kind: Pod\n")[0];
    watches.start(&key(0), binding).await.unwrap();

    // 2,000 writes, 32 in flight: every one must come back as its own Modified event.
    let writes = 2000;
    let api = env.api_of(&pod("default", "p0", "x")).await;
    let write = |n: usize| {
        let api = api.clone();
        async move {
            let patch = json!({"metadata": {"annotations": {"n": n.to_string()}}});
            let name = format!("p{}", n % objects);
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    };
    futures::stream::iter(0..writes)
        .for_each_concurrent(32, write)
        .await;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < writes {
        let ev = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("stalled after {} of {writes} writes", seen.len()))
            .unwrap();
        assert_eq!(ev.event.as_str(), "Modified");
        let n = ev.object["metadata"]["annotations"]["n"]
            .as_str()
            .unwrap_or_default();
        assert!(
            seen.insert(n.parse::<usize>().unwrap()),
            "write {n} reported twice"
        );
    }
    assert_eq!(seen, (0..writes).collect());
    no_events(&mut rx, Duration::from_millis(300)).await;
}
