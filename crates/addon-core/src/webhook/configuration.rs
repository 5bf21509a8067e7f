//! The cluster objects that register hooks as webhooks: the entries of a Validating/MutatingWebhookConfiguration, the merge that keeps others' entries, and a CRD's `spec.conversion`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::hook_config::{AdmissionBinding, AdmissionKind, FailurePolicy, SideEffects};

/// The annotation listing the webhook names the operator wrote in a configuration, so that a
/// later write removes exactly those and keeps the entries others added.
pub const OWNED_WEBHOOKS_ANNOTATION: &str = "addon-operator.flant.com/webhooks";

/// The Service the API server calls (port 443 of the Service, which forwards to the listen port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
}

fn client_config(service: &ServiceRef, path: &str, ca_bundle: Option<&str>) -> Value {
    let mut config = Map::new();
    config.insert(
        "service".into(),
        json!({"namespace": service.namespace, "name": service.name, "path": path}),
    );
    if let Some(ca) = ca_bundle {
        config.insert("caBundle".into(), json!(ca));
    }
    Value::Object(config)
}

/// One `webhooks` item for `binding`: its rules, selectors and settings, `matchPolicy:
/// Equivalent`, review versions v1 and v1beta1, and the client config pointing at `service` with
/// the base64 `ca_bundle`. `default_policy` applies when the binding sets no `failurePolicy`.
pub fn webhook_entry(
    binding: &AdmissionBinding,
    service: &ServiceRef,
    ca_bundle: Option<&str>,
    default_policy: FailurePolicy,
) -> Value {
    let mut w = Map::new();
    w.insert("name".into(), json!(binding.name));
    w.insert("rules".into(), json!(binding.rules));
    let policy = binding.failure_policy.unwrap_or(default_policy);
    w.insert("failurePolicy".into(), json!(policy.as_str()));
    let side_effects = match binding.side_effects {
        SideEffects::None => "None",
        SideEffects::NoneOnDryRun => "NoneOnDryRun",
    };
    w.insert("sideEffects".into(), json!(side_effects));
    w.insert("timeoutSeconds".into(), json!(binding.timeout_seconds));
    w.insert("matchPolicy".into(), json!("Equivalent"));
    w.insert("admissionReviewVersions".into(), json!(["v1", "v1beta1"]));
    w.insert(
        "clientConfig".into(),
        client_config(service, &binding.path(), ca_bundle),
    );
    if let Some(s) = &binding.object_selector {
        w.insert("objectSelector".into(), json!(s));
    }
    if let Some(s) = &binding.namespace_selector {
        w.insert("namespaceSelector".into(), json!(s));
    }
    if !binding.match_conditions.is_empty() {
        w.insert("matchConditions".into(), json!(binding.match_conditions));
    }
    if binding.kind == AdmissionKind::Mutating {
        w.insert("reinvocationPolicy".into(), json!("Never"));
    }
    Value::Object(w)
}

/// The kind of the configuration object holding webhooks of `kind`.
pub fn configuration_kind(kind: AdmissionKind) -> &'static str {
    match kind {
        AdmissionKind::Validating => "ValidatingWebhookConfiguration",
        AdmissionKind::Mutating => "MutatingWebhookConfiguration",
    }
}

