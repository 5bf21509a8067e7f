//! Webhook reviews answered by the hooks of enabled modules and global hooks (fake hooks write the response file): denials with the hook's message, patches, conversions through a chain of hooks, and the webhooks going away with their module.

use addon_operator::edges::exec::hook_run::HookOutputs;
use addon_operator::edges::webhook::Reply;
use addon_operator::runtime::edges::HookFailure;
use std::time::Duration;

use addon_core::hook_config::FailurePolicy;
use addon_core::hook_output::kube_patch::KubeOperation;
use addon_core::webhook::ServiceRef;
use addon_operator::runtime::webhook_objects::{CaBundle, WebhookObjects};
use addon_operator_testkit::scenario::{Op, start, start_with_webhook_objects, tree};
use addon_operator_testkit::wait::wait_for_async;
use addon_operator_testkit::{FakeHelm, FakeHooks};
use base64::Engine as _;
use serde_json::{Value, json};

const VALIDATING: &str = r#"configVersion: v1
kubernetes:
- name: crontabs
  kind: CronTab
  executeHookOnEvent: []
kubernetesValidating:
- name: crontab-policy.example.com
  includeSnapshotsFrom: [crontabs]
  rules:
  - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
"#;

const MUTATING: &str = r#"configVersion: v1
kubernetesMutating:
- name: crontab-defaults.example.com
  rules:
  - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
"#;

const CONVERT_ALPHA: &str = r#"configVersion: v1
kubernetesCustomResourceConversion:
- name: alpha_to_beta
  crdName: crontabs.stable.example.com
  conversions:
  - {fromVersion: stable.example.com/v1alpha1, toVersion: stable.example.com/v1beta1}
"#;

const CONVERT_BETA: &str = r#"configVersion: v1
kubernetesCustomResourceConversion:
- name: beta_to_v1
  crdName: crontabs.stable.example.com
  conversions:
  - {fromVersion: v1beta1, toVersion: v1}
"#;

fn webhook_tree() -> tempfile::TempDir {
    tree(&[
        ("global-hooks/hooks/convert-beta", CONVERT_BETA),
        ("modules/values.yaml", "cronEnabled: true\n"),
        (
            "modules/010-cron/Chart.yaml",
            "name: cron\nversion: 0.1.0\n",
        ),
        ("modules/010-cron/hooks/policy", VALIDATING),
        ("modules/010-cron/hooks/defaults", MUTATING),
        ("modules/010-cron/hooks/convert-alpha", CONVERT_ALPHA),
    ])
}

fn response(text: &str) -> HookOutputs {
    HookOutputs {
        webhook_response: text.to_string(),
        ..HookOutputs::default()
    }
}

/// Converts every object of the review to `to` (keeps the rest of each object).
fn convert(context: &Value, to: &str) -> HookOutputs {
    let objects: Vec<Value> = context["review"]["request"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o["apiVersion"] = json!(to);
            o
        })
        .collect();
    response(&json!({ "convertedObjects": objects }).to_string())
}

/// The policy hook denies CronTabs named `bad`; the mutating hook adds replicas; the conversion
/// hooks convert.
fn webhook_hooks() -> FakeHooks {
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        let ctx = &call.binding_context[0];
        match (call.name.as_str(), ctx["type"].as_str()) {
            (_, Some("Validating")) => {
                let name = ctx["review"]["request"]["name"].as_str().unwrap_or("");
                Ok(response(&if name == "bad" {
                    r#"{"allowed": false, "message": "bad crontabs are not allowed"}"#.to_string()
                } else {
                    r#"{"allowed": true, "warnings": ["looked at it"]}"#.to_string()
                }))
            }
            (_, Some("Mutating")) => Ok(response(
                r#"{"allowed": true, "patch": [{"op": "add", "path": "/spec/replicas", "value": 3}]}"#,
            )),
            ("cron/hooks/convert-alpha", Some("Conversion")) => {
                Ok(convert(ctx, "stable.example.com/v1beta1"))
            }
            ("hooks/convert-beta", Some("Conversion")) => Ok(convert(ctx, "stable.example.com/v1")),
            _ => Ok(HookOutputs::default()),
        }
    });
    hooks
}

