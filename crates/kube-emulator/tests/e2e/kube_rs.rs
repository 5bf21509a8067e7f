//! kube-rs 5 against the emulator: typed and dynamic CRUD, discovery, watcher, resumes and relists.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::discovery::{Discovery, Scope};
use kube::runtime::watcher;
use kube_emulator::EmulatorConfig;
use serde_json::json;

use crate::common::{start, start_with};

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels.iter().cloned().collect::<BTreeMap<_, _>>()},
        "data": {"k": "v"}
    }))
    .unwrap()
}

#[tokio::test]
async fn typed_crud_round_trips_with_conflicts_on_stale_versions() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let created = cms
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    assert!(created.metadata.creation_timestamp.is_some());
    let err = cms
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );

    let mut fresh = cms.get("a").await.unwrap();
    fresh.data = Some([("k".to_string(), "v2".to_string())].into());
    let replaced = cms
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_eq!(replaced.metadata.uid.as_deref(), Some(uid.as_str()));
    let err = cms
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );

    let patch = json!({"data": {"extra": "1"}});
    let patched = cms
        .patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["extra"], "1");
    assert_eq!(
        cms.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let err = cms.get("a").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"),
        "{err:?}"
    );
}

#[tokio::test]
async fn server_side_apply_creates_then_merges_and_bumps_generation_on_spec_changes() {
    let env = start().await;
    let deploys: Api<Deployment> = Api::namespaced(env.client().await, "default");
    let mut body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}
    });
    let pp = PatchParams::apply("test-manager").force();
    let first = deploys.patch("d", &pp, &Patch::Apply(&body)).await.unwrap();
    assert_eq!(first.metadata.generation, Some(1));
    body["spec"]["template"]["spec"]["containers"][0]["image"] = json!("i:2");
    let second = deploys.patch("d", &pp, &Patch::Apply(&body)).await.unwrap();
    assert_eq!(second.metadata.generation, Some(2));
    let labels = json!({"metadata": {"labels": {"x": "y"}}});
    let third = deploys
        .patch("d", &PatchParams::default(), &Patch::Merge(&labels))
        .await
        .unwrap();
    assert_eq!(third.metadata.generation, Some(2));
    assert_eq!(third.status.unwrap().ready_replicas, Some(1));
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
async fn dynamic_crud_works_on_kinds_a_crd_registers_and_deleting_it_removes_them() {
    let env = start().await;
    let client = env.client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_str(CRD).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();

    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| ar.kind == "Widget")
        .expect("Widget discovered");
    assert_eq!(caps.scope, Scope::Namespaced);
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}
    }))
    .unwrap();
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    let got = widgets.get("w1").await.unwrap();
    assert_eq!(got.data["spec"]["size"], 3);
    let patch = json!({"spec": {"size": 4}});
    widgets
        .patch("w1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(widgets.get("w1").await.unwrap().data["spec"]["size"], 4);
    assert_eq!(
        widgets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    crds.delete("widgets.example.io", &DeleteParams::default())
        .await
        .unwrap();
    assert!(env.emu.objects("example.io", "widgets").is_empty());
    let err = widgets.get("w1").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "{err:?}"
    );
}

