//! Metrics the runtime records, read from its registry under paused time: queue waits of retried
//! tasks, and the resource monitor's drift counters.

use std::time::Duration;

use addon_operator::edges::helm::Drift;
use addon_operator::edges::helm::fake::FakeHelm;
use addon_operator::runtime::FakeHooks;

use crate::harness::{Op, flaky, start, tree};

/// The value of the sample whose line starts with `prefix` (name and labels).
fn value(op: &Op, prefix: &str) -> Option<f64> {
    let text = op.handle.metrics().encode();
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(start_paused = true)]
async fn a_retried_task_adds_its_retry_delays_to_the_wait_in_queue() {
    let dir = tree(&[(
        "global-hooks/hooks/flaky",
        "configVersion: v1\nonStartup: 1\n",
    )]);
    let hooks = flaky(3, "boom");
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    // queued at 0 and started at once, then 5 s, 10 s and 20 s of retry delays
    let waited = value(
        &op,
        r#"addon_operator_task_wait_in_queue_seconds_total{module="",hook="hooks/flaky",binding="onStartup",queue="main"}"#,
    );
    assert_eq!(waited, Some(35.0));
    let converge = value(
        &op,
        r#"addon_operator_task_wait_in_queue_seconds_total{module="",hook="",binding="ConvergeModules",queue="main"}"#,
    );
    assert!(converge.is_some_and(|w| w >= 35.0), "{converge:?}");
    let added = value(
        &op,
        r#"addon_operator_tasks_queue_action_duration_seconds_count{queue_name="main",queue_action="AddLast"}"#,
    );
    assert!(added.is_some_and(|n| n >= 2.0), "{added:?}");
}

#[tokio::test(start_paused = true)]
async fn the_resource_monitor_counts_absent_objects_and_redeployed_releases() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
    ]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    let absent = vec!["default/ConfigMap/a".to_string(), "Namespace/b".to_string()];
    op.helm.drift_because("web", Drift::AbsentResources(absent));
    tokio::time::sleep(Duration::from_secs(301)).await;
    op.settle().await;
    op.helm
        .drift_because("web", Drift::UnexpectedStatus("failed".into()));
    tokio::time::sleep(Duration::from_secs(300)).await;
    op.settle().await;
    let counted = |resource: &str| {
        value(
            &op,
            &format!(
                r#"addon_operator_modules_absent_resources_total{{module="web",resource="{resource}"}}"#
            ),
        )
    };
    assert_eq!(counted("default/ConfigMap/a"), Some(1.0));
    assert_eq!(counted("Namespace/b"), Some(1.0));
    let redeployed = value(
        &op,
        r#"addon_operator_modules_helm_release_redeployed_total{module="web"}"#,
    );
    assert_eq!(redeployed, Some(1.0));
}
