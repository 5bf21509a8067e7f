//! Kubernetes protobuf request bodies (`k8s\0` + runtime.Unknown) decoded into JSON objects.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{Map, Value, json};

use crate::clock;
use crate::status::ApiError;

const MAGIC: &[u8] = b"k8s\x00";

/// Decodes a protobuf body of a supported built-in kind into its JSON form.
pub fn decode(bytes: &[u8]) -> Result<Value, ApiError> {
    let payload = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| ApiError::BadRequest("protobuf body lacks the k8s magic prefix".into()))?;
    let unknown = Unknown::decode(payload).map_err(bad)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let mut object = match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap") => config_map(core::ConfigMap::decode(raw.as_slice()).map_err(bad)?),
        ("v1", "Secret") => secret(core::Secret::decode(raw.as_slice()).map_err(bad)?),
        ("v1", "Namespace") => namespace(core::Namespace::decode(raw.as_slice()).map_err(bad)?),
        ("v1", "ServiceAccount") => {
            service_account(core::ServiceAccount::decode(raw.as_slice()).map_err(bad)?)
        }
        ("v1", "DeleteOptions") | ("meta.k8s.io/v1", "DeleteOptions") => {
            delete_options(meta::DeleteOptions::decode(raw.as_slice()).map_err(bad)?)
        }
        _ => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "protobuf bodies of {api_version} {kind} are not supported; send JSON"
            )));
        }
    };
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    Ok(object)
}

fn bad(e: prost::DecodeError) -> ApiError {
    ApiError::BadRequest(format!("invalid protobuf body: {e}"))
}

fn config_map(cm: core::ConfigMap) -> Value {
    let mut out = with_metadata(cm.metadata);
    insert_if(&mut out, "data", !cm.data.is_empty(), || json!(cm.data));
    insert_if(&mut out, "binaryData", !cm.binary_data.is_empty(), || {
        base64_map(&cm.binary_data)
    });
    insert_if(&mut out, "immutable", cm.immutable.is_some(), || {
        json!(cm.immutable)
    });
    Value::Object(out)
}