/// Collects watcher events (Apply/Delete names) until `want` of them arrived.
async fn expect_events<S>(stream: &mut S, want: &[&str])
where
    S: futures::Stream<Item = Result<watcher::Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let mut seen = Vec::new();
    while seen.len() < want.len() {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap_or_else(|_| panic!("timed out; saw {seen:?}, wanted {want:?}"))
            .expect("stream open");
        let Ok(event) = event else {
            // Connection refused while the emulator restarts: the watcher retries on next poll.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        match event {
            watcher::Event::Apply(cm) | watcher::Event::InitApply(cm) => {
                seen.push(format!("apply {}", cm.metadata.name.unwrap()))
            }
            watcher::Event::Delete(cm) => {
                seen.push(format!("delete {}", cm.metadata.name.unwrap()))
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }
    assert_eq!(seen, want);
}

#[tokio::test]
async fn watcher_with_a_label_selector_sees_create_update_and_delete() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    cms.create(&PostParams::default(), &config_map("old", &[("app", "x")]))
        .await
        .unwrap();
    let mut stream = watcher(cms.clone(), watcher::Config::default().labels("app=x")).boxed();
    expect_events(&mut stream, &["apply old"]).await;

    cms.create(
        &PostParams::default(),
        &config_map("other", &[("app", "y")]),
    )
    .await
    .unwrap();
    cms.create(&PostParams::default(), &config_map("new", &[("app", "x")]))
        .await
        .unwrap();
    let patch = json!({"data": {"k": "changed"}});
    cms.patch("new", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let relabel = json!({"metadata": {"labels": {"app": "y"}}});
    cms.patch("old", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    cms.delete("new", &DeleteParams::default()).await.unwrap();
    expect_events(
        &mut stream,
        &["apply new", "apply new", "delete old", "delete new"],
    )
    .await;
}

#[tokio::test]
async fn watcher_with_streaming_lists_gets_initial_events_then_changes() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    cms.create(&PostParams::default(), &config_map("one", &[]))
        .await
        .unwrap();
    let mut stream = watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
    expect_events(&mut stream, &["apply one"]).await;
    cms.create(&PostParams::default(), &config_map("two", &[]))
        .await
        .unwrap();
    expect_events(&mut stream, &["apply two"]).await;
}

#[tokio::test]
async fn a_watch_resumes_from_its_resource_version_after_a_restart_on_the_same_data() {
    let data = tempfile::tempdir().unwrap();
    let config = EmulatorConfig {
        data_dir: Some(data.path().to_path_buf()),
        ..EmulatorConfig::default()
    };
    let mut env = start_with(config).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let before = cms
        .create(&PostParams::default(), &config_map("before", &[]))
        .await
        .unwrap();
    let rv = before.metadata.resource_version.unwrap();

    env.emu.restart().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    assert_eq!(
        cms.get("before")
            .await
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some(rv.as_str())
    );
    let mut events = cms
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &config_map("after", &[]))
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("after")),
        other => panic!("expected ADDED after, got {other:?}"),
    }

    let mut stream = watcher(cms.clone(), watcher::Config::default()).boxed();
    expect_events(&mut stream, &["apply after", "apply before"]).await;
    env.emu.restart().await.unwrap();
    cms.create(&PostParams::default(), &config_map("later", &[]))
        .await
        .unwrap();
    expect_events(&mut stream, &["apply later"]).await;
}

#[tokio::test]
async fn a_served_watch_counts_as_open_until_the_client_drops_it() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    assert_eq!(env.emu.open_watches("", "configmaps"), 0);
    let mut stream = watcher(cms.clone(), watcher::Config::default()).boxed();
    for name in ["listed", "watched"] {
        cms.create(&PostParams::default(), &config_map(name, &[]))
            .await
            .unwrap();
        // the first arrives in the list, the second only through the watch that followed it
        expect_events(&mut stream, &[&format!("apply {name}")]).await;
    }
    assert_eq!(env.emu.open_watches("", "configmaps"), 1);
    assert_eq!(env.emu.open_watches("", "pods"), 0);
    drop(stream);
    let closed = async {
        while env.emu.open_watches("", "configmaps") > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), closed)
        .await
        .expect("the dropped watch is no longer counted");
}

