//! What the runtime reports to admins through the `Reporter` port: a failing hook's Event names
//! the hook, its binding and the retry, and the module's status shows the error until a run
//! succeeds; a release install and a refused config edit are Events too.

use std::time::Duration;

use addon_core::config::Config;
use addon_core::names::ModuleName;
use addon_operator::runtime::edges::{Owner, Severity, StatusUpdate, Subject};
use addon_operator_testkit::scenario::{flaky, start, tree};
use addon_operator_testkit::{FakeHelm, FakeHooks};

fn web() -> tempfile::TempDir {
    tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/openapi/config-values.yaml",
            "type: object\nproperties:\n  replicas: {type: integer}\n",
        ),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ])
}

#[tokio::test(start_paused = true)]
async fn a_failing_hook_is_an_event_and_the_status_until_the_retry_succeeds() {
    let op = start(
        web(),
        "",
        flaky(1, "exit status 3, stderr:\nboom"),
        FakeHelm::new(),
    )
    .await;
    op.settle().await;
    let module = ModuleName::new("web").unwrap();
    let events = op.reports.events();
    let failed = events
        .iter()
        .find(|e| e.reason == "HookFailed")
        .expect("a HookFailed Event");
    assert_eq!(failed.subject, Subject::Module(module.clone()));
    assert_eq!(failed.severity, Severity::Warning);
    for part in ["before", "binding beforeHelm", "retry in 5s", "boom"] {
        assert!(failed.message.contains(part), "{part}: {}", failed.message);
    }
    let installed = events
        .iter()
        .find(|e| e.subject == Subject::Module(module.clone()) && e.severity == Severity::Normal);
    assert!(
        installed.is_some_and(|e| e.reason == "Upgraded" || e.reason == "Installed"),
        "{events:?}"
    );
    let statuses: Vec<StatusUpdate> = (op.reports.statuses().into_iter())
        .filter(|(owner, _)| *owner == Owner::Module(module.clone()))
        .map(|(_, update)| update)
        .collect();
    let failed_at = statuses.iter().position(|u| matches!(u, StatusUpdate::Failed(e) if e.binding == "beforeHelm" && e.hook.contains("before")));
    let ready_at = statuses
        .iter()
        .rposition(|u| matches!(u, StatusUpdate::Ready { .. }));
    assert!(failed_at.is_some() && ready_at > failed_at, "{statuses:?}");
    assert!(statuses.contains(&StatusUpdate::Enablement {
        enabled: true,
        reason: String::new()
    }));
}

#[tokio::test(start_paused = true)]
async fn a_config_edit_the_schema_refuses_is_an_event_on_its_module() {
    let op = start(web(), "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    let edit = Config::from_file("config.yaml", "web: |\n  replicas: many\n").unwrap();
    op.config.edit(Ok(edit));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let events = op.reports.events();
    let refused = events
        .iter()
        .find(|e| e.reason == "ConfigRefused")
        .expect("a ConfigRefused Event");
    assert_eq!(
        refused.subject,
        Subject::Module(ModuleName::new("web").unwrap())
    );
    assert!(refused.message.contains("replicas"), "{}", refused.message);
}

#[tokio::test(start_paused = true)]
async fn a_failed_helm_run_and_a_disabled_module_are_events_on_the_module() {
    let helm = FakeHelm::new();
    helm.fail_next_upgrade("web");
    let op = start(web(), "", FakeHooks::new(), helm).await;
    op.settle().await;
    let module = ModuleName::new("web").unwrap();
    let on_web = |reason: &str| {
        (op.reports.events().into_iter())
            .find(|e| e.reason == reason && e.subject == Subject::Module(module.clone()))
    };
    let failed = on_web("ModuleRunFailed").expect("a ModuleRunFailed Event");
    assert_eq!(failed.severity, Severity::Warning);
    assert!(failed.message.contains("retry"), "{}", failed.message);
    assert!(on_web("Installed").is_some() || on_web("Upgraded").is_some());

    op.edit_config("webEnabled: false\n").await;
    op.settle().await;
    let deleted = on_web("Deleted").expect("a Deleted Event");
    assert_eq!(deleted.severity, Severity::Normal);
    let statuses = op.reports.statuses();
    assert!(
        statuses
            .iter()
            .any(|(o, u)| *o == Owner::Module(module.clone()) && *u == StatusUpdate::Deleted),
        "{statuses:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_module_whose_requirement_does_not_hold_says_so_in_its_status() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/module.yaml",
            "requirements:\n  modules:\n    db: \">= 1.0\"\n",
        ),
    ]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    let module = ModuleName::new("web").unwrap();
    let reason = (op.reports.statuses().into_iter()).find_map(|(owner, update)| match update {
        StatusUpdate::Enablement {
            enabled: false,
            reason,
        } if owner == Owner::Module(module.clone()) => Some(reason),
        _ => None,
    });
    let reason = reason.expect("an Enablement update for web");
    assert!(
        reason.starts_with("a requirement does not hold: "),
        "{reason}"
    );
    assert!(reason.contains("db"), "{reason}");
}