fn secret(s: core::Secret) -> Value {
    let mut out = with_metadata(s.metadata);
    insert_if(&mut out, "data", !s.data.is_empty(), || base64_map(&s.data));
    insert_if(&mut out, "stringData", !s.string_data.is_empty(), || {
        json!(s.string_data)
    });
    insert_if(&mut out, "type", s.r#type.is_some(), || json!(s.r#type));
    insert_if(&mut out, "immutable", s.immutable.is_some(), || {
        json!(s.immutable)
    });
    Value::Object(out)
}

fn namespace(ns: core::Namespace) -> Value {
    let mut out = with_metadata(ns.metadata);
    let finalizers = ns.spec.map(|s| s.finalizers).unwrap_or_default();
    insert_if(
        &mut out,
        "spec",
        !finalizers.is_empty(),
        || json!({ "finalizers": finalizers }),
    );
    Value::Object(out)
}

fn service_account(sa: core::ServiceAccount) -> Value {
    let mut out = with_metadata(sa.metadata);
    let pull: Vec<Value> = sa
        .image_pull_secrets
        .into_iter()
        .map(|r| json!({ "name": r.name }))
        .collect();
    insert_if(&mut out, "imagePullSecrets", !pull.is_empty(), || {
        json!(pull)
    });
    let token = sa.automount_service_account_token;
    insert_if(
        &mut out,
        "automountServiceAccountToken",
        token.is_some(),
        || json!(token),
    );
    Value::Object(out)
}

fn delete_options(opts: meta::DeleteOptions) -> Value {
    let mut out = Map::new();
    let policy = opts.propagation_policy;
    insert_if(&mut out, "propagationPolicy", policy.is_some(), || {
        json!(policy)
    });
    insert_if(&mut out, "dryRun", !opts.dry_run.is_empty(), || {
        json!(opts.dry_run)
    });
    let pre = opts.preconditions.unwrap_or_default();
    let mut pre_json = Map::new();
    insert_if(&mut pre_json, "uid", pre.uid.is_some(), || json!(pre.uid));
    let rv = pre.resource_version;
    insert_if(&mut pre_json, "resourceVersion", rv.is_some(), || json!(rv));
    insert_if(&mut out, "preconditions", !pre_json.is_empty(), || {
        Value::Object(pre_json.clone())
    });
    Value::Object(out)
}

fn insert_if(map: &mut Map<String, Value>, key: &str, cond: bool, value: impl FnOnce() -> Value) {
    if cond {
        map.insert(key.to_string(), value());
    }
}

fn base64_map(data: &std::collections::BTreeMap<String, Vec<u8>>) -> Value {
    Value::Object(
        data.iter()
            .map(|(k, v)| (k.clone(), json!(STANDARD.encode(v))))
            .collect(),
    )
}

fn with_metadata(meta: Option<meta::ObjectMeta>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("metadata".into(), object_meta(meta.unwrap_or_default()));
    out
}

fn object_meta(m: meta::ObjectMeta) -> Value {
    let mut out = Map::new();
    let strings = [
        ("name", m.name),
        ("generateName", m.generate_name),
        ("namespace", m.namespace),
        ("uid", m.uid),
        ("resourceVersion", m.resource_version),
    ];
    for (key, value) in strings {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            out.insert(key.into(), json!(v));
        }
    }
    let times = [
        ("creationTimestamp", m.creation_timestamp),
        ("deletionTimestamp", m.deletion_timestamp),
    ];
    for (key, value) in times {
        if let Some(secs) = value.and_then(|t| t.seconds).filter(|s| *s > 0) {
            out.insert(
                key.into(),
                json!(clock::format_rfc3339(secs.unsigned_abs())),
            );
        }
    }
    insert_if(&mut out, "labels", !m.labels.is_empty(), || json!(m.labels));
    insert_if(&mut out, "annotations", !m.annotations.is_empty(), || {
        json!(m.annotations)
    });
    insert_if(&mut out, "finalizers", !m.finalizers.is_empty(), || {
        json!(m.finalizers)
    });
    let owners: Vec<Value> = m
        .owner_references
        .into_iter()
        .map(owner_reference)
        .collect();
    insert_if(&mut out, "ownerReferences", !owners.is_empty(), || {
        json!(owners)
    });
    Value::Object(out)
}

fn owner_reference(r: meta::OwnerReference) -> Value {
    let mut out = Map::new();
    let fields = [
        ("apiVersion", r.api_version),
        ("kind", r.kind),
        ("name", r.name),
        ("uid", r.uid),
    ];
    for (key, value) in fields {
        out.insert(key.into(), json!(value.unwrap_or_default()));
    }
    insert_if(&mut out, "controller", r.controller.is_some(), || {
        json!(r.controller)
    });
    let block = r.block_owner_deletion;
    insert_if(&mut out, "blockOwnerDeletion", block.is_some(), || {
        json!(block)
    });
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;

    fn envelope(kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: None,
            content_type: None,
        };
        let mut out = MAGIC.to_vec();
        out.extend(unknown.encode_to_vec());
        out
    }

    #[test]
    fn protobuf_secret_decodes_with_base64_data_and_labels() {
        let secret = core::Secret {
            metadata: Some(meta::ObjectMeta {
                name: Some("sh.helm.release.v1.x.v1".into()),
                namespace: Some("ns".into()),
                labels: [("owner".to_string(), "helm".to_string())].into(),
                ..Default::default()
            }),
            data: [("release".to_string(), b"hello".to_vec())].into(),
            r#type: Some("helm.sh/release.v1".into()),
            ..Default::default()
        };
        let v = decode(&envelope("Secret", secret.encode_to_vec())).unwrap();
        assert_eq!(v["kind"], "Secret");
        assert_eq!(v["data"]["release"], "aGVsbG8=");
        assert_eq!(v["metadata"]["labels"]["owner"], "helm");
        assert_eq!(v["type"], "helm.sh/release.v1");
    }

    #[test]
    fn unsupported_kinds_and_missing_magic_are_rejected() {
        assert_eq!(decode(&envelope("Pod", vec![])).unwrap_err().code(), 415);
        assert_eq!(decode(b"{}").unwrap_err().code(), 400);
    }
}
