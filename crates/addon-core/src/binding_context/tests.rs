//! Golden tests: binding contexts compared with the JSON the Go operator writes.

use super::*;
use crate::hook_config::{HookScope, parse};
use crate::names::HookName;
use std::borrow::Cow;

fn config(scope: HookScope, yaml: &str) -> HookConfig {
    parse(&HookName::new("hooks/test.sh").unwrap(), scope, yaml).unwrap()
}

fn pod(ns: &str, name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels}})
}

fn item(object: Value, filter: Option<Value>) -> ObjectAndFilterResult {
    ObjectAndFilterResult::new(object, filter)
}

fn configmap() -> Value {
    json!({"kind": "ConfigMap", "metadata": {"name": "settings-for-my-hook"}, "data": {"field1": "x"}})
}

const SNAPSHOT_CONFIG: &str = r#"
configVersion: v1
schedule:
- name: periodic-checking
  crontab: "0 */3 * * *"
  includeSnapshotsFrom: ["monitor-pods", "configmap-content"]
kubernetes:
- name: configmap-content
  kind: ConfigMap
  nameSelector:
    matchNames: ["settings-for-my-hook"]
  executeHookOnSynchronization: false
  executeHookOnEvent: []
- name: monitor-pods
  kind: Pod
  jqFilter: '.metadata.labels'
  includeSnapshotsFrom: ["configmap-content"]
"#;

fn snapshot_world() -> Snapshots {
    let mut s = Snapshots::new();
    s.insert(
        "monitor-pods".into(),
        vec![
            item(
                pod("kube-system", "kube-proxy-1", json!({"app": "proxy"})),
                Some(json!({"app": "proxy"})),
            ),
            item(
                pod("kube-system", "etcd-1", json!({"app": "etcd"})),
                Some(json!({"app": "etcd"})),
            ),
        ],
    );
    s.insert("configmap-content".into(), vec![item(configmap(), None)]);
    s
}

#[test]
fn on_startup_context_is_only_the_binding() {
    let c = config(HookScope::Global, "configVersion: v1\nonStartup: 1\n");
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    assert_eq!(render(&[b.on_startup()]), json!([{"binding": "onStartup"}]));
}

#[test]
fn seeds_v0_schedule_examples_render_only_the_binding_name() {
    let c = config(
        HookScope::Global,
        r#"{"schedule": [{"name": "incremental", "crontab": "* 2 */3 * * *", "allowFailure": true},
                         {"crontab": "* 59 23 * * *", "allowFailure": false}]}"#,
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    assert_eq!(
        render(&[b.schedule(&c.schedules[0])]),
        json!([{"binding": "incremental"}])
    );
    assert_eq!(
        render(&[b.schedule(&c.schedules[1])]),
        json!([{"binding": "schedule"}])
    );
}