/// The configuration to write given the one in the cluster (`None` if absent) and the entries
/// of the enabled hooks: entries the operator wrote before (per the annotation) are replaced by
/// `ours`, others' entries, labels and annotations stay. `None` means delete the object: it held
/// only entries the operator wrote and none is wanted now. A configuration without the
/// annotation and no entry to add is returned as it is (someone else's, even when empty).
pub fn merge_configuration(
    kind: AdmissionKind,
    name: &str,
    existing: Option<&Value>,
    ours: Vec<Value>,
) -> Option<Value> {
    let previous: BTreeSet<String> = existing
        .and_then(|e| e["metadata"]["annotations"][OWNED_WEBHOOKS_ANNOTATION].as_str())
        .map(|list| {
            list.split(',')
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if ours.is_empty() && previous.is_empty() {
        // nothing of ours is in it and nothing is to be added: not ours to change or delete
        return existing.cloned();
    }
    let our_names: BTreeSet<String> = ours
        .iter()
        .filter_map(|w| w["name"].as_str().map(str::to_string))
        .collect();
    let mut webhooks: Vec<Value> = existing
        .and_then(|e| e["webhooks"].as_array())
        .map(|items| {
            items
                .iter()
                .filter(|w| {
                    let n = w["name"].as_str().unwrap_or_default();
                    !previous.contains(n) && !our_names.contains(n)
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if webhooks.is_empty() && ours.is_empty() {
        return None;
    }
    webhooks.extend(ours);
    let mut object = existing.cloned().unwrap_or_else(|| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": configuration_kind(kind),
            "metadata": {"name": name},
        })
    });
    let owned = our_names.into_iter().collect::<Vec<_>>().join(",");
    if let Some(meta) = object["metadata"].as_object_mut() {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(OWNED_WEBHOOKS_ANNOTATION.into(), json!(owned));
        }
    }
    object["webhooks"] = Value::Array(webhooks);
    Some(object)
}

/// A CRD's `spec.conversion` pointing at the conversion server: strategy Webhook, review
/// versions v1 and v1beta1, path `/<crdName>`.
pub fn conversion_stanza(crd_name: &str, service: &ServiceRef, ca_bundle: Option<&str>) -> Value {
    json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": client_config(service, &format!("/{crd_name}"), ca_bundle),
            "conversionReviewVersions": ["v1", "v1beta1"],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook_config::{HookScope, parse};
    use crate::names::HookName;

    fn binding(doc: &str) -> AdmissionBinding {
        let hook = HookName::new("hooks/policy.sh").unwrap();
        let c = parse(&hook, HookScope::Module, doc).unwrap();
        c.admission_bindings().next().unwrap().clone()
    }

    fn service() -> ServiceRef {
        ServiceRef {
            namespace: "d8-system".into(),
            name: "addon-operator-webhook".into(),
        }
    }

    #[test]
    fn an_entry_carries_rules_defaults_and_the_client_config() {
        let b = binding(
            "configVersion: v1\nkubernetesValidating:\n- name: private-repo-policy.example.com\n  labelSelector: {matchLabels: {a: b}}\n  rules:\n  - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs], scope: Namespaced}\n",
        );
        let e = webhook_entry(&b, &service(), Some("Q0E="), FailurePolicy::Ignore);
        assert_eq!(
            e,
            json!({
                "name": "private-repo-policy.example.com",
                "rules": [{"operations": ["CREATE"], "apiGroups": ["stable.example.com"], "apiVersions": ["v1"], "resources": ["crontabs"], "scope": "Namespaced"}],
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "timeoutSeconds": 10,
                "matchPolicy": "Equivalent",
                "admissionReviewVersions": ["v1", "v1beta1"],
                "clientConfig": {
                    "service": {"namespace": "d8-system", "name": "addon-operator-webhook", "path": "/hooks/private-repo-policy-example-com"},
                    "caBundle": "Q0E="
                },
                "objectSelector": {"matchLabels": {"a": "b"}, "matchExpressions": []}
            })
        );
    }

    #[test]
    fn the_merge_replaces_our_entries_and_keeps_others() {
        let b = binding(
            "configVersion: v1\nkubernetesValidating:\n- name: new.example.com\n  rules:\n  - {apiGroups: [''], apiVersions: [v1], operations: ['*'], resources: [pods]}\n",
        );
        let existing = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "hooks", "labels": {"team": "x"},
                "annotations": {OWNED_WEBHOOKS_ANNOTATION: "old.example.com"}},
            "webhooks": [{"name": "old.example.com"}, {"name": "theirs.example.com"}]
        });
        let ours = vec![webhook_entry(&b, &service(), None, FailurePolicy::Fail)];
        let merged =
            merge_configuration(AdmissionKind::Validating, "hooks", Some(&existing), ours).unwrap();
        let names: Vec<&str> = merged["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["theirs.example.com", "new.example.com"]);
        assert_eq!(merged["metadata"]["labels"]["team"], "x");
        assert_eq!(
            merged["metadata"]["annotations"][OWNED_WEBHOOKS_ANNOTATION],
            "new.example.com"
        );
        let emptied =
            merge_configuration(AdmissionKind::Validating, "hooks", Some(&merged), vec![]).unwrap();
        assert_eq!(emptied["webhooks"], json!([{"name": "theirs.example.com"}]));
    }

    #[test]
    fn nothing_left_means_delete_and_nothing_yet_means_create() {
        let existing = json!({
            "metadata": {"name": "hooks", "annotations": {OWNED_WEBHOOKS_ANNOTATION: "a.b.c"}},
            "webhooks": [{"name": "a.b.c"}]
        });
        assert_eq!(
            merge_configuration(AdmissionKind::Mutating, "hooks", Some(&existing), vec![]),
            None
        );
        assert_eq!(
            merge_configuration(AdmissionKind::Mutating, "hooks", None, vec![]),
            None
        );
        let someone_elses = json!({"metadata": {"name": "hooks"}, "webhooks": []});
        assert_eq!(
            merge_configuration(
                AdmissionKind::Mutating,
                "hooks",
                Some(&someone_elses),
                vec![]
            ),
            Some(someone_elses.clone()),
            "a configuration without our annotation is left alone, even empty"
        );
        let created = merge_configuration(
            AdmissionKind::Mutating,
            "hooks",
            None,
            vec![json!({"name": "a.b.c"})],
        )
        .unwrap();
        assert_eq!(created["kind"], "MutatingWebhookConfiguration");
        assert_eq!(created["metadata"]["name"], "hooks");
    }

    #[test]
    fn the_conversion_stanza_points_at_the_crd_path() {
        let s = conversion_stanza("crontabs.stable.example.com", &service(), Some("Q0E="));
        assert_eq!(s["strategy"], "Webhook");
        assert_eq!(
            s["webhook"]["clientConfig"]["service"]["path"],
            "/crontabs.stable.example.com"
        );
        assert_eq!(
            s["webhook"]["conversionReviewVersions"],
            json!(["v1", "v1beta1"])
        );
    }
}
