//! The Kubernetes API side of the Helm edge: which objects of a release's manifest are absent,
//! and removing the storage Secret of a stuck release revision.

use std::collections::HashMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{ApiCapabilities, Scope};
use serde::Deserialize;

/// Failures talking to the API server.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot read the kubeconfig {}", path.display())]
    ReadKubeconfig {
        path: std::path::PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot build a Kubernetes client config from the kubeconfig")]
    LoadKubeconfig(#[source] kube::config::KubeconfigError),
    #[error("cannot find a Kubernetes client config (KUBECONFIG, ~/.kube/config, in-cluster)")]
    InferConfig(#[source] kube::config::InferConfigError),
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
    #[error("cannot discover the resource of {api_version}/{kind}")]
    Discover {
        api_version: String,
        kind: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot get {object}")]
    Get {
        object: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot delete the release revision {namespace}/{name}")]
    DeleteRevision {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl ClusterError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadKubeconfig { .. } | Self::LoadKubeconfig(_) | Self::InferConfig(_) => {
                "kube_config"
            }
            Self::Client(_) => "kube_client",
            Self::Discover { .. } => "kube_discovery",
            Self::Get { .. } => "kube_get",
            Self::DeleteRevision { .. } => "kube_delete",
        }
    }
}

/// A client from the kubeconfig file, or the usual inference (KUBECONFIG, ~/.kube/config,
/// in-cluster) without one — the same places helm looks — with the API call limits of
/// [`crate::kube::ApiSettings`].
pub(crate) async fn client(kubeconfig: Option<&Path>) -> Result<kube::Client, ClusterError> {
    let config = match kubeconfig {
        Some(path) => {
            let kc =
                Kubeconfig::read_from(path).map_err(|source| ClusterError::ReadKubeconfig {
                    path: path.to_path_buf(),
                    source,
                })?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(ClusterError::LoadKubeconfig)?
        }
        None => kube::Config::infer()
            .await
            .map_err(ClusterError::InferConfig)?,
    };
    let api = crate::kube::ApiSettings::default();
    crate::kube::client::build(config, &api).map_err(ClusterError::Client)
}

/// One object of a rendered manifest, by identity only.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManifestObject {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ManifestMeta,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct ManifestMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

impl ManifestObject {
    fn gvk(&self) -> GroupVersionKind {
        let (group, version) = match self.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", self.api_version.as_str()),
        };
        GroupVersionKind::gvk(group, version, &self.kind)
    }
}

/// The objects of a helm manifest (`---`-separated YAML documents); documents that are empty or
/// lack `apiVersion`, `kind` or a name are skipped.
pub(crate) fn manifest_objects(manifest: &str) -> Vec<ManifestObject> {
    split_documents(manifest)
        .filter_map(|doc| match serde_saphyr::from_str::<ManifestObject>(doc) {
            Ok(obj) => Some(obj),
            Err(error) => {
                tracing::debug!(%error, "skipping a manifest document that does not parse");
                None
            }
        })
        .filter(|o| !o.api_version.is_empty() && !o.kind.is_empty() && !o.metadata.name.is_empty())
        .collect()
}

fn split_documents(manifest: &str) -> impl Iterator<Item = &str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in manifest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(&manifest[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    docs.push(&manifest[start..]);
    docs.into_iter().filter(|d| {
        d.lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    })
}

/// `ns/Kind/name` (or `Kind/name` for cluster-scoped objects) as the Go operator labels it.
fn describe(obj: &ManifestObject, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{}/{}", obj.kind, obj.metadata.name),
        None => format!("{}/{}", obj.kind, obj.metadata.name),
    }
}

/// The first object of `manifest` that does not exist in the cluster, as `ns/Kind/name`.
/// A kind the API server does not know (e.g. its CRD is gone) counts as absent.
pub(crate) async fn first_absent(
    client: &kube::Client,
    manifest: &str,
    release_namespace: &str,
) -> Result<Option<String>, ClusterError> {
    let found = absent(client, manifest, release_namespace, true).await?;
    Ok(found.into_iter().next())
}

/// The objects of `manifest` that do not exist in the cluster, as `ns/Kind/name` (only the
/// first one when `first_only`). A kind the API server does not know counts as absent.
pub(crate) async fn absent(
    client: &kube::Client,
    manifest: &str,
    release_namespace: &str,
    first_only: bool,
) -> Result<Vec<String>, ClusterError> {
    let mut missing = Vec::new();
    let mut kinds: HashMap<GroupVersionKind, Option<(ApiResource, ApiCapabilities)>> =
        HashMap::new();
    for obj in manifest_objects(manifest) {
        let gvk = obj.gvk();
        if !kinds.contains_key(&gvk) {
            let found = discover(client, &obj).await?;
            kinds.insert(gvk.clone(), found);
        }
        let Some(Some((resource, caps))) = kinds.get(&gvk) else {
            missing.push(describe(&obj, obj.metadata.namespace.as_deref()));
            if first_only {
                break;
            }
            continue;
        };
        let namespace = match caps.scope {
            Scope::Namespaced => Some(
                obj.metadata
                    .namespace
                    .as_deref()
                    .unwrap_or(release_namespace),
            ),
            Scope::Cluster => None,
        };
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
            None => Api::all_with(client.clone(), resource),
        };
        let object = describe(&obj, namespace);
        let exists = api
            .get_opt(&obj.metadata.name)
            .await
            .map_err(|source| ClusterError::Get {
                object: object.clone(),
                source,
            })?;
        if exists.is_none() {
            missing.push(object);
            if first_only {
                break;
            }
        }
    }
    Ok(missing)
}

/// The API resource of an object's kind; `None` when the server does not serve it.
async fn discover(
    client: &kube::Client,
    obj: &ManifestObject,
) -> Result<Option<(ApiResource, ApiCapabilities)>, ClusterError> {
    match kube::discovery::pinned_kind(client, &obj.gvk()).await {
        Ok(found) => Ok(Some(found)),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(source) => Err(ClusterError::Discover {
            api_version: obj.api_version.clone(),
            kind: obj.kind.clone(),
            source,
        }),
    }
}

/// Where helm keeps release revisions (`HELM_DRIVER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Storage {
    Secrets,
    ConfigMaps,
}

