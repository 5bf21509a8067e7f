//! Kubernetes protobuf request bodies (`k8s\0` + runtime.Unknown) decoded into JSON objects.
//!
//! Each supported kind is converted field by field from the `k8s-pb` message; a body that carries
//! a field the conversion does not know is refused (415) rather than silently truncated.

mod apps;
mod core;
mod meta;
mod rbac;

use std::collections::BTreeMap;

use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde::Serialize;
use serde_json::{Map, Value, json};

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
    let mut object = convert(&api_version, &kind, &raw)?;
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    Ok(object)
}

fn convert(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, ApiError> {
    match (api_version, kind) {
        ("v1", "ConfigMap") => core::config_map(parse(raw)?),
        ("v1", "Secret") => core::secret(parse(raw)?),
        ("v1", "Namespace") => core::namespace(parse(raw)?),
        ("v1", "ServiceAccount") => core::service_account(parse(raw)?),
        ("v1", "Service") => core::service(parse(raw)?),
        ("v1", "ResourceQuota") => core::resource_quota(parse(raw)?),
        ("policy/v1", "PodDisruptionBudget") => apps::pod_disruption_budget(parse(raw)?),
        ("v1" | "meta.k8s.io/v1", "DeleteOptions") => meta::delete_options(parse(raw)?),
        ("apps/v1", "Deployment") => apps::deployment(parse(raw)?),
        ("batch/v1", "Job") => apps::job(parse(raw)?),
        ("batch/v1", "CronJob") => apps::cron_job(parse(raw)?),
        ("scheduling.k8s.io/v1", "PriorityClass") => apps::priority_class(parse(raw)?),
        ("rbac.authorization.k8s.io/v1", "Role") => rbac::role(parse(raw)?),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => rbac::cluster_role(parse(raw)?),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => rbac::role_binding(parse(raw)?),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            rbac::cluster_role_binding(parse(raw)?)
        }
        _ => Err(ApiError::UnsupportedMediaType(format!(
            "protobuf bodies of {api_version} {kind} are not supported; send JSON"
        ))),
    }
}

fn parse<M: Message + Default>(raw: &[u8]) -> Result<M, ApiError> {
    M::decode(raw).map_err(bad)
}

fn bad(e: prost::DecodeError) -> ApiError {
    ApiError::BadRequest(format!("invalid protobuf body: {e}"))
}

/// Fails when a message still holds fields its conversion did not take out.
fn consumed<M: Message + std::fmt::Debug>(what: &str, rest: &M) -> Result<(), ApiError> {
    if rest.encoded_len() == 0 {
        Ok(())
    } else {
        tracing::debug!(what, rest = ?rest, "undecoded protobuf fields");
        Err(ApiError::UnsupportedMediaType(format!(
            "the protobuf {what} uses fields the emulator cannot decode; send JSON"
        )))
    }
}

/// A JSON object under construction; absent and empty values are left out.
struct Obj(Map<String, Value>);

impl Obj {
    fn new() -> Self {
        Self(Map::new())
    }

    fn opt<T: Serialize>(mut self, key: &str, value: Option<T>) -> Self {
        if let Some(v) = value {
            self.0.insert(key.into(), json!(v));
        }
        self
    }

    /// A string field Go always encodes: empty means unset.
    fn text(self, key: &str, value: Option<String>) -> Self {
        self.opt(key, value.filter(|v| !v.is_empty()))
    }

    /// A bool field Go always encodes: false means unset.
    fn flag(self, key: &str, value: Option<bool>) -> Self {
        self.opt(key, value.filter(|v| *v))
    }

    /// A number field Go always encodes: zero means unset.
    fn count<T: Serialize + Default + PartialEq>(self, key: &str, value: Option<T>) -> Self {
        self.opt(key, value.filter(|v| *v != T::default()))
    }

    fn vec<T: Serialize>(mut self, key: &str, value: Vec<T>) -> Self {
        if !value.is_empty() {
            self.0.insert(key.into(), json!(value));
        }
        self
    }