fn admission_review(name: &str) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{name}"),
            "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
            "resource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
            "name": name,
            "namespace": "default",
            "operation": "CREATE",
            "object": {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": name}}
        }
    })
}

fn review(reply: Reply) -> Value {
    match reply {
        Reply::Review(v) => v,
        Reply::BadRequest(m) => panic!("bad request: {m}"),
        Reply::Unavailable(m) => panic!("unavailable: {m}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_hook_past_its_timeout_is_an_error_so_the_failure_policy_decides() {
    let hooks = FakeHooks::new();
    hooks.respond(|_| Ok(response(r#"{"allowed":false,"message":"too late"}"#)));
    hooks.take_time(
        |call| match call.binding_context[0]["review"]["request"]["name"].as_str() {
            Some("sleepy") => Duration::from_secs(60),
            _ => Duration::ZERO,
        },
    );
    let op = start(webhook_tree(), "", hooks, FakeHelm::new()).await;
    op.settle().await;
    let answers = op.handle.admission_answers();
    let path = || "/hooks/crontab-policy-example-com".to_string();
    assert_eq!(
        answers.answer(path(), admission_review("sleepy")).await,
        Reply::Unavailable("hook 'hooks/policy' did not answer within 10s".into())
    );
    // an answer in time, even a denial, is still the hook's
    let denied = review(answers.answer(path(), admission_review("quick")).await);
    assert_eq!(denied["response"]["status"]["message"], "too late");
}

#[tokio::test(start_paused = true)]
async fn a_modules_validating_hook_denies_with_its_message_and_allows_the_rest() {
    let op = start(webhook_tree(), "", webhook_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let answers = op.handle.admission_answers();
    let path = "/hooks/crontab-policy-example-com".to_string();
    let denied = review(answers.answer(path.clone(), admission_review("bad")).await);
    assert_eq!(
        denied["response"],
        json!({"uid": "uid-bad", "allowed": false, "status": {"code": 403, "message": "bad crontabs are not allowed"}})
    );
    let allowed = review(answers.answer(path, admission_review("good")).await);
    assert_eq!(allowed["response"]["allowed"], true);
    assert_eq!(allowed["response"]["warnings"], json!(["looked at it"]));
    let call = op
        .hooks
        .calls()
        .into_iter()
        .find(|c| c.binding_context[0]["type"] == "Validating")
        .unwrap();
    let ctx = &call.binding_context[0];
    assert_eq!(ctx["binding"], "crontab-policy.example.com");
    assert_eq!(ctx["review"], admission_review("bad"));
    assert_eq!(ctx["snapshots"], json!({"crontabs": []}));
    assert_eq!(call.values["cron"], json!({}));
}

#[tokio::test(start_paused = true)]
async fn a_mutating_hooks_patch_is_sent_as_base64_json_patch() {
    let op = start(webhook_tree(), "", webhook_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let reply = op
        .handle
        .admission_answers()
        .answer(
            "/hooks/crontab-defaults-example-com".into(),
            admission_review("x"),
        )
        .await;
    let response = &review(reply)["response"];
    assert_eq!(response["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&patch).unwrap(),
        json!([{"op": "add", "path": "/spec/replicas", "value": 3}])
    );
}

#[tokio::test(start_paused = true)]
async fn a_disabled_modules_webhooks_are_not_answered_by_its_hooks() {
    let op = start(webhook_tree(), "", webhook_hooks(), FakeHelm::new()).await;
    op.settle().await;
    op.edit_config("cronEnabled: false\n").await;
    let calls_before = op.hooks.calls().len();
    let reply = op
        .handle
        .admission_answers()
        .answer(
            "/hooks/crontab-policy-example-com".into(),
            admission_review("bad"),
        )
        .await;
    let response = &review(reply)["response"];
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 500);
    assert_eq!(
        response["status"]["message"],
        "no enabled hook answers webhook 'crontab-policy-example-com' (its module may be disabled)"
    );
    assert_eq!(op.hooks.calls().len(), calls_before, "no hook ran");
}

#[tokio::test(start_paused = true)]
async fn a_failing_hook_or_garbage_denies_with_a_clear_message() {
    let hooks = FakeHooks::new();
    hooks.respond(
        |call| match call.binding_context[0]["review"]["request"]["name"].as_str() {
            Some("fail") => Err(HookFailure::new("exit status 1: boom")),
            Some("garbage") => Ok(response("allowed: yes")),
            Some("empty") => Ok(response("")),
            _ => Ok(HookOutputs::default()),
        },
    );
    let op = start(webhook_tree(), "", hooks, FakeHelm::new()).await;
    op.settle().await;
    let answers = op.handle.admission_answers();
    let message = |reply: Reply| review(reply)["response"]["status"]["message"].clone();
    let path = || "/hooks/crontab-policy-example-com".to_string();
    assert_eq!(
        message(answers.answer(path(), admission_review("fail")).await),
        "hook 'hooks/policy' failed: exit status 1: boom"
    );
    let garbage = message(answers.answer(path(), admission_review("garbage")).await);
    assert!(
        garbage
            .as_str()
            .unwrap()
            .starts_with("hook 'hooks/policy': $VALIDATING_RESPONSE_PATH not JSON"),
        "{garbage}"
    );
    assert_eq!(
        message(answers.answer(path(), admission_review("empty")).await),
        "hook 'hooks/policy': $VALIDATING_RESPONSE_PATH is empty"
    );
    // a review that is none is a bad request, not a denial
    let bad = answers
        .answer(path(), json!({"kind": "AdmissionReview"}))
        .await;
    assert_eq!(
        bad,
        Reply::BadRequest("bad review: missing parameters: request".into())
    );
}

fn conversion_review(objects: Value, desired: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "conv-1", "desiredAPIVersion": desired, "objects": objects}
    })
}

#[tokio::test(start_paused = true)]
async fn a_conversion_goes_through_a_module_hook_then_a_global_hook() {
    let op = start(webhook_tree(), "", webhook_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let objects = json!([
        {"apiVersion": "stable.example.com/v1alpha1", "kind": "CronTab", "metadata": {"name": "a"}},
        {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "b"}},
        {"apiVersion": "stable.example.com/v1beta1", "kind": "CronTab", "metadata": {"name": "c"}}
    ]);
    let reply = op
        .handle
        .conversion_answers()
        .answer(
            "/crontabs.stable.example.com".into(),
            conversion_review(objects, "stable.example.com/v1"),
        )
        .await;
    let response = &review(reply)["response"];
    assert_eq!(response["uid"], "conv-1");
    assert_eq!(response["result"], json!({"status": "Success"}));
    let converted = response["convertedObjects"].as_array().unwrap();
    let names: Vec<(&str, &str)> = converted
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap(),
                o["apiVersion"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("a", "stable.example.com/v1"),
            ("b", "stable.example.com/v1"),
            ("c", "stable.example.com/v1")
        ]
    );
    let steps: Vec<(String, Value, Value)> = op
        .hooks
        .calls()
        .into_iter()
        .filter(|c| c.binding_context[0]["type"] == "Conversion")
        .map(|c| {
            let ctx = &c.binding_context[0];
            (
                c.name.clone(),
                ctx["fromVersion"].clone(),
                ctx["toVersion"].clone(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (
                "cron/hooks/convert-alpha".to_string(),
                json!("stable.example.com/v1alpha1"),
                json!("stable.example.com/v1beta1")
            ),
            (
                "hooks/convert-beta".to_string(),
                json!("v1beta1"),
                json!("v1")
            ),
            (
                "hooks/convert-beta".to_string(),
                json!("v1beta1"),
                json!("v1")
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_conversion_without_a_chain_or_with_a_failed_hook_fails_with_the_reason() {
    let op = start(webhook_tree(), "", webhook_hooks(), FakeHelm::new()).await;
    op.settle().await;
    let answers = op.handle.conversion_answers();
    let objects = json!([{"apiVersion": "stable.example.com/v1", "kind": "CronTab"}]);
    let back = answers
        .answer(
            "/crontabs.stable.example.com".into(),
            conversion_review(objects, "stable.example.com/v1alpha1"),
        )
        .await;
    assert_eq!(
        review(back)["response"]["result"],
        json!({"status": "Failure", "message": "no conversion from stable.example.com/v1 to stable.example.com/v1alpha1"})
    );
    op.edit_config("cronEnabled: false\n").await;
    let objects = json!([{"apiVersion": "stable.example.com/v1alpha1", "kind": "CronTab"}]);
    let disabled = answers
        .answer(
            "/crontabs.stable.example.com".into(),
            conversion_review(objects, "stable.example.com/v1"),
        )
        .await;
    assert_eq!(
        review(disabled)["response"]["result"]["message"],
        "no conversion from stable.example.com/v1alpha1 to stable.example.com/v1"
    );
}

fn webhook_objects() -> WebhookObjects {
    let service = |name: &str| ServiceRef {
        namespace: "addon-operator".into(),
        name: name.into(),
    };
    WebhookObjects {
        configuration_name: "addon-operator-hooks".into(),
        admission_service: service("validating-svc"),
        conversion_service: service("conversion-svc"),
        failure_policy: FailurePolicy::Ignore,
        admission_ca: CaBundle::Fixed(Some("Q0E=".into())),
        conversion_ca: CaBundle::Fixed(Some("Q0E=".into())),
        embedded_endpoints: None,
    }
}

/// The objects the fake cluster holds now: (kind, name) → object, from the applied operations.
fn cluster_objects(op: &Op) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for applied in op.kube.applied() {
        match applied {
            KubeOperation::Create { object, .. } => {
                let kind = object["kind"].as_str().unwrap().to_string();
                out.retain(|(k, _)| *k != kind);
                out.push((kind, object));
            }
            KubeOperation::Delete { target, .. } => out.retain(|(k, _)| *k != target.kind),
            _ => {}
        }
    }
    out
}

fn webhook_names(object: &Value) -> Vec<String> {
    object["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect()
}

fn crd_patches(op: &Op) -> Vec<Value> {
    op.kube
        .applied()
        .into_iter()
        .filter_map(|o| match o {
            KubeOperation::MergePatch { target, patch, .. }
                if target.kind == "CustomResourceDefinition" =>
            {
                assert_eq!(target.name, "crontabs.stable.example.com");
                Some(patch["spec"]["conversion"].clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_webhook_configurations_follow_the_enabled_modules() {
    let op =
        start_with_webhook_objects(webhook_tree(), "", webhook_hooks(), webhook_objects()).await;
    op.settle().await;
    let context = || format!("applied: {:?}", op.kube.applied());
    wait_for_async(
        "both configurations",
        Duration::from_secs(30),
        || async { cluster_objects(&op).len() == 2 },
        context,
    )
    .await;
    let objects = cluster_objects(&op);
    let (kind, validating) = &objects[0];
    assert_eq!(kind, "ValidatingWebhookConfiguration");
    assert_eq!(validating["metadata"]["name"], "addon-operator-hooks");
    assert_eq!(webhook_names(validating), ["crontab-policy.example.com"]);
    let entry = &validating["webhooks"][0];
    assert_eq!(entry["failurePolicy"], "Ignore");
    assert_eq!(
        entry["clientConfig"],
        json!({"service": {"namespace": "addon-operator", "name": "validating-svc", "path": "/hooks/crontab-policy-example-com"}, "caBundle": "Q0E="})
    );
    let (kind, mutating) = &objects[1];
    assert_eq!(kind, "MutatingWebhookConfiguration");
    assert_eq!(webhook_names(mutating), ["crontab-defaults.example.com"]);
    let patches = crd_patches(&op);
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0]["strategy"], "Webhook");
    assert_eq!(
        patches[0]["webhook"]["clientConfig"]["service"]["path"],
        "/crontabs.stable.example.com"
    );

    op.edit_config("cronEnabled: false\n").await;
    wait_for_async(
        "the module's webhooks to go",
        Duration::from_secs(30),
        || async { cluster_objects(&op).is_empty() },
        || format!("applied: {:?}", op.kube.applied()),
    )
    .await;
    // the global hook still converts that CRD: its conversion stays
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(crd_patches(&op).len(), 1);
}
