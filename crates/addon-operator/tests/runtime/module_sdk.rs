//! The module-sdk extras of the Go operator as the runtime sees them: the reason an `enabled`
//! script gives, settings checks of config edits, maintenance mode.

use addon_core::names::ModuleName;
use addon_operator::edges::exec::hook_run::HookOutputs;
use addon_operator::runtime::edges::StatusSource;
use addon_operator_testkit::scenario::{start, tree};
use addon_operator_testkit::{FakeHelm, FakeHooks};

/// An `enabled` script that disables `web` with a reason until `enable` is set.
fn web_with_script() -> tempfile::TempDir {
    tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/enabled", "#!/bin/sh\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
    ])
}

#[tokio::test(start_paused = true)]
async fn the_reason_an_enabled_script_gives_is_kept_and_shown_by_the_debug_api() {
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        // the fake's enabled answer: result in values_patch, reason in config_values_patch
        Ok(match call.name.as_str() {
            "web/enabled" => HookOutputs {
                values_patch: "false".into(),
                config_values_patch: "no nodes with label role=web\n".into(),
                ..Default::default()
            },
            _ => HookOutputs::default(),
        })
    });
    let op = start(web_with_script(), "", hooks, FakeHelm::new()).await;
    op.settle().await;
    let web = ModuleName::new("web").unwrap();
    assert!(!op.handle.enabled_modules().contains(&web));
    let reasons = StatusSource::disabled_reasons(&op.handle);
    assert_eq!(
        reasons.get("web").map(String::as_str),
        Some("no nodes with label role=web")
    );
}

/// `web` with a settings check that refuses `replicas: 0` and warns above 3.
fn web_with_check() -> (tempfile::TempDir, FakeHooks) {
    let dir = tree(&[
        (
            "modules/values.yaml",
            "webEnabled: true\nweb: {replicas: 1}\n",
        ),
        ("modules/010-web/settings-check", "#!/bin/sh\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        if call.name != "web/check" {
            return Ok(HookOutputs::default());
        }
        let verdict = match call.config_values["replicas"].as_i64() {
            Some(0) => r#"{"valid":false,"message":"replicas cannot be 0","warnings":null}"#,
            Some(n) if n > 3 => r#"{"valid":true,"message":"","warnings":["many replicas"]}"#,
            _ => "",
        };
        Ok(HookOutputs {
            values_patch: verdict.into(),
            ..Default::default()
        })
    });
    (dir, hooks)
}

#[tokio::test(start_paused = true)]
async fn an_edit_the_settings_check_refuses_changes_nothing_and_one_it_allows_runs_the_module() {
    let (dir, hooks) = web_with_check();
    let op = start(dir, "", hooks.clone(), FakeHelm::new()).await;
    op.settle().await;
    let runs = op.edit_config("web: {replicas: 0}\n").await;
    assert!(runs.is_empty(), "a refused edit queues nothing: {runs:?}");
    let config = |op: &addon_operator_testkit::scenario::Op| {
        StatusSource::module_config(&op.handle, "web").unwrap()
    };
    assert_eq!(config(&op), serde_json::json!({}));
    let checked: Vec<_> = (hooks.calls().into_iter())
        .filter(|c| c.name == "web/check")
        .map(|c| c.config_values)
        .collect();
    assert_eq!(checked, [serde_json::json!({"replicas": 0})]);
    let refused: Vec<_> = (op.reports.events().into_iter())
        .filter(|e| e.reason == "ConfigRefused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(
        refused[0].subject,
        addon_operator::runtime::edges::Subject::Module(
            addon_core::names::ModuleName::new("web").unwrap()
        )
    );
    assert!(refused[0].message.contains("settings check"), "{refused:?}");

    let runs = op.edit_config("web: {replicas: 5}\n").await;
    assert_eq!(runs, ["run web/hooks/before beforeHelm"]);
    assert_eq!(config(&op)["replicas"], 5);
}

#[tokio::test(start_paused = true)]
async fn an_edit_that_leaves_the_section_alone_is_not_checked() {
    let (dir, hooks) = web_with_check();
    let op = start(dir, "", hooks.clone(), FakeHelm::new()).await;
    op.settle().await;
    op.edit_config("global: {a: 1}\n").await;
    assert!(!hooks.names().iter().any(|n| n == "web/check"));
}

fn web_with_chart() -> tempfile::TempDir {
    tree(&[
        (
            "modules/values.yaml",
            "webEnabled: true\nweb: {replicas: 1}\n",
        ),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
    ])
}

#[tokio::test(start_paused = true)]
async fn in_maintenance_the_release_is_labelled_once_then_left_alone_while_hooks_run() {
    let config = "webMaintenance: NoResourceReconciliation\n";
    let op = start(web_with_chart(), config, FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        op.helm.maintenance_of_upgrades(),
        [true],
        "labelled at the first run"
    );

    let runs = op
        .edit_config("webMaintenance: NoResourceReconciliation\nweb: {replicas: 2}\n")
        .await;
    assert_eq!(
        runs,
        [
            "run web/hooks/before beforeHelm",
            "helm skipped web (maintenance)"
        ]
    );
    assert_eq!(op.helm.maintenance_of_upgrades(), [true]);

    // the resource monitor leaves a module in maintenance alone
    op.helm.drift("web");
    let mark = op.clear_history_marker();
    tokio::time::sleep(std::time::Duration::from_secs(600)).await;
    op.settle().await;
    assert!(op.runs_since(mark).is_empty(), "{:?}", op.runs_since(mark));

    // leaving maintenance runs the module and upgrades without the label
    let runs = op.edit_config("web: {replicas: 2}\n").await;
    assert_eq!(
        runs,
        ["run web/hooks/before beforeHelm", "helm upgrade web"]
    );
    assert_eq!(op.helm.maintenance_of_upgrades(), [true, false]);
    assert!(
        !op.handle
            .metrics()
            .encode()
            .contains("mm_module_maintenance{")
    );
}