    fn map<T: Serialize>(mut self, key: &str, value: BTreeMap<String, T>) -> Self {
        if !value.is_empty() {
            self.0.insert(key.into(), json!(value));
        }
        self
    }

    fn val(mut self, key: &str, value: Option<Value>) -> Self {
        if let Some(v) = value {
            self.0.insert(key.into(), v);
        }
        self
    }

    fn build(self) -> Value {
        Value::Object(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::api::apps::v1 as apps_pb;
    use k8s_pb::api::core::v1 as core_pb;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta_pb;
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
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

    fn named(name: &str) -> Option<meta_pb::ObjectMeta> {
        Some(meta_pb::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        })
    }

    #[test]
    fn protobuf_secret_decodes_with_base64_data_and_labels() {
        let mut meta = named("sh.helm.release.v1.x.v1").unwrap_or_default();
        meta.labels = [("owner".to_string(), "helm".to_string())].into();
        let secret = core_pb::Secret {
            metadata: Some(meta),
            data: [("release".to_string(), b"hello".to_vec())].into(),
            r#type: Some("helm.sh/release.v1".into()),
            ..Default::default()
        };
        let v = decode(&envelope("v1", "Secret", secret.encode_to_vec())).unwrap();
        assert_eq!(v["kind"], "Secret");
        assert_eq!(v["data"]["release"], "aGVsbG8=");
        assert_eq!(v["metadata"]["labels"]["owner"], "helm");
        assert_eq!(v["type"], "helm.sh/release.v1");
    }

    #[test]
    fn protobuf_deployment_decodes_its_pod_template() {
        let container = core_pb::Container {
            name: Some("web".into()),
            image: Some("nginx".into()),
            ports: vec![core_pb::ContainerPort {
                container_port: Some(80),
                ..Default::default()
            }],
            resources: Some(Default::default()),
            ..Default::default()
        };
        let deployment = apps_pb::Deployment {
            metadata: named("web"),
            spec: Some(apps_pb::DeploymentSpec {
                replicas: Some(2),
                selector: Some(meta_pb::LabelSelector {
                    match_labels: [("app".to_string(), "web".to_string())].into(),
                    ..Default::default()
                }),
                template: Some(core_pb::PodTemplateSpec {
                    metadata: Some(Default::default()),
                    spec: Some(core_pb::PodSpec {
                        containers: vec![container],
                        ..Default::default()
                    }),
                }),
                strategy: Some(Default::default()),
                ..Default::default()
            }),
            status: Some(Default::default()),
        };
        let v = decode(&envelope(
            "apps/v1",
            "Deployment",
            deployment.encode_to_vec(),
        ))
        .unwrap();
        assert_eq!(v["spec"]["replicas"], 2);
        assert_eq!(v["spec"]["selector"]["matchLabels"]["app"], "web");
        let c = &v["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            (c["name"].as_str(), c["ports"][0]["containerPort"].as_i64()),
            (Some("web"), Some(80))
        );
        assert_eq!(c["resources"], json!({}));
    }

    #[test]
    fn unknown_fields_unsupported_kinds_and_missing_magic_are_rejected() {
        let pod = core_pb::Pod {
            metadata: named("p"),
            ..Default::default()
        };
        assert_eq!(
            decode(&envelope("v1", "Pod", pod.encode_to_vec()))
                .unwrap_err()
                .code(),
            415
        );
        let probe = core_pb::Container {
            name: Some("c".into()),
            liveness_probe: Some(Default::default()),
            ..Default::default()
        };
        let spec = core_pb::PodSpec {
            containers: vec![probe],
            ..Default::default()
        };
        let job = k8s_pb::api::batch::v1::Job {
            metadata: named("j"),
            spec: Some(k8s_pb::api::batch::v1::JobSpec {
                template: Some(core_pb::PodTemplateSpec {
                    metadata: None,
                    spec: Some(spec),
                }),
                ..Default::default()
            }),
            status: None,
        };
        assert_eq!(
            decode(&envelope("batch/v1", "Job", job.encode_to_vec()))
                .unwrap_err()
                .code(),
            415
        );
        assert_eq!(decode(b"{}").unwrap_err().code(), 400);
    }
}
