//! The lifecycle scenarios of the specification, each as an ordered history.

use addon_operator::edges::exec::hook_run::HookOutputs;
use addon_operator_testkit::scenario::{enabling_hooks, failing, flaky, start, tree, values_patch};
use addon_operator_testkit::wait::wait_for_async;
use addon_operator_testkit::{FakeHelm, FakeHooks, HelmCall};

const GLOBAL_STARTUP: &str = "configVersion: v1\nonStartup: 2\nbeforeAll: 1\n";
const GLOBAL_WATCH: &str =
    "configVersion: v1\nonStartup: 1\nafterAll: 1\nkubernetes:\n- name: nodes\n  kind: Node\n";

fn full_tree() -> tempfile::TempDir {
    tree(&[
        ("global-hooks/hooks/a-startup", GLOBAL_STARTUP),
        ("global-hooks/hooks/b-watch", GLOBAL_WATCH),
        (
            "global-hooks/hooks/c-sched",
            "configVersion: v1\nschedule:\n- name: tick\n  crontab: '*/10 * * * * *'\n",
        ),
        (
            "modules/values.yaml",
            "global: {a: 1}\nwebEnabled: true\nreporterEnabled: true\nweb: {replicas: 1}\n",
        ),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/hooks/startup",
            "configVersion: v1\nonStartup: 1\n",
        ),
        (
            "modules/010-web/hooks/pods",
            "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  jqFilter: .metadata.labels\n",
        ),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
        (
            "modules/010-web/hooks/after",
            "configVersion: v1\nafterHelm: 1\n",
        ),
        ("modules/020-reporter/enabled", "#!/bin/sh\n"),
        (
            "modules/020-reporter/hooks/report",
            "configVersion: v1\nschedule:\n- name: every-minute\n  crontab: '* * * * *'\n",
        ),
    ])
}

/// Enabled scripts say "true"; hooks succeed with no output.
fn default_hooks() -> FakeHooks {
    enabling_hooks()
}

#[tokio::test(start_paused = true)]
async fn first_start_runs_every_step_in_the_specified_order() {
    let op = start(full_tree(), "", default_hooks(), FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        op.runs(),
        [
            "run hooks/b-watch onStartup",
            "run hooks/a-startup onStartup",
            "run hooks/b-watch kubernetes",
            "run hooks/a-startup beforeAll",
            "enabled reporter",
            "run web/hooks/startup onStartup",
            "run web/hooks/pods kubernetes",
            "run web/hooks/before beforeHelm",
            "helm upgrade web",
            "run web/hooks/after afterHelm",
            "run hooks/b-watch afterAll",
        ]
    );
    assert_eq!(op.handle.enabled_modules().len(), 2);
    let calls = op.hooks.calls();
    let startup = &calls[0];
    assert_eq!(
        startup.binding_context,
        serde_json::json!([{"binding": "onStartup"}])
    );
    assert_eq!(startup.values, serde_json::json!({"global": {"a": 1}}));
    let sync = calls.iter().find(|c| c.name == "web/hooks/pods").unwrap();
    assert_eq!(sync.binding_context[0]["type"], "Synchronization");
    assert_eq!(
        sync.values["global"]["enabledModules"],
        serde_json::json!(["web", "reporter"])
    );
    assert_eq!(sync.values["web"], serde_json::json!({"replicas": 1}));
    let enabled = calls.iter().find(|c| c.name == "reporter/enabled").unwrap();
    assert_eq!(
        enabled.values["global"]["enabledModules"],
        serde_json::json!(["web"])
    );
    let HelmCall::Upgrade { values_yaml, .. } = &op.helm.calls()[0] else {
        panic!("not an upgrade")
    };
    assert!(!values_yaml.contains("enabledModules"), "{values_yaml}");
    assert!(values_yaml.contains("replicas: 1"), "{values_yaml}");
}

