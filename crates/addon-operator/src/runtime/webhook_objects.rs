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
use super::edges::{Files, ObjectsError};
use super::state::State;
use super::webhooks::{WebhookUse, enabled_hooks, webhook_use};

/// How often the enabled hooks' webhooks (and the CA files) are compared with what was last
/// written.
const SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// A failed write is retried after 2, 4, ... seconds, at most this long apart (an API server
/// that refuses is not asked again every second).
const MAX_RETRY_INTERVAL: Duration = Duration::from_secs(30);

/// What the objects point at; built from the webhook flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookObjects {
    /// The ValidatingWebhookConfiguration and MutatingWebhookConfiguration name.
    pub configuration_name: String,
    pub admission_service: ServiceRef,
    pub conversion_service: ServiceRef,
    pub failure_policy: FailurePolicy,
    /// Where each server's `caBundle` comes from.
    pub admission_ca: CaBundle,
    pub conversion_ca: CaBundle,
    /// With `--embedded-cluster`: the servers' loopback addresses (admission, conversion); the
    /// operator creates both Services with the emulator's endpoint annotation pointing there, so
    /// the embedded API server calls its own webhook servers.
    pub embedded_endpoints: Option<(String, String)>,
}

/// A server's `caBundle`: the CA file, read again at every tick (a rotated CA reaches the
/// configurations without a restart), or a fixed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaBundle {
    File(std::path::PathBuf),
    /// base64 of the CA's PEM (`None`: left out).
    Fixed(Option<String>),
}

/// The two bundles as last read; an unreadable file keeps the bundle read before (a rotation
/// replacing the file is not a moment without a CA), warned about once per distinct error.
#[derive(Debug, Default)]
struct Bundles {
    admission: Option<String>,
    conversion: Option<String>,
    errors: [Option<String>; 2],
}

impl Bundles {
    fn refresh(&mut self, objects: &WebhookObjects, files: &dyn Files) {
        let sources = [&objects.admission_ca, &objects.conversion_ca];
        let slots = [&mut self.admission, &mut self.conversion];
        for (index, (source, slot)) in sources.into_iter().zip(slots).enumerate() {
            let path = match source {
                CaBundle::Fixed(bundle) => {
                    slot.clone_from(bundle);
                    continue;
                }
                CaBundle::File(path) => path,
            };
            match files.ca_bundle(path) {
                Ok(bundle) => {
                    *slot = Some(bundle);
                    self.errors[index] = None;
                }
                Err(e) => {
                    let error = e.to_string();
                    if self.errors[index].as_ref() != Some(&error) {
                        let kept = if slot.is_some() {
                            "the last one read is kept"
                        } else {
                            "caBundle left out"
                        };
                        tracing::warn!(ca = %path.display(), %error, "webhook CA cannot be read; {kept}");
                        self.errors[index] = Some(error);
                    }
                }
            }
        }
    }
}

/// What the enabled hooks ask for.
#[derive(Debug, Clone, Default, PartialEq)]
struct Desired {
    validating: Vec<Value>,
    mutating: Vec<Value>,
    /// CRD name → its `spec.conversion`.
    conversions: BTreeMap<String, Value>,
}

fn desired(st: &State, objects: &WebhookObjects, bundles: &Bundles) -> Desired {
    let mut out = Desired::default();
    for (_, def) in enabled_hooks(st) {
        for binding in def.config.admission_bindings() {
            let entry = webhook_entry(
                binding,
                &objects.admission_service,
                bundles.admission.as_deref(),
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
                bundles.conversion.as_deref(),
            );
            out.conversions.insert(binding.crd_name.clone(), stanza);
        }
    }
    out
}

/// [`run`] once every hook is known, when one of them has a webhook binding.
pub async fn run_if_used(shared: Arc<Shared>, objects: WebhookObjects, stop: CancellationToken) {
    if !shared.module_hooks_known(&stop).await {
        return;
    }
    if webhook_use(&shared.lock()) == WebhookUse::default() {
        return;
    }
    run(shared, objects, stop).await;
}

/// Writes the objects whenever the enabled hooks' webhooks or the CAs change (after the first
/// converge), retrying a failed write with a growing pause, until `stop`.
async fn run(shared: Arc<Shared>, objects: WebhookObjects, stop: CancellationToken) {
    let mut written: Option<Desired> = None;
    let mut services_made = objects.embedded_endpoints.is_none();
    let mut bundles = Bundles::default();
    let mut pause = SYNC_INTERVAL;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        if !shared.lock().first_converge_done {
            continue;
        }
        bundles.refresh(&objects, shared.edges.files.as_ref());
        let want = desired(&shared.lock(), &objects, &bundles);
        if !services_made {
            services_made = make_services(&shared, &objects).await;
        }
        if written.as_ref() == Some(&want) {
            continue;
        }
        let before = written.clone().unwrap_or_default();
        match write(&shared, &objects, &before, &want).await {
            Ok(()) => {
                written = Some(want);
                pause = SYNC_INTERVAL;
            }
            Err(e) => {
                pause = after_failure(pause);
                let error = addon_core::error::error_chain(&e);
                tracing::warn!(%error, retry_in = ?pause, "webhook objects not written");
            }
        }
    }
}

/// The pause before the next try after a failed write: twice the last, at most
/// [`MAX_RETRY_INTERVAL`].
fn after_failure(pause: Duration) -> Duration {
    (pause * 2).min(MAX_RETRY_INTERVAL)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_writes_are_retried_ever_less_often_up_to_the_cap() {
        let mut pause = SYNC_INTERVAL;
        let mut pauses = Vec::new();
        for _ in 0..7 {
            pause = after_failure(pause);
            pauses.push(pause.as_secs());
        }
        assert_eq!(pauses, [2, 4, 8, 16, 30, 30, 30]);
    }

    #[test]
    fn a_rotated_ca_file_is_read_again_and_an_unreadable_one_keeps_the_last_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.crt");
        std::fs::write(&ca, "first").unwrap();
        let objects = WebhookObjects {
            configuration_name: "c".into(),
            admission_service: ServiceRef {
                namespace: "n".into(),
                name: "a".into(),
            },
            conversion_service: ServiceRef {
                namespace: "n".into(),
                name: "c".into(),
            },
            failure_policy: FailurePolicy::Fail,
            admission_ca: CaBundle::File(ca.clone()),
            conversion_ca: CaBundle::Fixed(None),
            embedded_endpoints: None,
        };
        let mut bundles = Bundles::default();
        bundles.refresh(&objects, &crate::edges::files::DiskFiles);
        assert_eq!(bundles.admission.as_deref(), Some("Zmlyc3Q="));
        assert_eq!(bundles.conversion, None);
        std::fs::write(&ca, "second").unwrap();
        bundles.refresh(&objects, &crate::edges::files::DiskFiles);
        assert_eq!(bundles.admission.as_deref(), Some("c2Vjb25k"));
        std::fs::remove_file(&ca).unwrap();
        bundles.refresh(&objects, &crate::edges::files::DiskFiles);
        assert_eq!(bundles.admission.as_deref(), Some("c2Vjb25k"));
        assert!(bundles.errors[0].is_some());
    }
}
