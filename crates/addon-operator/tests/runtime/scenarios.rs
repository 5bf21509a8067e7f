//! The lifecycle scenarios of the specification, each as an ordered history.

use addon_operator::exec::hook_run::HookOutputs;
use addon_operator::helm::fake::{FakeHelm, HelmCall};
use addon_operator::runtime::FakeHooks;

use crate::harness::{start, tree, values_patch};

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
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        if call.name.ends_with("/enabled") {
            Ok(values_patch("true"))
        } else {
            Ok(HookOutputs::default())
        }
    });
    hooks
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
