//! Resolving a binding's or an operation's `kind` (+ optional `apiVersion`) to an `ApiResource` through API discovery, cached.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResource, APIResourceList};
use kube::Client;
use kube::discovery::ApiResource;

/// A kind the API server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// A kind that could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error(
        "kind '{kind}'{} is not served by the API server",
        in_version(api_version)
    )]
    UnknownKind {
        kind: String,
        api_version: Option<String>,
    },
    #[error("discover the resources of '{api_version}'")]
    Discover {
        api_version: String,
        #[source]
        source: kube::Error,
    },
}

fn in_version(api_version: &Option<String>) -> String {
    api_version
        .as_ref()
        .map(|v| format!(" in '{v}'"))
        .unwrap_or_default()
}

impl DiscoveryError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::UnknownKind { .. } => "kube_unknown_kind",
            Self::Discover { .. } => "kube_discovery",
        }
    }
}

type CacheKey = (String, String);

/// Resolves kinds like upstream: the Kind case-insensitively, or the plural, singular or a short
/// name (`DaemonSet`, `daemonsets`, `daemonset`, `ds`). Without `apiVersion` the preferred version
/// of every group is searched, the core group first. Hits are cached; misses ask again (a CRD
/// may have been created since).
pub struct KindResolver {
    client: Client,
    cache: Mutex<HashMap<CacheKey, ResolvedKind>>,
}

impl KindResolver {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            cache: Mutex::default(),
        }
    }

    /// The client the resolver asks.
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub async fn resolve(
        &self,
        api_version: Option<&str>,
        kind: &str,
    ) -> Result<ResolvedKind, DiscoveryError> {
        let key = (
            api_version.unwrap_or_default().to_string(),
            kind.to_ascii_lowercase(),
        );
        if let Some(hit) = self.lock().get(&key) {
            return Ok(hit.clone());
        }
        let found = match api_version {
            Some(v) => self.find_in(v, kind).await?,
            None => self.find_preferred(kind).await?,
        };
        let resolved = found.ok_or_else(|| DiscoveryError::UnknownKind {
            kind: kind.to_string(),
            api_version: api_version.map(str::to_string),
        })?;
        tracing::debug!(kind, api_version = %resolved.resource.api_version,
            resource = %resolved.resource.plural, "kind resolved");
        self.lock().insert(key, resolved.clone());
        Ok(resolved)
    }

    /// Forgets a cached kind (after its resource disappeared).
    pub fn forget(&self, api_version: Option<&str>, kind: &str) {
        let key = (
            api_version.unwrap_or_default().to_string(),
            kind.to_ascii_lowercase(),
        );
        self.lock().remove(&key);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<CacheKey, ResolvedKind>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn find_in(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<ResolvedKind>, DiscoveryError> {
        match self.resources(api_version).await {
            Ok(list) => Ok(pick(&list, kind)),
            Err(DiscoveryError::Discover {
                source: kube::Error::Api(status),
                ..
            }) if status.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn find_preferred(&self, kind: &str) -> Result<Option<ResolvedKind>, DiscoveryError> {
        let discover = |api_version: &str| {
            let api_version = api_version.to_string();
            move |source| DiscoveryError::Discover {
                api_version,
                source,
            }
        };
        let core = self
            .client
            .list_core_api_versions()
            .await
            .map_err(discover("v1"))?;
        let mut versions: Vec<String> = core.versions.into_iter().take(1).collect();
        let groups = self
            .client
            .list_api_groups()
            .await
            .map_err(discover("apis"))?;
        for group in groups.groups {
            let preferred = group
                .preferred_version
                .map(|v| v.group_version)
                .or_else(|| group.versions.first().map(|v| v.group_version.clone()));
            versions.extend(preferred);
        }
        for api_version in versions {
            if let Some(found) = self.find_in(&api_version, kind).await? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    async fn resources(&self, api_version: &str) -> Result<APIResourceList, DiscoveryError> {
        let result = if api_version.contains('/') {
            self.client.list_api_group_resources(api_version).await
        } else {
            self.client.list_core_api_resources(api_version).await
        };
        result.map_err(|source| DiscoveryError::Discover {
            api_version: api_version.to_string(),
            source,
        })
    }
}

/// The first top-level resource of `list` that `kind` names.
fn pick(list: &APIResourceList, kind: &str) -> Option<ResolvedKind> {
    list.resources
        .iter()
        .find(|r| !r.name.contains('/') && names(r, kind))
        .map(|r| resolved(&list.group_version, r))
}

fn names(r: &APIResource, kind: &str) -> bool {
    let lower = kind.to_ascii_lowercase();
    r.kind.eq_ignore_ascii_case(kind)
        || r.name == lower
        || r.singular_name == lower
        || r.short_names.iter().flatten().any(|s| *s == lower)
}

fn resolved(group_version: &str, r: &APIResource) -> ResolvedKind {
    let (group, version) = match group_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), group_version.to_string()),
    };
    ResolvedKind {
        resource: ApiResource {
            group,
            version,
            api_version: group_version.to_string(),
            kind: r.kind.clone(),
            plural: r.name.clone(),
        },
        namespaced: r.namespaced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apps() -> APIResourceList {
        serde_json::from_value(json!({
            "groupVersion": "apps/v1",
            "resources": [
                {"name": "daemonsets/status", "singularName": "", "namespaced": true, "kind": "DaemonSet", "verbs": ["get"]},
                {"name": "daemonsets", "singularName": "daemonset", "namespaced": true, "kind": "DaemonSet",
                 "verbs": ["list"], "shortNames": ["ds"]}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn a_kind_is_found_by_kind_plural_singular_and_short_name() {
        for name in ["DaemonSet", "daemonset", "DAEMONSET", "daemonsets", "ds"] {
            let found = pick(&apps(), name).unwrap_or_else(|| panic!("{name} not found"));
            assert_eq!(found.resource.plural, "daemonsets");
            assert_eq!(found.resource.group, "apps");
            assert_eq!(found.resource.api_version, "apps/v1");
            assert!(found.namespaced);
        }
        assert!(pick(&apps(), "Deployment").is_none());
    }

    #[test]
    fn a_core_group_version_has_an_empty_group() {
        let r: APIResource = serde_json::from_value(json!({
            "name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": []
        }))
        .unwrap();
        let found = resolved("v1", &r);
        assert_eq!(found.resource.group, "");
        assert_eq!(found.resource.version, "v1");
        assert_eq!(found.resource.api_version, "v1");
    }
}
