//! Scenarios of the state-ownership issue: hook rate limits (`settings`) and the purge of
//! releases without a module.

use addon_core::hook_output::kube_patch::{CreateMode, KubeOperation};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use addon_core::hook_config::WatchEvent;
use addon_operator::edges::exec::hook_run::HookOutputs;
use addon_operator_testkit::FakeHelm;
use addon_operator_testkit::FakeHooks;

use addon_operator_testkit::scenario::{start, start_keeping, tree};

fn crontab(name: &str) -> serde_json::Value {
    serde_json::json!({"kind": "CronTab", "metadata": {"name": name, "namespace": "default"}})
}

/// shell-operator's example 220-execution-rate with burst 1 and an interval of 1 s: six quick
/// events give one run at once and one run a second later with the five that waited.
#[tokio::test(start_paused = true)]
async fn six_quick_events_of_a_rate_limited_hook_give_two_runs_with_combined_contexts() {
    let dir = tree(&[(
        "global-hooks/hooks/limited",
        "configVersion: v1\nsettings:\n  executionMinInterval: 1s\n  executionBurst: 1\nkubernetes:\n- name: crontabs\n  kind: CronTab\n  executeHookOnSynchronization: false\n",
    )]);
    let hooks = FakeHooks::new();
    let times = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&times);
    hooks.respond(move |call| {
        if call.name == "hooks/limited" {
            seen.lock().unwrap().push(tokio::time::Instant::now());
        }
        Ok(HookOutputs::default())
    });
    let op = start(dir, "", hooks, FakeHelm::new()).await;
    op.settle().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let begin = tokio::time::Instant::now();
    for i in 0..6 {
        op.kube.emit(WatchEvent::Added, crontab(&format!("c{i}")));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    op.settle().await;
    let runs: Vec<usize> = op
        .hooks
        .calls()
        .iter()
        .filter(|c| c.name == "hooks/limited")
        .map(|c| c.binding_context.as_array().unwrap().len())
        .collect();
    assert_eq!(runs, [1, 5], "{:?}", op.runs());
    let times = times.lock().unwrap().clone();
    let offsets: Vec<Duration> = times.iter().map(|t| t.duration_since(begin)).collect();
    assert!(offsets[0] < Duration::from_millis(50), "{offsets:?}");
    assert!(offsets[1] >= Duration::from_secs(1), "{offsets:?}");
    assert!(offsets[1] < Duration::from_millis(1100), "{offsets:?}");
}

