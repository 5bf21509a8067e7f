use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn manifest() -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"},
            "annotations": {"drift.addon-operator.io/ignore": "/spec/replicas"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "app", "image": "nginx", "args": ["a", "b"],
             "resources": {"limits": {"memory": "1024Mi"}}}]}}}})
}

fn live() -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "resourceVersion": "7", "labels": {"app": "web"},
            "annotations": {"drift.addon-operator.io/ignore": "/spec/replicas",
                "meta.helm.sh/release-name": "web"}},
        "spec": {"replicas": 1, "progressDeadlineSeconds": 600,
            "template": {"spec": {"containers": [
            {"name": "app", "image": "nginx", "args": ["a", "b"], "imagePullPolicy": "Always",
             "resources": {"limits": {"memory": "1Gi"}}}]}}},
        "status": {"replicas": 1}})
}

#[test]
fn the_baseline_holds_the_live_values_at_the_fields_the_chart_sets() {
    let baseline = Baseline::record(&manifest(), &live(), &IgnoreRules::default());
    // the server's normalisation (1024Mi → 1Gi) and defaults are not drift
    assert!(baseline.diff(&live()).is_empty());
    assert_eq!(baseline.len(), 7, "{baseline:?}");
}

#[test]
fn a_changed_field_the_chart_sets_is_drift_and_one_it_does_not_set_is_not() {
    let baseline = Baseline::record(&manifest(), &live(), &IgnoreRules::default());
    let mut edited = live();
    edited["spec"]["replicas"] = json!(5);
    edited["spec"]["progressDeadlineSeconds"] = json!(30);
    edited["status"]["replicas"] = json!(5);
    edited["metadata"]["annotations"]["other"] = json!("x");
    let drifted = baseline.diff(&edited);
    assert_eq!(drifted.len(), 1, "{drifted:?}");
    assert_eq!(drifted[0].path, "/spec/replicas");
    assert_eq!(drifted[0].want, json!(1));
    assert_eq!(drifted[0].got, Some(json!(5)));
}

#[test]
fn an_item_added_to_a_list_of_scalars_is_drift() {
    let baseline = Baseline::record(&manifest(), &live(), &IgnoreRules::default());
    let mut edited = live();
    edited["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["a", "b", "c"]);
    let drifted = baseline.diff(&edited);
    assert_eq!(drifted[0].path, "/spec/template/spec/containers/0/args");
}

#[test]
fn annotation_keys_with_slashes_are_escaped_in_pointers() {
    let baseline = Baseline::record(&manifest(), &live(), &IgnoreRules::default());
    let mut edited = live();
    edited["metadata"]["annotations"]["drift.addon-operator.io/ignore"] = json!("");
    let drifted = baseline.diff(&edited);
    assert_eq!(
        drifted[0].path,
        "/metadata/annotations/drift.addon-operator.io~1ignore"
    );
}

#[test]
fn ignored_fields_are_left_out_of_the_baseline() {
    let settings = ObjectSettings::of(&manifest());
    let baseline = Baseline::record(&manifest(), &live(), &settings.ignore);
    let mut edited = live();
    edited["spec"]["replicas"] = json!(5);
    assert!(baseline.diff(&edited).is_empty());
}

#[test]
fn ignore_rules_match_wildcard_segments_and_the_fields_under_them() {
    let (rules, rejected) =
        IgnoreRules::parse("/spec/template/spec/containers/*/image,\n /metadata/labels, nope");
    assert_eq!(rejected, vec!["nope".to_string()]);
    assert!(rules.ignores("/spec/template/spec/containers/3/image"));
    assert!(rules.ignores("/metadata/labels/app"));
    assert!(!rules.ignores("/spec/template/spec/containers/3/name"));
    assert!(!rules.ignores("/spec/replicas"));
}

#[test]
fn a_field_gone_from_the_live_object_is_drift_restored_with_add() {
    let baseline = Baseline::record(&manifest(), &live(), &IgnoreRules::default());
    let mut edited = live();
    edited["metadata"]["labels"] = json!({});
    let drifted = baseline.diff(&edited);
    assert_eq!(drifted[0].got, None);
    let patch = Baseline::restore_patch(&drifted, Some("8")).unwrap();
    assert_eq!(
        serde_json::to_value(patch).unwrap(),
        json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "8"},
            {"op": "add", "path": "/metadata/labels/app", "value": "web"}])
    );
}