#[test]
fn v1_schedule_context_has_type_schedule() {
    let c = config(
        HookScope::Global,
        "configVersion: v1\nschedule:\n- name: incremental\n  crontab: \"0 2 */3 * * *\"\n  allowFailure: true\n",
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    assert_eq!(
        render(&[b.schedule(&c.schedules[0])]),
        json!([{"binding": "incremental", "type": "Schedule"}])
    );
}

#[test]
fn synchronization_lists_objects_sorted_by_namespace_and_name() {
    let c = config(
        HookScope::Global,
        "configVersion: v1\nkubernetes:\n- kind: Pod\n",
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let proxy = pod("kube-system", "kube-proxy-1", json!({}));
    let etcd = pod("kube-system", "etcd-1", json!({}));
    let ctx = b.synchronization(
        &c.kubernetes[0],
        &[item(proxy.clone(), None), item(etcd.clone(), None)],
    );
    assert_eq!(
        render(&[ctx]),
        json!([{"binding": "kubernetes", "type": "Synchronization",
                "objects": [{"object": etcd}, {"object": proxy}]}])
    );
    let empty = b.synchronization(&c.kubernetes[0], &[]);
    assert_eq!(
        empty.to_json(),
        json!({"binding": "kubernetes", "type": "Synchronization", "objects": []})
    );
}

#[test]
fn event_carries_watch_event_and_object() {
    let c = config(
        HookScope::Module,
        "configVersion: v1\nkubernetes:\n- kind: Pod\n",
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let p = pod("default", "pod-321d12", json!({}));
    let ctx = b.event(&c.kubernetes[0], WatchEvent::Added, &item(p.clone(), None));
    assert_eq!(
        render(&[ctx]),
        json!([{"binding": "kubernetes", "type": "Event", "watchEvent": "Added", "object": p}])
    );
}

#[test]
fn snapshot_reference_examples_render_verbatim_in_meaning() {
    let c = config(HookScope::Global, SNAPSHOT_CONFIG);
    let s = snapshot_world();
    let b = ContextBuilder::new(&c, &s);
    let pods = &c.kubernetes[1];
    let etcd = pod("kube-system", "etcd-1", json!({"app": "etcd"}));
    let proxy = pod("kube-system", "kube-proxy-1", json!({"app": "proxy"}));
    let cm_snapshot = json!({"configmap-content": [{"object": configmap()}]});

    let sync = b.synchronization(pods, &s["monitor-pods"]);
    assert_eq!(
        sync.to_json(),
        json!({"binding": "monitor-pods", "type": "Synchronization",
               "objects": [{"object": etcd, "filterResult": {"app": "etcd"}},
                           {"object": proxy, "filterResult": {"app": "proxy"}}],
               "snapshots": cm_snapshot})
    );

    let new_pod = pod("default", "pod-321d12", json!({"a": "b"}));
    let event = b.event(
        pods,
        WatchEvent::Added,
        &item(new_pod.clone(), Some(json!({"a": "b"}))),
    );
    assert_eq!(
        event.to_json(),
        json!({"binding": "monitor-pods", "type": "Event", "watchEvent": "Added",
               "object": new_pod, "filterResult": {"a": "b"}, "snapshots": cm_snapshot})
    );

    let schedule = b.schedule(&c.schedules[0]);
    assert_eq!(
        schedule.to_json(),
        json!({"binding": "periodic-checking", "type": "Schedule", "snapshots": {
            "monitor-pods": [{"object": etcd, "filterResult": {"app": "etcd"}},
                             {"object": proxy, "filterResult": {"app": "proxy"}}],
            "configmap-content": [{"object": configmap()}]}})
    );
}

#[test]
fn group_contexts_carry_group_name_and_group_snapshots_only() {
    let c = config(
        HookScope::Global,
        r#"
configVersion: v1
schedule:
- name: periodic-checking
  crontab: "0 */3 * * *"
  group: "pods"
kubernetes:
- name: monitor-pods
  apiVersion: v1
  kind: Pod
  jqFilter: '.metadata.labels'
  group: "pods"
- name: configmap-content
  apiVersion: v1
  kind: ConfigMap
  nameSelector:
    matchNames: ["settings-for-my-hook"]
  jqFilter: '.data'
  group: "pods"
"#,
    );
    let mut s = snapshot_world();
    s.insert(
        "configmap-content".into(),
        vec![item(configmap(), Some(json!({"field1": "x"})))],
    );
    let b = ContextBuilder::new(&c, &s);
    let etcd = pod("kube-system", "etcd-1", json!({"app": "etcd"}));
    let proxy = pod("kube-system", "kube-proxy-1", json!({"app": "proxy"}));
    let snapshots = json!({
        "monitor-pods": [{"object": etcd, "filterResult": {"app": "etcd"}},
                         {"object": proxy, "filterResult": {"app": "proxy"}}],
        "configmap-content": [{"object": configmap(), "filterResult": {"field1": "x"}}]
    });
    let sync = b.synchronization(&c.kubernetes[0], &s["monitor-pods"]);
    assert_eq!(
        sync.to_json(),
        json!({"binding": "monitor-pods", "type": "Group", "groupName": "pods", "snapshots": snapshots})
    );
    let event = b.event(
        &c.kubernetes[1],
        WatchEvent::Modified,
        &s["configmap-content"][0],
    );
    assert_eq!(
        event.to_json(),
        json!({"binding": "configmap-content", "type": "Group", "groupName": "pods", "snapshots": snapshots})
    );
    assert_eq!(
        b.schedule(&c.schedules[0]).to_json(),
        json!({"binding": "periodic-checking", "type": "Group", "groupName": "pods", "snapshots": snapshots})
    );
}

#[test]
fn schedule_only_group_renders_group_without_snapshots() {
    let c = config(
        HookScope::Global,
        "configVersion: v1\nschedule:\n- crontab: '* * * * *'\n  group: lonely\n",
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    assert_eq!(
        b.schedule(&c.schedules[0]).to_json(),
        json!({"binding": "schedule", "type": "Group", "groupName": "lonely"})
    );
}

#[test]
fn objects_are_omitted_when_not_kept_in_memory() {
    let c = config(
        HookScope::Global,
        r#"
configVersion: v1
kubernetes:
- name: light
  kind: Pod
  keepFullObjectsInMemory: false
- name: lighter
  kind: Pod
  keepFullObjectsInMemory: false
  jqFilter: .metadata.name
"#,
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let objs = [
        item(pod("b", "x", json!({})), Some(json!("x"))),
        item(pod("a", "y", json!({})), Some(json!("y"))),
    ];
    assert_eq!(
        b.synchronization(&c.kubernetes[0], &objs).to_json(),
        json!({"binding": "light", "type": "Synchronization", "objects": [{}, {}]})
    );
    assert_eq!(
        b.synchronization(&c.kubernetes[1], &objs).to_json(),
        json!({"binding": "lighter", "type": "Synchronization",
               "objects": [{"filterResult": "y"}, {"filterResult": "x"}]})
    );
    let deleted = b.event(&c.kubernetes[1], WatchEvent::Deleted, &objs[0]);
    assert_eq!(
        deleted.to_json(),
        json!({"binding": "lighter", "type": "Event", "watchEvent": "Deleted", "filterResult": "x"})
    );
}

#[test]
fn missing_filter_result_with_a_jq_filter_is_null() {
    let c = config(
        HookScope::Global,
        "configVersion: v1\nkubernetes:\n- kind: Pod\n  jqFilter: .spec\n",
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let p = pod("a", "b", json!({}));
    let ctx = b.event(
        &c.kubernetes[0],
        WatchEvent::Modified,
        &item(p.clone(), None),
    );
    assert_eq!(
        ctx.to_json(),
        json!({"binding": "kubernetes", "type": "Event", "watchEvent": "Modified",
               "object": p, "filterResult": null})
    );
}

#[test]
fn lifecycle_contexts_carry_snapshots_of_every_kubernetes_binding() {
    let c = config(
        HookScope::Module,
        &format!("{SNAPSHOT_CONFIG}beforeHelm: 10\n"),
    );
    let s = snapshot_world();
    let b = ContextBuilder::new(&c, &s);
    let ctx = b.lifecycle(BindingType::BeforeHelm);
    let json = ctx.to_json();
    assert_eq!(json["binding"], json!("beforeHelm"));
    assert!(json.get("type").is_none());
    assert_eq!(
        json["snapshots"]["configmap-content"],
        json!([{"object": configmap()}])
    );
    assert_eq!(
        json["snapshots"]["monitor-pods"].as_array().unwrap().len(),
        2
    );

    let bare = config(HookScope::Global, "configVersion: v1\nafterAll: 1\n");
    let ctx = ContextBuilder::new(&bare, &s).lifecycle(BindingType::AfterAll);
    assert_eq!(
        ctx.to_json(),
        json!({"binding": "afterAll", "snapshots": {}})
    );
}

#[test]
fn missing_snapshot_names_render_as_empty_arrays() {
    let c = config(HookScope::Global, SNAPSHOT_CONFIG);
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    assert_eq!(
        b.schedule(&c.schedules[0]).to_json()["snapshots"],
        json!({"monitor-pods": [], "configmap-content": []})
    );
}

#[test]
fn refresh_reads_the_current_snapshots() {
    let c = config(HookScope::Global, SNAPSHOT_CONFIG);
    let empty = Snapshots::new();
    let mut ctx = ContextBuilder::new(&c, &empty).schedule(&c.schedules[0]);
    let world = snapshot_world();
    ContextBuilder::new(&c, &world).refresh(&mut ctx);
    assert_eq!(
        ctx.to_json()["snapshots"]["configmap-content"],
        json!([{"object": configmap()}])
    );
}

#[test]
fn v0_kubernetes_event_uses_resource_fields() {
    let c = config(
        HookScope::Global,
        "onKubernetesEvent:\n- kind: Pod\n  name: pods\n  jqFilter: .metadata.labels\n",
    );
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let p = pod("default", "nginx", json!({}));
    let ctx = b.event(&c.kubernetes[0], WatchEvent::Modified, &item(p, None));
    assert_eq!(
        render(&[ctx]),
        json!([{"binding": "pods", "resourceEvent": "update", "resourceNamespace": "default",
                "resourceKind": "Pod", "resourceName": "nginx"}])
    );
    let startup = config(HookScope::Global, "onStartup: 1\nbeforeAll: 2\n");
    let b = ContextBuilder::new(&startup, &s);
    assert_eq!(b.on_startup().to_json(), json!({"binding": "onStartup"}));
    assert_eq!(
        b.lifecycle(BindingType::BeforeAll).to_json(),
        json!({"binding": "beforeAll"})
    );
}

fn kube_hook() -> HookConfig {
    config(
        HookScope::Global,
        r#"
configVersion: v1
schedule:
- name: tick
  crontab: "* * * * *"
- name: grouped-tick
  crontab: "* * * * *"
  group: g
kubernetes:
- name: pods
  kind: Pod
- name: grouped
  kind: Pod
  group: g
- name: no-sync
  kind: Pod
  executeHookOnSynchronization: false
- name: no-wait
  kind: Pod
  queue: q
  waitForSynchronization: false
"#,
    )
}

#[test]
fn consecutive_tasks_of_a_hook_run_once_in_queue_order() {
    let c = kube_hook();
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let p = item(pod("a", "p", json!({})), None);
    let t1 = vec![b.event(&c.kubernetes[0], WatchEvent::Added, &p)];
    let t2 = vec![b.schedule(&c.schedules[0])];
    let t3 = vec![b.event(&c.kubernetes[0], WatchEvent::Deleted, &p)];
    let combined = combine(&[&t1, &t2, &t3]);
    assert_eq!(combined.merged_tasks, 3);
    let bindings: Vec<Value> = combined
        .contexts
        .iter()
        .map(|c| c.to_json()["binding"].clone())
        .collect();
    assert_eq!(bindings, vec![json!("pods"), json!("tick"), json!("pods")]);
}

#[test]
fn consecutive_group_contexts_collapse_to_the_last() {
    let c = kube_hook();
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let p = item(pod("a", "p", json!({})), None);
    let g1 = vec![b.event(&c.kubernetes[1], WatchEvent::Added, &p)];
    let g2 = vec![b.schedule(&c.schedules[1])];
    let plain = vec![b.event(&c.kubernetes[0], WatchEvent::Added, &p)];
    let g3 = vec![b.event(&c.kubernetes[1], WatchEvent::Modified, &p)];
    let combined = combine(&[&g1, &g2, &plain, &g3]);
    assert_eq!(combined.merged_tasks, 4);
    let rendered = render(&combined.contexts);
    assert_eq!(
        rendered,
        json!([
            {"binding": "grouped-tick", "type": "Group", "groupName": "g", "snapshots": {"grouped": []}},
            {"binding": "pods", "type": "Event", "watchEvent": "Added", "object": pod("a", "p", json!({}))},
            {"binding": "grouped", "type": "Group", "groupName": "g", "snapshots": {"grouped": []}}
        ])
    );
}

#[test]
fn appending_to_compacted_contexts_leaves_what_compacting_the_whole_list_does() {
    let c = kube_hook();
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let p = item(pod("a", "p", json!({})), None);
    let kinds = [
        b.event(&c.kubernetes[0], WatchEvent::Added, &p),
        b.event(&c.kubernetes[1], WatchEvent::Modified, &p),
        b.schedule(&c.schedules[0]),
        b.schedule(&c.schedules[1]),
    ];
    // every list of up to three contexts of those kinds
    let mut lists: Vec<Vec<BindingContext>> = vec![Vec::new()];
    for _ in 0..3 {
        let longer: Vec<Vec<BindingContext>> = (lists.iter())
            .filter(|l| l.len() == lists.last().map_or(0, Vec::len))
            .flat_map(|l| {
                kinds
                    .iter()
                    .map(move |k| [l.clone(), vec![k.clone()]].concat())
            })
            .collect();
        lists.extend(longer);
    }
    for a in &lists {
        for more in &lists {
            let mut appended = compact_groups(a.clone());
            append_compacted(&mut appended, more.clone());
            let whole = compact_groups([a.clone(), more.clone()].concat());
            assert_eq!(render(&appended), render(&whole), "{a:?} + {more:?}");
        }
    }
}

#[test]
fn single_task_is_not_compacted() {
    let c = kube_hook();
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let t = vec![b.schedule(&c.schedules[1]), b.schedule(&c.schedules[1])];
    let combined = combine(&[&t]);
    assert_eq!(combined.merged_tasks, 1);
    assert_eq!(combined.contexts.len(), 2);
    assert_eq!(compact_groups(t).len(), 1);
}

#[test]
fn synchronizations_with_different_settings_are_not_merged() {
    let c = kube_hook();
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let sync_pods = vec![b.synchronization(&c.kubernetes[0], &[])];
    let sync_grouped = vec![b.synchronization(&c.kubernetes[1], &[])];
    let sync_no_wait = vec![b.synchronization(&c.kubernetes[3], &[])];
    let sync_no_run = vec![b.synchronization(&c.kubernetes[2], &[])];
    assert_eq!(combine(&[&sync_pods, &sync_grouped]).merged_tasks, 2);
    assert_eq!(
        combine(&[&sync_pods, &sync_no_wait, &sync_grouped]).merged_tasks,
        1
    );
    assert_eq!(combine(&[&sync_pods, &sync_no_run]).merged_tasks, 1);
    let event = vec![b.schedule(&c.schedules[0])];
    assert_eq!(combine(&[&event, &sync_no_run]).merged_tasks, 1);
}

/// The runs a queue of `tasks` of one hook makes when each run combines its head with the
/// tasks that follow it.
fn runs(tasks: &[Vec<BindingContext>]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < tasks.len() {
        let rest: Vec<&[BindingContext]> = tasks[at..].iter().map(Vec::as_slice).collect();
        let combined = combine(&rest);
        out.push(render(&combined.contexts));
        at += combined.merged_tasks.max(1);
    }
    out
}

#[test]
fn a_task_joining_the_queued_tail_makes_the_same_runs_as_combining_when_it_starts() {
    let c = kube_hook();
    let v0 = config(HookScope::Global, "onKubernetesEvent:\n- kind: Pod\n");
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let b0 = ContextBuilder::new(&v0, &s);
    let p = item(pod("a", "p", json!({})), None);
    let kinds = [
        vec![b.event(&c.kubernetes[0], WatchEvent::Added, &p)],
        vec![b.event(&c.kubernetes[1], WatchEvent::Modified, &p)],
        vec![b.schedule(&c.schedules[0])],
        vec![b.schedule(&c.schedules[1])],
        vec![b.synchronization(&c.kubernetes[0], &[])],
        vec![b.synchronization(&c.kubernetes[2], &[])],
        vec![b.synchronization(&c.kubernetes[3], &[])],
        vec![b0.event(&v0.kubernetes[0], WatchEvent::Added, &p)],
    ];
    let mut joined = 0;
    for head in &kinds {
        for tail in &kinds {
            for new in &kinds {
                let queued = [head.clone(), tail.clone(), new.clone()];
                let joining = joins_queued(tail, new);
                let with_join = if joining {
                    let mut merged = tail.clone();
                    merged.extend(new.iter().cloned());
                    vec![head.clone(), compact_groups(merged)]
                } else {
                    queued.to_vec()
                };
                assert_eq!(runs(&with_join), runs(&queued), "{head:?} {tail:?} {new:?}");
                let merged = combine(&[head, tail]).merged_tasks == 2;
                assert_eq!(combines(head, tail), merged, "{head:?} {tail:?}");
                joined += usize::from(joining);
            }
        }
    }
    // events and schedules of v1 hooks join; Synchronizations and v0 hooks never do
    assert_eq!(joined, 8 * 7 * 4);
}

#[test]
fn v0_hooks_are_never_combined() {
    let c = config(HookScope::Global, "onKubernetesEvent:\n- kind: Pod\n");
    let s = Snapshots::new();
    let b = ContextBuilder::new(&c, &s);
    let p = item(pod("a", "p", json!({})), None);
    let t1 = vec![b.event(&c.kubernetes[0], WatchEvent::Added, &p)];
    let t2 = vec![b.event(&c.kubernetes[0], WatchEvent::Deleted, &p)];
    let combined = combine(&[&t1, &t2]);
    assert_eq!(combined.merged_tasks, 1);
    assert_eq!(combined.contexts.len(), 1);
    assert_eq!(combine(&[]).merged_tasks, 0);
}

const WEBHOOK_CONFIG: &str = r#"
configVersion: v1
kubernetes:
- name: myCrdObjects
  kind: CronTab
  group: g
kubernetesValidating:
- name: my-crd-validator.example.com
  group: g
  rules: [{apiGroups: [stable.example.com], apiVersions: [v1], operations: ['*'], resources: [crontabs]}]
kubernetesMutating:
- name: no-snapshots.example.com
  rules: [{apiGroups: [stable.example.com], apiVersions: [v1], operations: ['*'], resources: [crontabs]}]
kubernetesCustomResourceConversion:
- name: alpha1_to_alpha2
  includeSnapshotsFrom: ["myCrdObjects"]
  crdName: crontabs.stable.example.com
  conversions:
  - {fromVersion: unstable.crontab.io/v1beta1, toVersion: stable.example.com/v1beta1}
"#;

fn crontab_snapshots() -> Snapshots {
    let mut s = Snapshots::new();
    let object = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"}});
    s.insert("myCrdObjects".into(), vec![item(object, None)]);
    s
}

#[test]
fn a_validating_context_has_type_review_and_group_snapshots_but_is_no_group() {
    let c = config(HookScope::Module, WEBHOOK_CONFIG);
    let snapshots = crontab_snapshots();
    let review = Arc::new(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u"}}),
    );
    let ctx = ContextBuilder::new(&c, &snapshots).admission(&c.validating[0], review.clone());
    assert_eq!(
        ctx.to_json(),
        json!({
            "binding": "my-crd-validator.example.com",
            "type": "Validating",
            "review": *review,
            "snapshots": {"myCrdObjects": [{"object": {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"}}}]}
        })
    );
    let mutating = ContextBuilder::new(&c, &snapshots).admission(&c.mutating[0], review.clone());
    assert_eq!(
        mutating.to_json(),
        json!({"binding": "no-snapshots.example.com", "type": "Mutating", "review": *review})
    );
}

#[test]
fn a_conversion_context_has_the_rule_versions_and_the_review() {
    let c = config(HookScope::Global, WEBHOOK_CONFIG);
    let snapshots = crontab_snapshots();
    let binding = &c.conversions[0];
    let review =
        Arc::new(json!({"kind": "ConversionReview", "request": {"uid": "u", "objects": []}}));
    let ctx = ContextBuilder::new(&c, &snapshots).conversion(
        binding,
        &binding.conversions[0],
        review.clone(),
    );
    let rendered = ctx.to_json();
    assert_eq!(rendered["binding"], "alpha1_to_alpha2");
    assert_eq!(rendered["type"], "Conversion");
    assert_eq!(rendered["fromVersion"], "unstable.crontab.io/v1beta1");
    assert_eq!(rendered["toVersion"], "stable.example.com/v1beta1");
    assert_eq!(rendered["review"], *review);
    assert_eq!(
        rendered["snapshots"]["myCrdObjects"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// Every shape of context: the stream writer gives the bytes of the rendered document.
fn every_shape() -> Vec<BindingContext> {
    let c = config(HookScope::Global, SNAPSHOT_CONFIG);
    let mut s = snapshot_world();
    let odd = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "odd\"name\\é\u{1}", "namespace": "ns", "labels": {"z": "1", "a": "2"}},
        "spec": {"f": 1.5, "e": 1e300, "n": -0.0, "big": u64::MAX, "neg": i64::MIN, "nul": null, "arr": [true, [], {}]}});
    s.get_mut("monitor-pods")
        .unwrap()
        .push(item(odd.clone(), Some(json!({"k": ["é", 2.25]}))));
    let b = ContextBuilder::new(&c, &s);
    let grouped = config(
        HookScope::Global,
        "configVersion: v1\nschedule:\n- crontab: '* * * * *'\n  group: g\nkubernetes:\n- name: pods\n  kind: Pod\n  group: g\n  jqFilter: .metadata.name\n  keepFullObjectsInMemory: false\n",
    );
    let gb = ContextBuilder::new(&grouped, &s);
    let v0 = config(
        HookScope::Global,
        r#"{"onKubernetesEvent": [{"kind": "Pod", "event": ["add"]}]}"#,
    );
    let v0b = ContextBuilder::new(&v0, &s);
    let pods = &s["monitor-pods"];
    vec![
        b.on_startup(),
        b.lifecycle(BindingType::BeforeHelm),
        b.schedule(&c.schedules[0]),
        b.synchronization(&c.kubernetes[1], pods),
        b.synchronization(&c.kubernetes[0], &s["configmap-content"]),
        b.synchronization(&c.kubernetes[1], &[]),
        b.event(&c.kubernetes[1], WatchEvent::Modified, &pods[2]),
        b.event(
            &c.kubernetes[0],
            WatchEvent::Deleted,
            &s["configmap-content"][0],
        ),
        b.event(
            &c.kubernetes[1],
            WatchEvent::Added,
            &ObjectAndFilterResult {
                filter_result: None,
                ..pods[0].clone()
            },
        ),
        gb.schedule(&grouped.schedules[0]),
        gb.synchronization(&grouped.kubernetes[0], pods),
        gb.event(&grouped.kubernetes[0], WatchEvent::Added, &pods[1]),
        v0b.event(&v0.kubernetes[0], WatchEvent::Added, &pods[2]),
        v0b.synchronization(&v0.kubernetes[0], pods),
    ]
}

#[test]
fn streamed_contexts_are_byte_for_byte_the_rendered_document() {
    let contexts = every_shape();
    for one in &contexts {
        let mut streamed = Vec::new();
        write_contexts(std::slice::from_ref(one), &mut streamed).unwrap();
        let rendered = serde_json::to_vec(&render(std::slice::from_ref(one))).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&streamed),
            String::from_utf8_lossy(&rendered)
        );
    }
    let mut streamed = Vec::new();
    write_contexts(&contexts, &mut streamed).unwrap();
    assert_eq!(streamed, serde_json::to_vec(&render(&contexts)).unwrap());
    let mut empty = Vec::new();
    write_contexts(&[], &mut empty).unwrap();
    assert_eq!(empty, b"[]");
}

#[test]
fn streamed_items_are_the_items_as_json() {
    let s = snapshot_world();
    let mut out = Vec::new();
    write_items(&s["monitor-pods"], &mut out).unwrap();
    let expected: Vec<Value> = s["monitor-pods"]
        .iter()
        .map(ObjectAndFilterResult::to_json)
        .collect();
    assert_eq!(out, serde_json::to_vec(&expected).unwrap());
}

#[test]
fn a_large_object_is_kept_packed_and_reads_back_as_its_text() {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
        "labels": {"shard": "1"}}, "data": {"ts": "0", "payload": "x".repeat(2048)}});
    let text = object.to_string();
    let kept = KeptObject::new(&object);
    assert!(kept.held() < 200, "held {} bytes", kept.held());
    assert_eq!(kept.len(), text.len());
    assert_eq!(kept.text(), text);
    assert_eq!(kept.to_value(), object);
    assert_eq!(format!("{kept:?}"), text);
    let mut written = Vec::new();
    write_item(&item(object.clone(), Some(json!("a"))), &mut written).unwrap();
    let written: Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(written, json!({"object": object, "filterResult": "a"}));
    assert_eq!(KeptObject::new(&object), kept, "the same text packs alike");
}

#[test]
fn a_short_text_is_kept_as_it_is() {
    let result = json!({"name": "cm-00001", "ts": "0"});
    let kept = KeptObject::new(&result);
    assert_eq!(
        (kept.held(), kept.len()),
        (result.to_string().len(), result.to_string().len())
    );
    assert!(matches!(kept.text(), Cow::Borrowed(_)));
}
