//! The cluster objects that send requests to the webhook servers, kept in step with the enabled modules: one ValidatingWebhookConfiguration and one MutatingWebhookConfiguration holding the webhooks of global hooks and enabled modules' hooks (others' entries kept), and `spec.conversion` of each CRD a conversion binding names.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use addon_core::hook_config::{AdmissionKind, FailurePolicy};
use addon_core::hook_output::kube_patch::{
    CreateMode, DeletePropagation, KubeOperation, ObjectRef,
};
use addon_core::webhook::{
    ServiceRef, configuration_kind, conversion_stanza, merge_configuration, webhook_entry,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::edges::ObjectsError;
use super::state::State;
use super::webhooks::enabled_hooks;

/// How often the enabled hooks' webhooks are compared with what was last written.
const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// What the objects point at; built from the webhook flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookObjects {
    /// The ValidatingWebhookConfiguration and MutatingWebhookConfiguration name.
    pub configuration_name: String,
    pub admission_service: ServiceRef,
    pub conversion_service: ServiceRef,
    pub failure_policy: FailurePolicy,
    /// base64 of the CA files (`None`: unreadable, left out).
    pub admission_ca_bundle: Option<String>,
    pub conversion_ca_bundle: Option<String>,
    /// With `--embedded-cluster`: the servers' loopback addresses (admission, conversion); the
    /// operator creates both Services with the emulator's endpoint annotation pointing there, so
    /// the embedded API server calls its own webhook servers.
    pub embedded_endpoints: Option<(String, String)>,
}

/// What the enabled hooks ask for.
#[derive(Debug, Clone, Default, PartialEq)]
struct Desired {
    validating: Vec<Value>,
    mutating: Vec<Value>,
    /// CRD name → its `spec.conversion`.
    conversions: BTreeMap<String, Value>,
}

fn desired(st: &State, objects: &WebhookObjects) -> Desired {
    let mut out = Desired::default();
    for (_, def) in enabled_hooks(st) {
        for binding in def.config.admission_bindings() {
            let entry = webhook_entry(
                binding,
                &objects.admission_service,
                objects.admission_ca_bundle.as_deref(),
                objects.failure_policy,
            );
            match binding.kind {
                AdmissionKind::Validating => out.validating.push(entry),
                AdmissionKind::Mutating => out.mutating.push(entry),
            }
        }
        for binding in &def.config.conversions {
            let stanza = conversion_stanza(
                &binding.crd_name,
                &objects.conversion_service,
                objects.conversion_ca_bundle.as_deref(),
            );
            out.conversions.insert(binding.crd_name.clone(), stanza);
        }
    }
    out
}

/// Writes the objects whenever the enabled hooks' webhooks change (after the first converge),
/// retrying a failed write at the next tick, until `stop`.
pub async fn run(shared: Arc<Shared>, objects: WebhookObjects, stop: CancellationToken) {
    let mut written: Option<Desired> = None;
    let mut services_made = objects.embedded_endpoints.is_none();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(SYNC_INTERVAL) => {}
        }
        let want = {
            let st = shared.lock();
            if !st.first_converge_done {
                continue;
            }
            desired(&st, &objects)
        };
        if !services_made {
            services_made = make_services(&shared, &objects).await;
        }
        if written.as_ref() == Some(&want) {
            continue;
        }
        let before = written.clone().unwrap_or_default();
        match write(&shared, &objects, &before, &want).await {
            Ok(()) => written = Some(want),
            Err(e) => {
                let error = addon_core::error::error_chain(&e);
                tracing::warn!(%error, "webhook objects not written, retrying");
            }
        }
    }
}

/// The Services of the embedded cluster, pointing at the servers (the emulator's annotation).
async fn make_services(shared: &Shared, objects: &WebhookObjects) -> bool {
    let Some((admission, conversion)) = &objects.embedded_endpoints else {
        return true;
    };
    let namespace = &objects.admission_service.namespace;
    let mut ops = vec![KubeOperation::Create {
        mode: CreateMode::CreateIfNotExists,
        object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        subresource: None,
    }];
    for (service, endpoint) in [
        (&objects.admission_service, admission),
        (&objects.conversion_service, conversion),
    ] {
        ops.push(KubeOperation::Create {
            mode: CreateMode::CreateOrUpdate,
            object: json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": service.name,
                    "namespace": service.namespace,
                    "annotations": {"kube-emulator.flant.com/endpoint": endpoint},
                },
                "spec": {"ports": [{"port": 443}]},
            }),
            subresource: None,
        });
    }
    match shared.edges.objects.apply(&ops).await {
        Ok(()) => true,
        Err(e) => {
            let error = addon_core::error::error_chain(&e);
            tracing::warn!(%error, "webhook Services of the embedded cluster not made, retrying");
            false
        }
    }
}