fn small_tree() -> tempfile::TempDir {
    tree(&[
        (
            "global-hooks/hooks/before-all",
            "configVersion: v1\nbeforeAll: 1\n",
        ),
        (
            "modules/values.yaml",
            "global: {a: 1}\nwebEnabled: true\ndbEnabled: true\n",
        ),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        ("modules/010-web/values.yaml", "web: {replicas: 1}\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
        (
            "modules/010-web/hooks/deleted",
            "configVersion: v1\nafterDeleteHelm: 1\n",
        ),
        (
            "modules/020-db/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ])
}

#[tokio::test(start_paused = true)]
async fn global_section_change_reloads_all_modules() {
    let op = start(small_tree(), "", default_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let runs = op.edit_config("global: |\n  a: 2\n").await;
    assert_eq!(
        runs,
        [
            "run hooks/before-all beforeAll",
            "run web/hooks/before beforeHelm",
            "helm upgrade web",
            "run db/hooks/before beforeHelm",
        ]
    );
    let last = op.hooks.calls().pop().unwrap();
    assert_eq!(last.values["global"]["a"], 2);
    assert_eq!(last.config_values["global"], serde_json::json!({"a": 2}));
}

#[tokio::test(start_paused = true)]
async fn module_section_change_runs_only_that_module() {
    let op = start(small_tree(), "", default_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let runs = op.edit_config("web: |\n  replicas: 3\n").await;
    assert_eq!(
        runs,
        ["run web/hooks/before beforeHelm", "helm upgrade web"]
    );
    let HelmCall::Upgrade { values_yaml, .. } = op.helm.calls().pop().unwrap() else {
        panic!("not an upgrade")
    };
    assert!(values_yaml.contains("replicas: 3"), "{values_yaml}");
}

#[tokio::test(start_paused = true)]
async fn enabled_flag_change_deletes_the_module_with_its_after_delete_hooks() {
    let op = start(small_tree(), "", default_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let runs = op.edit_config("webEnabled: false\n").await;
    assert_eq!(
        runs,
        [
            "run hooks/before-all beforeAll",
            "helm uninstall web",
            "run web/hooks/deleted afterDeleteHelm",
            "run db/hooks/before beforeHelm",
        ]
    );
    let enabled: Vec<String> = op
        .handle
        .enabled_modules()
        .iter()
        .map(|m| m.to_string())
        .collect();
    assert_eq!(enabled, ["db"]);
    assert!(op.helm.release_names().is_empty());
}

#[tokio::test(start_paused = true)]
async fn invalid_config_edit_is_rejected_and_nothing_runs() {
    let dir = tree(&[
        (
            "global-hooks/openapi/config-values.yaml",
            "type: object\nproperties:\n  a: {type: integer}\n",
        ),
        ("modules/values.yaml", "webEnabled: true\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ]);
    let op = start(dir, "global: |\n  a: 1\n", default_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let runs = op.edit_config("global: |\n  a: not-a-number\n").await;
    assert!(runs.is_empty());
    assert_eq!(op.handle.values()["global"]["a"], 1);
}

#[tokio::test(start_paused = true)]
async fn after_helm_values_change_runs_the_module_again() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/values.yaml", "web: {}\n"),
        (
            "modules/010-web/hooks/after",
            "configVersion: v1\nafterHelm: 1\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        let seen = call.values["web"]
            .get("count")
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        if seen < 2 {
            Ok(values_patch(&format!(
                r#"[{{"op": "add", "path": "/web/count", "value": {}}}]"#,
                seen + 1
            )))
        } else {
            Ok(HookOutputs::default())
        }
    });
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        op.runs(),
        [
            "run web/hooks/after afterHelm",
            "run web/hooks/after afterHelm",
            "run web/hooks/after afterHelm",
        ]
    );
    assert_eq!(op.handle.values()["web"]["count"], 2);
}

#[tokio::test(start_paused = true)]
async fn after_all_values_change_reloads_all_modules_again() {
    let dir = tree(&[
        (
            "global-hooks/hooks/after-all",
            "configVersion: v1\nafterAll: 1\n",
        ),
        ("modules/values.yaml", "webEnabled: true\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        if call.name == "hooks/after-all" && call.values["global"].get("done").is_none() {
            Ok(values_patch(
                r#"[{"op": "add", "path": "/global/done", "value": true}]"#,
            ))
        } else {
            Ok(HookOutputs::default())
        }
    });
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        op.runs(),
        [
            "run web/hooks/before beforeHelm",
            "run hooks/after-all afterAll",
            "run web/hooks/before beforeHelm",
            "run hooks/after-all afterAll",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn failing_hook_is_retried_with_growing_delays_then_succeeds() {
    let dir = tree(&[(
        "global-hooks/hooks/flaky",
        "configVersion: v1\nonStartup: 1\n",
    )]);
    let hooks = flaky(3, "boom");
    let started = tokio::time::Instant::now();
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        op.handle.history(),
        [
            "start GlobalHookRun:onStartup:hooks/flaky:onStartup",
            "run hooks/flaky onStartup",
            "failed GlobalHookRun:onStartup:hooks/flaky:onStartup",
            "start GlobalHookRun:onStartup:hooks/flaky:onStartup:failures 1:boom",
            "run hooks/flaky onStartup",
            "failed GlobalHookRun:onStartup:hooks/flaky:onStartup",
            "start GlobalHookRun:onStartup:hooks/flaky:onStartup:failures 2:boom",
            "run hooks/flaky onStartup",
            "failed GlobalHookRun:onStartup:hooks/flaky:onStartup",
            "start GlobalHookRun:onStartup:hooks/flaky:onStartup:failures 3:boom",
            "run hooks/flaky onStartup",
            "start ConvergeModules:startup",
            "start DiscoverModules",
            "start ConvergeDone",
        ]
    );
    // 5 s, then 10 s, then 20 s: the delays grow from 5 s towards the 30 s cap
    let waited = started.elapsed().as_secs();
    assert!((35..40).contains(&waited), "waited {waited} s");
}

#[tokio::test(start_paused = true)]
async fn allow_failure_schedule_hook_fails_and_the_queue_moves_on() {
    let dir = tree(&[
        (
            "global-hooks/hooks/sched",
            "configVersion: v1\nschedule:\n- name: tick\n  crontab: '*/10 * * * * *'\n  allowFailure: yes\n  queue: slow\n",
        ),
        (
            "global-hooks/hooks/other",
            "configVersion: v1\nschedule:\n- name: tock\n  crontab: '*/10 * * * * *'\n  queue: slow\n",
        ),
    ]);
    let hooks = failing("hooks/sched", "always fails");
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    tokio::time::sleep(std::time::Duration::from_secs(25)).await;
    op.settle().await;
    let runs = op.runs();
    let sched = runs
        .iter()
        .filter(|r| *r == "run hooks/sched schedule")
        .count();
    let other = runs
        .iter()
        .filter(|r| *r == "run hooks/other schedule")
        .count();
    assert!(sched >= 2, "{runs:?}");
    assert_eq!(
        sched, other,
        "the failing hook never blocks its queue: {runs:?}"
    );
    assert!(!op.handle.history().iter().any(|l| l.starts_with("failed")));
    let call = op
        .hooks
        .calls()
        .into_iter()
        .find(|c| c.name == "hooks/sched")
        .unwrap();
    assert_eq!(
        call.binding_context,
        serde_json::json!([{"binding": "tick", "type": "Schedule"}])
    );
}

#[tokio::test(start_paused = true)]
async fn module_disabled_while_its_run_keeps_failing_is_deleted() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\nokEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
        (
            "modules/010-web/hooks/deleted",
            "configVersion: v1\nafterDeleteHelm: 1\n",
        ),
        (
            "modules/020-ok/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ]);
    let hooks = failing("web/hooks/before", "broken module");
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    assert!(
        !op.handle.first_converge_done(),
        "web's failing run holds main"
    );
    let failures = op
        .runs()
        .iter()
        .filter(|r| *r == "run web/hooks/before beforeHelm")
        .count();
    assert!(failures >= 3, "{:?}", op.runs());
    let text = op.handle.queues_text();
    assert!(
        text.contains("ModuleRun:web:startup:converge:failures"),
        "{text}"
    );
    assert!(text.contains("broken module"), "{text}");
    let json = op.handle.queues_json().to_string();
    assert!(
        json.contains("\"main\"") && json.contains("ModuleRun:web"),
        "{json}"
    );
    let runs = op.edit_config("webEnabled: false\n").await;
    assert_eq!(
        runs,
        [
            "run web/hooks/deleted afterDeleteHelm",
            "run ok/hooks/before beforeHelm"
        ]
    );
    let enabled: Vec<String> = op
        .handle
        .enabled_modules()
        .iter()
        .map(|m| m.to_string())
        .collect();
    assert_eq!(enabled, ["ok"]);
}

#[tokio::test(start_paused = true)]
async fn three_pending_events_of_one_hook_run_once_with_three_contexts() {
    let dir = tree(&[
        (
            "global-hooks/hooks/pods",
            "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  executeHookOnSynchronization: false\n  queue: pods\n",
        ),
        (
            "global-hooks/hooks/blocker",
            "configVersion: v1\nschedule:\n- name: block\n  crontab: '@every 1h'\n  queue: pods\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    let pod = |name: &str| serde_json::json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default"}});
    // hold the queue with a failing run so that three events pile up behind it
    op.hooks.respond(|call| {
        if call.name == "hooks/blocker" {
            Err("busy".into())
        } else {
            Ok(HookOutputs::default())
        }
    });
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    for name in ["a", "b", "c"] {
        op.kube
            .emit(addon_core::hook_config::WatchEvent::Added, pod(name));
    }
    // the three events join one waiting task behind the blocker (not three tasks)
    let queued = || async {
        op.handle.queues_json()["summary"]["totalTasks"] == 2
            && op
                .handle
                .queues_text()
                .contains("hooks/pods:pods,pods,pods")
    };
    let queues = || op.handle.queues_text();
    let limit = std::time::Duration::from_secs(5);
    wait_for_async(
        "three events joined behind the blocker",
        limit,
        queued,
        queues,
    )
    .await;
    op.hooks.respond(|_| Ok(HookOutputs::default()));
    op.settle().await;
    let pods_runs: Vec<_> = op
        .hooks
        .calls()
        .into_iter()
        .filter(|c| c.name == "hooks/pods")
        .collect();
    assert_eq!(pods_runs.len(), 1, "{:?}", op.runs());
    let names: Vec<&str> = pods_runs[0]
        .binding_context
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["object"]["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(
        pods_runs[0]
            .binding_context
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["type"] == "Event")
    );
}

#[tokio::test(start_paused = true)]
async fn kubernetes_event_of_a_module_hook_that_changes_values_runs_the_module() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/values.yaml", "web: {}\n"),
        (
            "modules/010-web/hooks/watch",
            "configVersion: v1\nkubernetes:\n- name: cms\n  kind: ConfigMap\n  jqFilter: .data\n",
        ),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        let ctx = &call.binding_context[0];
        if call.name == "web/hooks/watch" && ctx["type"] == "Event" {
            let v = ctx["filterResult"]["v"].clone();
            Ok(values_patch(&format!(
                r#"[{{"op": "add", "path": "/web/v", "value": {v}}}]"#
            )))
        } else {
            Ok(HookOutputs::default())
        }
    });
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.kube.set_objects("ConfigMap", vec![]);
    op.settle().await;
    let mark = op.clear_history_marker();
    let cm = |v: &str| serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "d", "resourceVersion": v}, "data": {"v": "1"}});
    op.kube
        .emit(addon_core::hook_config::WatchEvent::Added, cm("1"));
    op.settle().await;
    // same filter result: suppressed, nothing runs
    op.kube
        .emit(addon_core::hook_config::WatchEvent::Modified, cm("2"));
    op.settle().await;
    assert_eq!(
        op.runs_since(mark),
        [
            "run web/hooks/watch kubernetes",
            "run web/hooks/before beforeHelm"
        ]
    );
    assert_eq!(op.handle.values()["web"]["v"], "1");
}

#[tokio::test(start_paused = true)]
async fn config_patch_lands_in_the_config_store_at_once_and_values_patch_stays_in_memory() {
    let dir = tree(&[
        (
            "global-hooks/hooks/gen",
            "configVersion: v1\nonStartup: 1\n",
        ),
        (
            "global-hooks/hooks/read",
            "configVersion: v1\nonStartup: 2\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        if call.name == "hooks/gen" {
            let mut out = addon_operator_testkit::scenario::config_patch(
                r#"[{"op": "add", "path": "/global/password", "value": "s3cret"}]"#,
            );
            out.values_patch =
                r#"[{"op": "add", "path": "/global/discovered", "value": 3}]"#.into();
            Ok(out)
        } else {
            Ok(HookOutputs::default())
        }
    });
    let op = start(dir, "global: |\n  keep: me\n", hooks, FakeHelm::new()).await;
    op.settle().await;
    let saved = op.config.current();
    assert_eq!(
        saved.global_values(),
        serde_json::json!({"keep": "me", "password": "s3cret"})
    );
    let read = op
        .hooks
        .calls()
        .into_iter()
        .find(|c| c.name == "hooks/read")
        .unwrap();
    assert_eq!(
        read.config_values,
        serde_json::json!({"global": {"keep": "me", "password": "s3cret"}})
    );
    assert_eq!(
        read.values,
        serde_json::json!({"global": {"keep": "me", "password": "s3cret", "discovered": 3}})
    );
}

#[tokio::test(start_paused = true)]
async fn after_helm_failure_on_the_first_run_reruns_the_whole_module() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/hooks/startup",
            "configVersion: v1\nonStartup: 1\n",
        ),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
        (
            "modules/010-web/hooks/after",
            "configVersion: v1\nafterHelm: 1\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    let failed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    hooks.respond(move |call| {
        if call.name == "web/hooks/after" && !failed.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            Err("afterHelm failed".into())
        } else {
            Ok(HookOutputs::default())
        }
    });
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        op.runs(),
        [
            "run web/hooks/startup onStartup",
            "run web/hooks/before beforeHelm",
            "helm upgrade web",
            "run web/hooks/after afterHelm",
            "failed ModuleRun:web:startup:converge",
            "run web/hooks/startup onStartup",
            "run web/hooks/before beforeHelm",
            "run web/hooks/after afterHelm",
        ],
        "helm does not upgrade again: nothing changed since the first upgrade"
    );
}

