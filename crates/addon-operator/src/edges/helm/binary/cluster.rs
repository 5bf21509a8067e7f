//! The Kubernetes API side of the Helm edge: which objects of a release's manifest are absent
//! (metadata-only lists), removing the storage object of a stuck release revision, and whether
//! the release namespace exists.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams};
use kube::discovery::{ApiCapabilities, Scope};
use serde::Deserialize;

/// Whether the API server says `namespace` does not exist (404). Any other answer, a refusal by
/// least-privilege RBAC (no namespace reads) included, counts as existing: where the operator
/// runs, its namespace holds its ConfigMap.
pub async fn namespace_missing(client: &kube::Client, namespace: &str) -> bool {
    let api: Api<Namespace> = Api::all(client.clone());
    matches!(api.get_opt(namespace).await, Ok(None))
}

/// Failures talking to the API server.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot connect to the cluster")]
    Connect(#[source] crate::edges::kube::ClientError),
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
    #[error("cannot discover the resource of {api_version}/{kind}")]
    Discover {
        api_version: String,
        kind: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot list the objects of the kind of {object}")]
    List {
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
            Self::Connect(e) => e.category(),
            Self::Client(_) => "kube_client",
            Self::Discover { .. } => "kube_discovery",
            Self::List { .. } => "kube_list",
            Self::DeleteRevision { .. } => "kube_delete",
        }
    }
}

/// A client for `target` (without a kubeconfig file, the usual inference: KUBECONFIG,
/// ~/.kube/config, in-cluster — the same places helm looks), with the API call limits of
/// [`crate::edges::kube::ApiSettings`] and the request rate limit `rate`.
pub(crate) async fn client(
    target: &crate::edges::kube::ClusterTarget,
    rate: Option<crate::edges::kube::RateLimit>,
) -> Result<kube::Client, ClusterError> {
    let config = crate::edges::kube::client::load_config(target)
        .await
        .map_err(ClusterError::Connect)?;
    let api = crate::edges::kube::ApiSettings::default();
    crate::edges::kube::client::build(config, &api, rate).map_err(ClusterError::Client)
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

/// The objects of a helm manifest as JSON, each namespaced in `namespace` when it names none
/// (the patcher ignores the namespace of a cluster-scoped kind); documents that do not parse or
/// lack `kind` or a name are skipped.
pub(crate) fn manifest_values(manifest: &str, namespace: &str) -> Vec<serde_json::Value> {
    split_documents(manifest)
        .filter_map(|doc| addon_core::yaml::parse(doc).ok())
        .filter(|o| o.get("kind").is_some() && o.pointer("/metadata/name").is_some())
        .map(|mut object| {
            if let Some(meta) = object.get_mut("metadata").and_then(|m| m.as_object_mut())
                && meta.get("namespace").is_none_or(|n| n.is_null())
            {
                meta.insert("namespace".to_string(), namespace.into());
            }
            object
        })
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

/// Kinds already found by discovery, so a decision sends no discovery request for them.
#[derive(Default)]
pub(crate) struct Kinds(
    std::sync::Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>,
);

impl Kinds {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The API resource of an object's kind; `None` when the server does not serve it (not
    /// remembered, so a CRD created later is found).
    async fn resolve(
        &self,
        client: &kube::Client,
        obj: &ManifestObject,
    ) -> Result<Option<(ApiResource, ApiCapabilities)>, ClusterError> {
        let gvk = obj.gvk();
        if let Some(found) = self.lock().get(&gvk) {
            return Ok(Some(found.clone()));
        }
        let found = discover(client, obj).await?;
        if let Some(found) = &found {
            self.lock().insert(gvk, found.clone());
        }
        Ok(found)
    }

    fn forget(&self, gvk: &GroupVersionKind) {
        self.lock().remove(gvk);
    }
}

/// The first of `objects` that does not exist in the cluster, as `ns/Kind/name`.
pub(crate) async fn first_absent(
    client: &kube::Client,
    kinds: &Kinds,
    objects: &[ManifestObject],
    release_namespace: &str,
) -> Result<Option<String>, ClusterError> {
    let found = absent(client, kinds, objects, release_namespace, true).await?;
    Ok(found.into_iter().next())
}

/// The `objects` that do not exist in the cluster, as `ns/Kind/name` (only the first one when
/// `first_only`), from one metadata-only list per kind and namespace (never a GET per object).
/// A kind the API server does not serve (e.g. its CRD is gone) counts as absent.
pub(crate) async fn absent(
    client: &kube::Client,
    kinds: &Kinds,
    objects: &[ManifestObject],
    release_namespace: &str,
    first_only: bool,
) -> Result<Vec<String>, ClusterError> {
    let mut missing = Vec::new();
    let mut listed: HashMap<(GroupVersionKind, Option<String>), Option<HashSet<String>>> =
        HashMap::new();
    for obj in objects {
        let Some((resource, caps)) = kinds.resolve(client, obj).await? else {
            missing.push(describe(obj, obj.metadata.namespace.as_deref()));
            if first_only {
                break;
            }
            continue;
        };
        let namespace = match caps.scope {
            Scope::Namespaced => Some(
                obj.metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| release_namespace.to_string()),
            ),
            Scope::Cluster => None,
        };
        let object = describe(obj, namespace.as_deref());
        let key = (obj.gvk(), namespace);
        if !listed.contains_key(&key) {
            let names = list_names(client, &resource, key.1.as_deref(), &object).await?;
            if names.is_none() {
                kinds.forget(&key.0);
            }
            listed.insert(key.clone(), names);
        }
        let present = listed
            .get(&key)
            .and_then(Option::as_ref)
            .is_some_and(|names| names.contains(&obj.metadata.name));
        if !present {
            missing.push(object);
            if first_only {
                break;
            }
        }
    }
    Ok(missing)
}

/// Names of the objects of a kind (in a namespace), metadata only; `None` when the kind is no
/// longer served.
async fn list_names(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    object: &str,
) -> Result<Option<HashSet<String>>, ClusterError> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    match api.list_metadata(&ListParams::default()).await {
        Ok(list) => Ok(Some(
            list.items
                .into_iter()
                .filter_map(|item| item.metadata.name)
                .collect(),
        )),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(source) => Err(ClusterError::List {
            object: object.to_string(),
            source,
        }),
    }
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
