//! Bindings selecting the same objects share one watch: one API list and watch, one kept copy of
//! each object, every event reported to each of them; stops, dropped watches and relists.

use std::time::Duration;

use addon_operator::edges::kube::KubeWatches;
use addon_operator::runtime::edges::{KubeEvent, KubeEvents, Listed, MonitorKey};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use tokio::sync::mpsc;

use crate::common::{Env, bindings, key, names, no_events, pod, start};

async fn watches(env: &Env) -> (KubeWatches, mpsc::Receiver<KubeEvent>) {
    let (tx, rx) = addon_operator::runtime::edges::kube_event_channel();
    (env.edge().await.watches(tx), rx)
}

async fn touch(env: &Env, name: &str, value: &str) {
    let api = env.api_of(&pod("default", name, "")).await;
    let patch = json!({"metadata": {"annotations": {"touched": value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// The next `n` events as (binding index, event, name, the event itself).
async fn next(rx: &mut mpsc::Receiver<KubeEvent>, n: usize) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    while out.len() < n {
        let ev = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {n} events; got {out:?}"))
            .unwrap();
        let name = ev.object["metadata"]["name"].as_str().unwrap_or_default();
        out.push((
            ev.key.binding,
            ev.event.as_str().to_string(),
            name.to_string(),
        ));
    }
    out.sort();
    out
}

fn ev(binding: usize, event: &str, name: &str) -> (usize, String, String) {
    (binding, event.to_string(), name.to_string())
}

/// Two bindings of the same objects, their jqFilters differing (the filter is the runtime's).
const SAME: &str = concat!(
    "- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n  jqFilter: .metadata.name\n",
    "- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n  jqFilter: .spec\n",
);

/// Starts `key` with the paged start the runtime uses; the listed objects.
async fn start_paged(
    watches: &KubeWatches,
    key: &MonitorKey,
    binding: &addon_core::hook_config::KubernetesBinding,
) -> Vec<Listed> {
    let (tx, mut rx) = mpsc::channel(1);
    let listing = watches.start_paged(key, binding, tx);
    let collect = async {
        let mut all = Vec::new();
        while let Some(page) = rx.recv().await {
            all.extend(page);
        }
        all
    };
    let (started, listed) = tokio::join!(listing, collect);
    started.unwrap();
    listed
}

#[tokio::test]
async fn bindings_selecting_the_same_objects_share_one_list_one_watch_and_one_copy_of_each_object()
{
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    env.create(pod("default", "b", "db")).await;
    let (watches, mut rx) = watches(&env).await;
    let bs = bindings(SAME);

    let lists = env.emu.list_starts().0 + env.emu.streaming_lists();
    let first = start_paged(&watches, &key(0), &bs[0]).await;
    let second = start_paged(&watches, &key(1), &bs[1]).await;
    let after = env.emu.list_starts().0 + env.emu.streaming_lists();
    assert_eq!(
        after - lists,
        1,
        "the second binding is listed from the watch"
    );
    env.watching("pods", 1).await;
    assert_eq!((watches.running(), watches.watches()), (2, 1));

    let objects = |l: &[Listed]| names(&l.iter().map(|l| l.object.clone()).collect::<Vec<_>>());
    assert_eq!(objects(&first), ["default/a"]);
    assert_eq!(objects(&second), ["default/a"]);
    let (Some(one), Some(two)) = (&first[0].kept, &second[0].kept) else {
        panic!("a watch of full objects hands over their text");
    };
    assert!(one.is_same_copy(two), "one copy of the object for both");
    assert_eq!(one.to_value(), first[0].object);

    touch(&env, "a", "1").await;
    let mut events = Vec::new();
    for _ in 0..2 {
        events.push(rx.recv().await.unwrap());
    }
    let keys: Vec<usize> = events.iter().map(|e| e.key.binding).collect();
    assert_eq!(keys, [0, 1], "each sharer gets the event");
    assert_eq!(events[0].object, events[1].object);
    assert_eq!(events[0].object["metadata"]["annotations"]["touched"], "1");
    let (Some(one), Some(two)) = (&events[0].kept, &events[1].kept) else {
        panic!("the event carries the kept text");
    };
    assert!(one.is_same_copy(two));
    assert_eq!(one.to_value(), *events[0].object);
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn stopping_one_sharer_keeps_the_others_events_and_the_last_stop_ends_the_watch() {
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    let (watches, mut rx) = watches(&env).await;
    let bs = bindings(SAME);
    watches.start(&key(0), &bs[0]).await.unwrap();
    watches.start(&key(1), &bs[1]).await.unwrap();
    env.watching("pods", 1).await;

    watches.stop(&key(0));
    touch(&env, "a", "1").await;
    assert_eq!(next(&mut rx, 1).await, [ev(1, "Modified", "a")]);
    no_events(&mut rx, Duration::from_millis(300)).await;
    assert_eq!((watches.running(), watches.watches()), (1, 1));

    // the binding that started the watch comes back: it joins the remaining sharer's watch
    let again = watches.start(&key(0), &bs[0]).await.unwrap();
    assert_eq!(names(&again), ["default/a"]);
    assert_eq!(again[0]["metadata"]["annotations"]["touched"], "1");
    touch(&env, "a", "2").await;
    assert_eq!(
        next(&mut rx, 2).await,
        [ev(0, "Modified", "a"), ev(1, "Modified", "a")]
    );

    watches.stop(&key(1));
    watches.stop(&key(0));
    assert_eq!((watches.running(), watches.watches()), (0, 0));
    env.watching("pods", 0).await;
    touch(&env, "a", "3").await;
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_dropped_or_expired_shared_watch_heals_every_sharer_once() {
    let env = start().await;
    for name in ["a", "b", "c"] {
        env.create(pod("default", name, "web")).await;
    }
    let (watches, mut rx) = watches(&env).await;
    let bs = bindings(SAME);
    watches.start(&key(0), &bs[0]).await.unwrap();
    watches.start(&key(1), &bs[1]).await.unwrap();
    env.watching("pods", 1).await;

    env.emu.drop_watches();
    touch(&env, "a", "1").await;
    assert_eq!(
        next(&mut rx, 2).await,
        [ev(0, "Modified", "a"), ev(1, "Modified", "a")]
    );

    // history expired: the shared watch relists once and reports only the differences
    env.emu.expire_history();
    env.emu.drop_watches();
    touch(&env, "c", "1").await;
    let api = env.api_of(&pod("default", "b", "")).await;
    api.delete("b", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        next(&mut rx, 4).await,
        [
            ev(0, "Deleted", "b"),
            ev(0, "Modified", "c"),
            ev(1, "Deleted", "b"),
            ev(1, "Modified", "c")
        ]
    );
    no_events(&mut rx, Duration::from_millis(500)).await;

    // a binding joining after the relist lists what the watch holds now
    let third = &bindings("- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n")[0];
    let listed = watches.start(&key(2), third).await.unwrap();
    assert_eq!(names(&listed), ["default/a", "default/c"]);
    assert_eq!(listed[1]["metadata"]["annotations"]["touched"], "1");
    assert_eq!(watches.watches(), 1);
}

#[tokio::test]
async fn a_watch_of_lean_bindings_keeps_no_objects_and_is_not_shared() {
    let env = start().await;
    env.create(pod("default", "a", "web")).await;
    let (watches, mut rx) = watches(&env).await;
    let lean = &bindings(
        "- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n  keepFullObjectsInMemory: false\n",
    )[0];
    let full = &bindings("- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n")[0];
    let listed = start_paged(&watches, &key(0), lean).await;
    assert!(listed[0].kept.is_none(), "a lean watch keeps no text");
    start_paged(&watches, &key(1), full).await;
    assert_eq!(
        watches.watches(),
        2,
        "the lean watch has no objects to hand over"
    );
    // a lean binding joins the watch that keeps full objects
    let joined = start_paged(&watches, &key(2), lean).await;
    assert_eq!(joined.len(), 1);
    assert_eq!(watches.watches(), 2);
    env.watching("pods", 2).await;
    touch(&env, "a", "1").await;
    assert_eq!(
        next(&mut rx, 3).await,
        [
            ev(0, "Modified", "a"),
            ev(1, "Modified", "a"),
            ev(2, "Modified", "a")
        ]
    );

    // the last sharer keeping full objects leaves: the watch drops its texts and takes no one new
    watches.stop(&key(1));
    let alone = start_paged(&watches, &key(3), full).await;
    assert_eq!(alone.len(), 1);
    assert_eq!(watches.watches(), 3);
    no_events(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn bindings_differing_in_selectors_or_namespaces_do_not_share() {
    let env = start().await;
    env.namespace("other").await;
    env.create(pod("default", "a", "web")).await;
    let (watches, _rx) = watches(&env).await;
    let bs = bindings(concat!(
        "- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n",
        "- kind: Pod\n  labelSelector: {matchLabels: {app: db}}\n",
        "- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n  namespace: {nameSelector: {matchNames: [default]}}\n",
        "- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n  namespace: {nameSelector: {matchNames: [other]}}\n",
        "- kind: Pod\n  labelSelector: {matchLabels: {app: web}}\n  fieldSelector: {matchExpressions: [{field: metadata.name, operator: Equals, value: a}]}\n",
        "- apiVersion: v1\n  kind: pods\n  labelSelector: {matchLabels: {app: web}}\n",
    ));
    for (i, b) in bs.iter().enumerate() {
        watches.start(&key(i), b).await.unwrap();
    }
    assert_eq!(
        watches.watches(),
        5,
        "the last binding names the same kind in other words and shares the first's watch"
    );
}