impl Storage {
    /// The storage of a `HELM_DRIVER` value (empty: helm's default, secrets); `None` for the
    /// `memory` and `sql` drivers, whose revisions the API cannot reach.
    pub fn from_driver(driver: &str) -> Option<Self> {
        match driver {
            "" | "secret" | "secrets" => Some(Self::Secrets),
            "configmap" | "configmaps" => Some(Self::ConfigMaps),
            _ => None,
        }
    }
}

/// Deletes revision `revision` of `release` from helm's storage
/// (`sh.helm.release.v1.<release>.v<revision>`); a missing object is fine.
pub(crate) async fn delete_revision(
    client: &kube::Client,
    storage: Storage,
    namespace: &str,
    release: &str,
    revision: u64,
) -> Result<(), ClusterError> {
    let name = format!("sh.helm.release.v1.{release}.v{revision}");
    let params = DeleteParams::default();
    let result = match storage {
        Storage::Secrets => Api::<Secret>::namespaced(client.clone(), namespace)
            .delete(&name, &params)
            .await
            .map(|_| ()),
        Storage::ConfigMaps => Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .delete(&name, &params)
            .await
            .map(|_| ()),
    };
    match result {
        Ok(()) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(source) => Err(ClusterError::DeleteRevision {
            namespace: namespace.to_string(),
            name,
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  a: \"---\"\n---\n# Source: web/templates/empty.yaml\n---\n# Source: web/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: other\n";

    #[test]
    fn manifest_documents_give_kind_name_and_namespace() {
        let objects = manifest_objects(MANIFEST);
        assert_eq!(objects.len(), 2, "{objects:?}");
        assert_eq!(objects[0].kind, "ConfigMap");
        assert_eq!(objects[0].metadata.name, "web-config");
        assert_eq!(objects[0].metadata.namespace, None);
        assert_eq!(
            objects[1].gvk(),
            GroupVersionKind::gvk("apps", "v1", "Deployment")
        );
        assert_eq!(objects[1].metadata.namespace.as_deref(), Some("other"));
    }

    #[test]
    fn core_objects_have_an_empty_group() {
        let objects = manifest_objects(MANIFEST);
        assert_eq!(
            objects[0].gvk(),
            GroupVersionKind::gvk("", "v1", "ConfigMap")
        );
    }

    #[test]
    fn secret_and_configmap_drivers_are_reachable_and_memory_and_sql_are_not() {
        assert_eq!(Storage::from_driver(""), Some(Storage::Secrets));
        assert_eq!(Storage::from_driver("secret"), Some(Storage::Secrets));
        assert_eq!(Storage::from_driver("configmap"), Some(Storage::ConfigMaps));
        assert_eq!(Storage::from_driver("memory"), None);
        assert_eq!(Storage::from_driver("sql"), None);
    }

    #[test]
    fn objects_are_described_as_namespace_kind_name() {
        let objects = manifest_objects(MANIFEST);
        assert_eq!(
            describe(&objects[0], Some("apps")),
            "apps/ConfigMap/web-config"
        );
        assert_eq!(describe(&objects[0], None), "ConfigMap/web-config");
    }
}