/// Without `settings` every event runs the hook as soon as it comes.
#[tokio::test(start_paused = true)]
async fn a_hook_without_settings_runs_for_every_spaced_event() {
    let dir = tree(&[(
        "global-hooks/hooks/free",
        "configVersion: v1\nkubernetes:\n- name: crontabs\n  kind: CronTab\n  executeHookOnSynchronization: false\n",
    )]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    for i in 0..6 {
        op.kube.emit(WatchEvent::Added, crontab(&format!("c{i}")));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    op.settle().await;
    let runs = op
        .hooks
        .calls()
        .iter()
        .filter(|c| c.name == "hooks/free")
        .count();
    assert_eq!(runs, 6);
}

/// A burst of 3 lets three spaced events run at once, then one run per interval.
#[tokio::test(start_paused = true)]
async fn a_burst_of_three_runs_three_events_at_once_then_waits() {
    let dir = tree(&[(
        "global-hooks/hooks/bursty",
        "configVersion: v1\nsettings:\n  executionMinInterval: 10s\n  executionBurst: 3\nkubernetes:\n- name: crontabs\n  kind: CronTab\n  executeHookOnSynchronization: false\n",
    )]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    for i in 0..6 {
        op.kube.emit(WatchEvent::Added, crontab(&format!("c{i}")));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    op.settle().await;
    let runs: Vec<usize> = op
        .hooks
        .calls()
        .iter()
        .filter(|c| c.name == "hooks/bursty")
        .map(|c| c.binding_context.as_array().unwrap().len())
        .collect();
    assert_eq!(runs, [1, 1, 1, 3]);
}

/// Upstream purges releases without a module once, at startup; an ignored release and one
/// installed after startup stay, also after 'reload all modules'.
#[tokio::test(start_paused = true)]
async fn releases_without_a_module_are_purged_at_startup_only_and_kept_ones_never() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
    ]);
    let helm = FakeHelm::new()
        .with_release("before-startup")
        .with_release("ignored");
    let op = start_keeping(dir, "", FakeHooks::new(), helm, &["ignored"]).await;
    op.settle().await;
    assert_eq!(op.helm.release_names(), ["ignored", "web"]);
    op.helm.add_release("after-startup");
    let runs = op.edit_config("global: {a: 2}\n").await;
    assert!(runs.contains(&"helm upgrade web".to_string()), "{runs:?}");
    assert!(!runs.iter().any(|r| r.contains("uninstall")), "{runs:?}");
    assert_eq!(op.helm.release_names(), ["after-startup", "ignored", "web"]);
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crontabs.example.com\nspec:\n  group: example.com\n";

/// The module's `crds/` are applied first in its run: before its onStartup hooks, its
/// kubernetes bindings and its release; again only when the files change.
#[tokio::test(start_paused = true)]
async fn crds_of_a_module_are_applied_before_its_hooks_and_release() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        ("modules/010-web/crds/crontab.yaml", CRD),
        (
            "modules/010-web/hooks/watch",
            "configVersion: v1\nonStartup: 1\nkubernetes:\n- name: crontabs\n  kind: CronTab\n",
        ),
    ]);
    let op = start(dir, "", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(
        op.runs(),
        [
            "ensure crds web",
            "run web/hooks/watch onStartup",
            "run web/hooks/watch kubernetes",
            "helm upgrade web",
        ]
    );
    // created when missing, else only the file's spec, labels and annotations merged in (what
    // other tools added to the CRD, e.g. a conversion webhook's CA bundle, is kept)
    let applied = op.kube.applied();
    assert_eq!(applied.len(), 2, "{applied:?}");
    assert!(matches!(
        &applied[0],
        KubeOperation::Create {
            mode: CreateMode::CreateIfNotExists,
            ..
        }
    ));
    let KubeOperation::MergePatch { target, patch, .. } = &applied[1] else {
        panic!("not a merge patch: {:?}", applied[1]);
    };
    assert_eq!(target.kind, "CustomResourceDefinition");
    assert!(patch.get("spec").is_some() && patch["spec"].get("conversion").is_none());
    let runs = op.edit_config("web: {a: 1}\n").await;
    assert!(
        !runs.iter().any(|r| r.starts_with("ensure crds")),
        "{runs:?}"
    );
}

const VERSIONED_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.example.com
  labels: {owner: web}
spec:
  group: example.com
  names: {kind: CronTab, plural: crontabs}
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v1beta1, served: true, storage: false}
";

/// As upstream's ModuleEnsureCRDs: the CRDs carry `--crd-extra-labels` (default
/// `heritage=addon-operator`) over their own labels, and their `group/version/Kind`s appear,
/// sorted, in `global.discovery.apiVersions` of the module's hooks and Helm values.
#[tokio::test(start_paused = true)]
async fn module_crds_are_labelled_and_listed_in_global_discovery_api_versions() {
    let dir = tree(&[
        ("modules/values.yaml", "webEnabled: true\n"),
        ("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n"),
        ("modules/010-web/crds/crontab.yaml", VERSIONED_CRD),
        (
            "modules/010-web/hooks/after",
            "configVersion: v1\nafterHelm: 1\n",
        ),
    ]);
    let hooks = FakeHooks::new();
    let helm = FakeHelm::new();
    let op = start(dir, "", hooks.clone(), helm.clone()).await;
    op.settle().await;
    let applied = op.kube.applied();
    let KubeOperation::Create { object, .. } = &applied[0] else {
        panic!("not a create: {:?}", applied[0]);
    };
    assert_eq!(
        object["metadata"]["labels"],
        serde_json::json!({"owner": "web", "heritage": "addon-operator"})
    );
    let expected = serde_json::json!(["example.com/v1/CronTab", "example.com/v1beta1/CronTab"]);
    let after = hooks
        .calls()
        .into_iter()
        .find(|c| c.name == "web/hooks/after")
        .expect("afterHelm ran");
    assert_eq!(after.values["global"]["discovery"]["apiVersions"], expected);
    let upgrade = helm
        .calls()
        .into_iter()
        .find_map(|c| match c {
            addon_operator_testkit::HelmCall::Upgrade { values_yaml, .. } => Some(values_yaml),
            _ => None,
        })
        .expect("helm upgrade ran");
    let values = addon_core::yaml::parse(&upgrade).unwrap();
    assert_eq!(values["global"]["discovery"]["apiVersions"], expected);
    // the new apiVersions do not start a second converge (the module would run again)
    assert_eq!(
        op.runs(),
        [
            "ensure crds web",
            "helm upgrade web",
            "run web/hooks/after afterHelm"
        ]
    );
}