#[tokio::test(start_paused = true)]
async fn failing_enabled_script_holds_main_and_is_retried() {
    let dir = tree(&[
        (
            "global-hooks/hooks/sched",
            "configVersion: v1\nschedule:\n- name: tick\n  crontab: '*/5 * * * * *'\n",
        ),
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/enabled", "#!/bin/sh\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    let attempts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    hooks.respond(move |call| {
        if call.name != "web/enabled" {
            return Ok(HookOutputs::default());
        }
        if attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
            Err("enabled script crashed".into())
        } else {
            Ok(values_patch("true"))
        }
    });
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    let runs = op.runs();
    assert_eq!(
        &runs[..5],
        [
            "enabled web",
            "failed DiscoverModules",
            "enabled web",
            "failed DiscoverModules",
            "enabled web",
        ]
    );
    assert_eq!(runs[5], "run web/hooks/before beforeHelm");
    // schedules only fire after the first converge is done
    assert!(!runs[..6].iter().any(|r| r.contains("sched")), "{runs:?}");
}

#[tokio::test(start_paused = true)]
async fn absent_helm_resources_run_the_module_again() {
    let op = start(small_tree(), "", default_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let mark = op.clear_history_marker();
    op.handle
        .resources_absent(&addon_core::names::ModuleName::new("web").unwrap());
    op.settle().await;
    assert_eq!(op.runs_since(mark), ["run web/hooks/before beforeHelm"]);
}

#[tokio::test(start_paused = true)]
async fn kubernetes_operations_of_a_hook_are_applied_and_invalid_ones_fail_the_run() {
    let dir = tree(&[(
        "global-hooks/hooks/ops",
        "configVersion: v1\nonStartup: 1\n",
    )]);
    let hooks = FakeHooks::new();
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    hooks.respond(move |_| {
        let first = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
        let ops = if first {
            r#"{"operation": "Explode", "kind": "Pod", "name": "x"}"#
        } else {
            r#"{"operation": "Delete", "kind": "Pod", "namespace": "d", "name": "x"}"#
        };
        Ok(HookOutputs {
            kubernetes_patch: ops.into(),
            ..Default::default()
        })
    });
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        &op.runs()[..3],
        [
            "run hooks/ops onStartup",
            "failed GlobalHookRun:onStartup:hooks/ops:onStartup",
            "run hooks/ops onStartup",
        ]
    );
    assert_eq!(op.kube.applied().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn release_without_a_module_is_purged_before_after_all() {
    let dir = tree(&[
        (
            "global-hooks/hooks/after-all",
            "configVersion: v1\nafterAll: 1\n",
        ),
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
    ]);
    let helm = FakeHelm::new().with_release("removed-module");
    let op = start(dir, "", default_hooks(), helm).await;
    op.settle().await;
    assert_eq!(
        op.runs(),
        [
            "helm upgrade web",
            "helm uninstall removed-module",
            "run hooks/after-all afterAll",
        ]
    );
    assert_eq!(op.helm.release_names(), ["web"]);
}

#[tokio::test(start_paused = true)]
async fn resource_monitor_runs_a_module_whose_release_drifted() {
    let op = start(small_tree(), "", default_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let mark = op.clear_history_marker();
    tokio::time::sleep(std::time::Duration::from_secs(301)).await;
    op.settle().await;
    assert!(op.runs_since(mark).is_empty(), "no drift, nothing runs");
    op.helm.drift("web");
    tokio::time::sleep(std::time::Duration::from_secs(300)).await;
    op.settle().await;
    assert_eq!(
        op.runs_since(mark),
        ["run web/hooks/before beforeHelm", "helm upgrade web"]
    );
}

#[tokio::test(start_paused = true)]
async fn schedule_run_gets_fresh_snapshots_of_the_kubernetes_bindings_it_includes() {
    let dir = tree(&[(
        "global-hooks/hooks/report",
        "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  jqFilter: .metadata.name\n  executeHookOnSynchronization: false\n  executeHookOnEvent: []\nschedule:\n- name: tick\n  crontab: '*/10 * * * * *'\n  includeSnapshotsFrom: [pods]\n",
    )]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    let pod = |name: &str| serde_json::json!({"kind": "Pod", "metadata": {"name": name, "namespace": "d"}});
    op.kube.set_objects("Pod", vec![pod("a")]);
    op.settle().await;
    op.kube
        .emit(addon_core::hook_config::WatchEvent::Added, pod("b"));
    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
    op.settle().await;
    let tick = op
        .hooks
        .calls()
        .into_iter()
        .find(|c| c.binding_context[0]["binding"] == "tick")
        .unwrap();
    let names: Vec<&str> = tick.binding_context[0]["snapshots"]["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["filterResult"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
}

/// A binding's jqFilter that exceeds a bound on one event (here the output limit, which the
/// in-process runner of this harness enforces too) drops that event with an error; the next
/// event of the same binding runs the hook.
#[tokio::test(start_paused = true)]
async fn an_event_whose_filter_exceeds_a_limit_is_dropped_and_the_binding_keeps_working() {
    let dir = tree(&[(
        "global-hooks/hooks/pods",
        "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  executeHookOnSynchronization: false\n  jqFilter: 'if .metadata.name == \"bad\" then repeat(1) else .metadata.name end'\n",
    )]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    let mark = op.clear_history_marker();
    let pod = |name: &str| serde_json::json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default"}});
    op.kube
        .emit(addon_core::hook_config::WatchEvent::Added, pod("bad"));
    op.settle().await;
    assert!(op.runs_since(mark).is_empty(), "{:?}", op.runs_since(mark));
    op.kube
        .emit(addon_core::hook_config::WatchEvent::Added, pod("good"));
    op.settle().await;
    assert_eq!(op.runs_since(mark), ["run hooks/pods kubernetes"]);
    let calls = op.hooks.calls();
    let last = calls.last().unwrap();
    assert_eq!(last.binding_context[0]["filterResult"], "good");
}

/// A burst of watch events taken from the channel together: one failing object drops only its
/// own event, and every other event reaches a hook run's binding contexts exactly once (runs may
/// combine several events).
#[tokio::test(start_paused = true)]
async fn a_burst_of_events_reaches_the_hook_once_each_and_a_failing_object_drops_only_itself() {
    let dir = tree(&[(
        "global-hooks/hooks/pods",
        "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  executeHookOnSynchronization: false\n  jqFilter: 'if .metadata.name == \"bad\" then repeat(1) else .metadata.name end'\n",
    )]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    let before = op.hooks.calls().len();
    let pod = |name: &str| serde_json::json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default"}});
    for i in 0..300 {
        let name = if i == 150 {
            "bad".to_string()
        } else {
            format!("p{i}")
        };
        op.kube
            .emit(addon_core::hook_config::WatchEvent::Added, pod(&name));
    }
    op.settle().await;
    let mut seen: Vec<String> = op.hooks.calls()[before..]
        .iter()
        .flat_map(|c| c.binding_context.as_array().cloned().unwrap_or_default())
        .filter(|ctx| ctx["type"] == "Event")
        .map(|ctx| ctx["filterResult"].as_str().unwrap_or_default().to_string())
        .collect();
    seen.sort();
    let mut expected: Vec<String> = (0..300)
        .filter(|i| *i != 150)
        .map(|i| format!("p{i}"))
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
}

#[tokio::test(start_paused = true)]
async fn a_queued_event_run_of_a_module_disabled_meanwhile_is_dropped() {
    let dir = tree(&[
        (
            "global-hooks/hooks/blocker",
            "configVersion: v1\nschedule:\n- name: block\n  crontab: '@every 1h'\n",
        ),
        ("modules/values.yaml", "webEnabled: true\n"),
        (
            "modules/010-web/hooks/watch",
            "configVersion: v1\nkubernetes:\n- name: cms\n  kind: ConfigMap\n  executeHookOnSynchronization: false\n",
        ),
    ]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.kube.set_objects("ConfigMap", vec![]);
    op.settle().await;
    let mark = op.clear_history_marker();
    // hold `main` with a failing run; the edit that disables `web`, then an event of its hook,
    // queue behind it
    op.hooks.respond(|call| {
        if call.name == "hooks/blocker" {
            Err("busy".into())
        } else {
            Ok(HookOutputs::default())
        }
    });
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    let config =
        addon_core::config::Config::from_file("config.yaml", "webEnabled: false\n").unwrap();
    op.config.edit(Ok(config));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let cm = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "d", "resourceVersion": "1"}});
    op.kube.emit(addon_core::hook_config::WatchEvent::Added, cm);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    op.hooks.respond(|_| Ok(HookOutputs::default()));
    op.settle().await;
    let runs = op.runs_since(mark);
    assert!(
        !runs.iter().any(|r| r.starts_with("run web/hooks/watch")),
        "{runs:?}"
    );
    assert!(op.handle.enabled_modules().is_empty(), "{runs:?}");
}
