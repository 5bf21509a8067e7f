//! The release guard with fakes and paused time: the Events it sends through the `Reporter`
//! (kept in `KeptReports`) for drift in warn and enforce mode, the JSON patch enforce writes, and
//! the readiness of a module whose Deployment is not available, naming it.

use std::time::Duration;

use addon_core::drift::DriftMode;
use addon_core::hook_output::kube_patch::KubeOperation;
use addon_operator::runtime::GuardSettings;
use addon_operator::runtime::edges::report::KeptReports;
use addon_operator::runtime::edges::{AdminEvent, Severity, Subject};
use addon_operator_testkit::scenario::{Op, start_with_guard, tree};
use addon_operator_testkit::wait::wait_for_async;
use addon_operator_testkit::{FakeHelm, FakeHooks};
use serde_json::{Value, json};

fn deployment(replicas: i64, available: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 1,
            "resourceVersion": "7"},
        "spec": {"replicas": replicas, "progressDeadlineSeconds": 600},
        "status": {"observedGeneration": 1, "replicas": replicas,
            "updatedReplicas": replicas, "readyReplicas": available,
            "availableReplicas": available}})
}

fn manifest() -> Vec<Value> {
    vec![json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1}})]
}

async fn operator(mode: DriftMode, live: Value, reports: &KeptReports) -> Op {
    operator_with_config(mode, live, reports, "").await
}

async fn operator_with_config(
    mode: DriftMode,
    live: Value,
    reports: &KeptReports,
    config: &str,
) -> Op {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
    ]);
    let helm = FakeHelm::new();
    helm.set_manifest("web", manifest());
    let settings = GuardSettings {
        mode,
        ..GuardSettings::default()
    };
    let op = start_with_guard(
        dir,
        config,
        FakeHooks::new(),
        helm,
        settings,
        reports.clone(),
    )
    .await;
    op.kube.set_live(live);
    op.settle().await;
    op
}

async fn wait_for_event(reports: &KeptReports, reason: &str) -> AdminEvent {
    let found = || async { reports.events().iter().any(|e| e.reason == reason) };
    let context = || format!("{:#?}", reports.events());
    wait_for_async(reason, Duration::from_secs(60), found, context).await;
    let events = reports.events();
    events.into_iter().find(|e| e.reason == reason).unwrap()
}

fn json_patches(op: &Op) -> Vec<Value> {
    op.kube
        .applied()
        .into_iter()
        .filter_map(|op| match op {
            KubeOperation::JsonPatch { patch, .. } => Some(serde_json::to_value(patch).unwrap()),
            _ => None,
        })
        .collect()
}

fn names_web(event: &AdminEvent) -> bool {
    matches!(&event.subject, Subject::Object { module, object }
        if module.as_str() == "web" && object.kind == "Deployment" && object.name == "web")
}

#[tokio::test(start_paused = true)]
async fn warn_mode_sends_a_warning_event_on_the_object_and_writes_nothing() {
    let reports = KeptReports::default();
    let op = operator(DriftMode::Warn, deployment(1, 1), &reports).await;
    wait_for_event(&reports, "Ready").await;
    op.kube.change(deployment(5, 5), false).await;
    let event = wait_for_event(&reports, "DriftDetected").await;
    assert_eq!(event.severity, Severity::Warning);
    assert!(names_web(&event), "{event:?}");
    assert!(
        event.message.contains("/spec/replicas (1 → 5)"),
        "{event:?}"
    );
    assert!(json_patches(&op).is_empty());
    // status updates of the drifted object do not repeat the Event
    op.kube.change(deployment(5, 4), false).await;
    op.kube.change(deployment(5, 5), false).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let drift_events = reports
        .events()
        .iter()
        .filter(|e| e.reason == "DriftDetected")
        .count();
    assert_eq!(drift_events, 1);
}

#[tokio::test(start_paused = true)]
async fn enforce_mode_writes_the_field_back_guarded_by_the_resource_version() {
    let reports = KeptReports::default();
    let op = operator(DriftMode::Enforce, deployment(1, 1), &reports).await;
    wait_for_event(&reports, "Ready").await;
    op.kube.change(deployment(5, 5), false).await;
    let event = wait_for_event(&reports, "DriftRestored").await;
    assert_eq!(event.severity, Severity::Normal);
    assert!(names_web(&event), "{event:?}");
    assert_eq!(
        json_patches(&op),
        vec![json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
            {"op": "replace", "path": "/spec/replicas", "value": 1}
        ])]
    );
}

#[tokio::test(start_paused = true)]
async fn a_module_in_maintenance_is_only_warned_about_in_enforce_mode() {
    let reports = KeptReports::default();
    let config = "webMaintenance: NoResourceReconciliation\n";
    let op = operator_with_config(DriftMode::Enforce, deployment(1, 1), &reports, config).await;
    wait_for_event(&reports, "Ready").await;
    op.kube.change(deployment(5, 5), false).await;
    let event = wait_for_event(&reports, "DriftDetected").await;
    assert!(names_web(&event), "{event:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        json_patches(&op).is_empty(),
        "nothing written in maintenance"
    );
    assert!(!reports.events().iter().any(|e| e.reason == "DriftRestored"));
}

#[tokio::test(start_paused = true)]
async fn a_fight_over_one_field_backs_off_with_a_warning() {
    let reports = KeptReports::default();
    let op = operator(DriftMode::Enforce, deployment(1, 1), &reports).await;
    wait_for_event(&reports, "Ready").await;
    for n in 0..6 {
        op.kube.change(deployment(2 + n, 1), false).await;
        op.kube.change(deployment(1, 1), false).await;
    }
    let event = wait_for_event(&reports, "DriftEnforcementPaused").await;
    assert!(event.message.contains("/spec/replicas"), "{event:?}");
    assert_eq!(json_patches(&op).len(), 5, "restores before the back-off");
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_deployment_keeps_the_module_from_ready_and_is_named_when_it_fails() {
    let reports = KeptReports::default();
    let op = operator(DriftMode::Warn, deployment(1, 0), &reports).await;
    let summary = op.handle.release_summaries();
    let web = summary.values().next().expect("the module is tracked");
    assert_eq!(web.health, "progressing");
    assert_eq!(web.object.as_deref(), Some("default/Deployment/web"));
    assert!(!reports.events().iter().any(|e| e.reason == "Ready"));
    tokio::time::sleep(Duration::from_secs(310)).await;
    let event = wait_for_event(&reports, "Unhealthy").await;
    assert_eq!(event.severity, Severity::Warning);
    assert!(names_web(&event), "{event:?}");
    assert!(event.message.contains("available: 0/1"), "{event:?}");
}