#[test]
fn the_restore_patch_replaces_each_drifted_field_with_its_baseline_value() {
    let baseline = Baseline::record(&manifest(), &live(), &IgnoreRules::default());
    let mut edited = live();
    edited["spec"]["replicas"] = json!(5);
    let patch = Baseline::restore_patch(&baseline.diff(&edited), None).unwrap();
    assert_eq!(
        serde_json::to_value(patch).unwrap(),
        json!([{"op": "replace", "path": "/spec/replicas", "value": 1}])
    );
}

#[test]
fn modes_parse_and_a_cap_lowers_enforce_to_warn() {
    assert_eq!(DriftMode::parse("Enforce"), Some(DriftMode::Enforce));
    assert_eq!(DriftMode::parse("off"), Some(DriftMode::Off));
    assert_eq!(DriftMode::parse("loud"), None);
    assert_eq!(DriftMode::Enforce.at_most(DriftMode::Warn), DriftMode::Warn);
    assert_eq!(DriftMode::Off.at_most(DriftMode::Warn), DriftMode::Off);
}

#[test]
fn an_object_annotation_sets_its_own_mode_and_a_bad_one_is_reported() {
    let object = json!({"metadata": {"annotations": {MODE_ANNOTATION: "off"}}});
    assert_eq!(
        ObjectSettings::of(&object).mode(DriftMode::Enforce),
        DriftMode::Off
    );
    let bad = json!({"metadata": {"annotations": {MODE_ANNOTATION: "loud"}}});
    let settings = ObjectSettings::of(&bad);
    assert_eq!(settings.mode(DriftMode::Warn), DriftMode::Warn);
    assert_eq!(settings.rejected.len(), 1);
}

#[test]
fn helm_hooks_are_recognised_by_their_annotation() {
    let hook = json!({"metadata": {"annotations": {"helm.sh/hook": "pre-install"}}});
    assert!(is_helm_hook(&hook));
    assert!(!is_helm_hook(&manifest()));
}

#[test]
fn a_field_restored_too_often_backs_off_then_is_enforced_again() {
    let mut guard = FightGuard::new(3, Duration::from_secs(60), Duration::from_secs(600));
    let start = Instant::now();
    let at = |s| start + Duration::from_secs(s);
    for s in 0..3 {
        assert_eq!(guard.check("web/spec/replicas", at(s)), Verdict::Restore);
    }
    assert!(matches!(
        guard.check("web/spec/replicas", at(3)),
        Verdict::BackOff { .. }
    ));
    assert_eq!(guard.check("web/spec/replicas", at(4)), Verdict::Paused);
    // another field is not affected
    assert_eq!(guard.check("web/spec/image", at(4)), Verdict::Restore);
    // after the pause the field is enforced again
    assert_eq!(guard.check("web/spec/replicas", at(604)), Verdict::Restore);
}

#[test]
fn restores_spread_over_more_than_the_window_never_back_off() {
    let mut guard = FightGuard::new(2, Duration::from_secs(10), Duration::from_secs(600));
    let start = Instant::now();
    for i in 0..10 {
        let now = start + Duration::from_secs(i * 6);
        assert_eq!(guard.check("f", now), Verdict::Restore, "restore {i}");
    }
}

#[test]
fn a_number_changed_before_the_baseline_was_read_is_still_drift() {
    let mut scaled = live();
    scaled["spec"]["replicas"] = json!(5);
    let baseline = Baseline::record(&manifest(), &scaled, &IgnoreRules::default());
    let drifted = baseline.diff(&scaled);
    assert_eq!(drifted.len(), 1, "{drifted:?}");
    assert_eq!(drifted[0].want, json!(1));
}