fn configuration_ref(kind: AdmissionKind, name: &str) -> ObjectRef {
    ObjectRef {
        api_version: Some("admissionregistration.k8s.io/v1".into()),
        kind: configuration_kind(kind).into(),
        namespace: None,
        name: name.into(),
        subresource: None,
    }
}

fn crd_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: Some("apiextensions.k8s.io/v1".into()),
        kind: "CustomResourceDefinition".into(),
        namespace: None,
        name: name.into(),
        subresource: None,
    }
}

async fn write(
    shared: &Shared,
    objects: &WebhookObjects,
    before: &Desired,
    want: &Desired,
) -> Result<(), ObjectsError> {
    let kinds = [
        (
            AdmissionKind::Validating,
            &before.validating,
            &want.validating,
        ),
        (AdmissionKind::Mutating, &before.mutating, &want.mutating),
    ];
    let mut ops = Vec::new();
    for (kind, old, new) in kinds {
        if old == new && !new.is_empty() {
            continue;
        }
        let target = configuration_ref(kind, &objects.configuration_name);
        let existing = shared.edges.objects.get_object(&target).await?;
        let merged = merge_configuration(
            kind,
            &objects.configuration_name,
            existing.as_ref(),
            new.clone(),
        );
        match merged {
            Some(object) if Some(&object) != existing.as_ref() => match &existing {
                Some(current) => ops.extend(update_entries(target, current, &object)),
                None => ops.push(KubeOperation::Create {
                    mode: CreateMode::Create,
                    object,
                    subresource: None,
                }),
            },
            None if existing.is_some() => ops.push(KubeOperation::Delete {
                target,
                propagation: DeletePropagation::Foreground,
            }),
            _ => {}
        }
    }
    for (crd, stanza) in &want.conversions {
        if before.conversions.get(crd) != Some(stanza) {
            // a merge patch keeps fields it does not name: drop a `url` another tool set, which
            // together with our `service` makes an invalid CRD
            let mut stanza = stanza.clone();
            stanza["webhook"]["clientConfig"]["url"] = Value::Null;
            ops.push(KubeOperation::MergePatch {
                target: crd_ref(crd),
                patch: json!({"spec": {"conversion": stanza}}),
                ignore_missing_object: false,
            });
        }
    }
    for crd in before.conversions.keys() {
        if !want.conversions.contains_key(crd) {
            ops.push(KubeOperation::MergePatch {
                target: crd_ref(crd),
                patch: json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}}),
                ignore_missing_object: true,
            });
        }
    }
    if ops.is_empty() {
        return Ok(());
    }
    shared.edges.objects.apply(&ops).await?;
    tracing::info!(
        validating = want.validating.len(),
        mutating = want.mutating.len(),
        conversions = want.conversions.len(),
        "webhook objects written"
    );
    Ok(())
}

/// A JSON patch writing only the parts the operator changes (the webhooks list and the
/// annotations), and only over the version read: a change made meanwhile (another tool's
/// entry, an injected `caBundle`) makes it fail with a conflict, and the next tick merges again.
fn update_entries(target: ObjectRef, current: &Value, merged: &Value) -> Option<KubeOperation> {
    let patch = json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": current["metadata"]["resourceVersion"]},
        {"op": "add", "path": "/metadata/annotations", "value": merged["metadata"]["annotations"]},
        {"op": "add", "path": "/webhooks", "value": merged["webhooks"]},
    ]);
    // the operations above are well-formed; a patch that does not parse is never sent
    let patch = serde_json::from_value(patch).ok()?;
    Some(KubeOperation::JsonPatch {
        target,
        patch,
        ignore_missing_object: false,
    })
}
