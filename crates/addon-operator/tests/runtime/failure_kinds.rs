//! A failed task keeps the kind of what failed (hook, Helm, values, ...) next to its message, so
//! the queue, the logs and the status read the kind instead of matching the text.

use std::time::Duration;

use addon_core::error::{Failure, FailureKind};
use addon_operator_testkit::scenario::{failing, start, tree};
use addon_operator_testkit::{FakeHelm, FakeHooks};

fn web_with_chart_and_hook() -> tempfile::TempDir {
    tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ])
}

#[tokio::test(start_paused = true)]
async fn a_failing_helm_upgrade_is_recorded_as_a_helm_failure() {
    let helm = FakeHelm::new();
    helm.fail_next_upgrade("web");
    let op = start(web_with_chart_and_hook(), "", FakeHooks::new(), helm).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let failure = op
        .handle
        .first_failure_record()
        .expect("the module run failed");
    assert_eq!(failure.kind, FailureKind::Helm);
    let text = op.handle.metrics().encode();
    assert!(
        text.contains(r#"addon_operator_task_failures_total{queue="main",kind="helm"} 1"#),
        "{text}"
    );
    assert!(!text.contains(r#"kind="hook""#), "{text}");
    assert!(
        failure
            .message
            .starts_with("module 'web': helm upgrade of release 'web' failed"),
        "{}",
        failure.message
    );
    op.settle().await;
    assert_eq!(
        op.handle.first_failure_record(),
        None,
        "the retry succeeded"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_hook_in_the_same_module_run_is_recorded_as_a_hook_failure() {
    let hooks = failing("web/hooks/before", "broken hook");
    let op = start(web_with_chart_and_hook(), "", hooks, FakeHelm::new()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        op.handle.first_failure_record(),
        Some(Failure::new(FailureKind::Hook, "module 'web': broken hook"))
    );
    let metrics = op.handle.metrics().encode();
    assert!(
        metrics.contains(r#"addon_operator_task_failures_total{queue="main",kind="hook"}"#),
        "{metrics}"
    );
    let text = op.handle.queues_text();
    assert!(
        text.contains(":failures 1:module 'web': broken hook"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_enabled_script_is_recorded_as_a_hook_failure_of_discovery() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/enabled", "#!/bin/sh\n"),
    ]);
    let hooks = failing("web/enabled", "enabled script crashed");
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        op.handle.first_failure_record(),
        Some(Failure::new(FailureKind::Hook, "enabled script crashed"))
    );
}