#[tokio::test]
async fn watcher_relists_after_410_gone_when_its_version_is_expired() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    cms.create(&PostParams::default(), &config_map("first", &[]))
        .await
        .unwrap();
    let mut stream = watcher(cms.clone(), watcher::Config::default()).boxed();
    expect_events(&mut stream, &["apply first"]).await;

    let old_rv = env.emu.resource_version().to_string();
    env.emu.expire_history();
    env.emu.drop_watches();
    cms.create(&PostParams::default(), &config_map("second", &[]))
        .await
        .unwrap();
    expect_events(&mut stream, &["apply first", "apply second"]).await;

    let mut raw = cms
        .watch(&WatchParams::default().timeout(5), &old_rv)
        .await
        .unwrap()
        .boxed();
    match raw.try_next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn watches_get_periodic_bookmarks_and_end_after_timeout_seconds() {
    let config = EmulatorConfig {
        bookmark_interval: Duration::from_millis(200),
        ..EmulatorConfig::default()
    };
    let env = start_with(config).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let started = std::time::Instant::now();
    let events: Vec<WatchEvent<ConfigMap>> = cms
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, WatchEvent::Bookmark(_))),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_produce_an_ordered_gapless_event_stream() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let start_rv = env.emu.resource_version();
    let mut events = cms
        .watch(&WatchParams::default().timeout(30), &start_rv.to_string())
        .await
        .unwrap()
        .boxed();
    let writers = (0..4).map(|w| {
        let cms = cms.clone();
        tokio::spawn(async move {
            for i in 0..25 {
                cms.create(
                    &PostParams::default(),
                    &config_map(&format!("w{w}-{i}"), &[]),
                )
                .await
                .unwrap();
            }
        })
    });
    for writer in futures::future::join_all(writers).await {
        writer.unwrap();
    }
    let mut versions = Vec::new();
    while versions.len() < 100 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .unwrap()
            .unwrap();
        match event {
            Some(WatchEvent::Added(cm)) => versions.push(
                cm.metadata
                    .resource_version
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            ),
            Some(WatchEvent::Bookmark(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        versions,
        (start_rv + 1..=start_rv + 100).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn watchers_recover_from_a_fresh_in_memory_emulator_whose_versions_are_behind_theirs() {
    let mut env = start().await;
    let port = env.emu.port();
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    for name in ["a", "b", "c"] {
        cms.create(&PostParams::default(), &config_map(name, &[]))
            .await
            .unwrap();
    }
    let mut stream = watcher(cms.clone(), watcher::Config::default()).boxed();
    expect_events(&mut stream, &["apply a", "apply b", "apply c"]).await;

    env.emu.stop().await;
    let config = EmulatorConfig {
        port,
        ..EmulatorConfig::default()
    };
    let fresh = kube_emulator::Emulator::start(config).await.unwrap();
    let cms_fresh: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    cms_fresh
        .create(&PostParams::default(), &config_map("z", &[]))
        .await
        .unwrap();
    expect_events(&mut stream, &["apply z"]).await;
    let future = (fresh.resource_version() + 100).to_string();
    let mut raw = cms_fresh
        .watch(&WatchParams::default().timeout(5), &future)
        .await
        .unwrap()
        .boxed();
    match raw.try_next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    drop(fresh);
}

#[tokio::test]
async fn metadata_only_reads_and_watches_get_partial_object_metadata() {
    let env = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    cms.create(&PostParams::default(), &config_map("m1", &[("app", "m")]))
        .await
        .unwrap();
    let listed = cms
        .list_metadata(&ListParams::default().labels("app=m"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(
        listed.items[0].types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let one = cms.get_metadata("m1").await.unwrap();
    assert_eq!(one.metadata.labels.unwrap()["app"], "m");

    let metas: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::namespaced(env.client().await, "default");
    let mut stream = watcher(metas, watcher::Config::default()).boxed();
    cms.create(&PostParams::default(), &config_map("m2", &[]))
        .await
        .unwrap();
    let mut names = Vec::new();
    while names.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .unwrap()
            .unwrap();
        if let Some(watcher::Event::InitApply(m) | watcher::Event::Apply(m)) = event {
            names.push(m.metadata.name.unwrap());
        }
    }
    names.sort();
    assert_eq!(names, ["m1", "m2"]);
}
