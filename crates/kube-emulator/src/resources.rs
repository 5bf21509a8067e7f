//! The resource table: built-in kinds plus kinds registered by CustomResourceDefinitions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Storage identity of a resource: API group and plural name (versions share storage).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResKey {
    /// API group (`""` for core).
    pub group: String,
    /// Plural resource name.
    pub resource: String,
}

impl ResKey {
    /// A key from borrowed parts.
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// The core `namespaces` resource.
    pub fn namespaces() -> Self {
        Self::new("", "namespaces")
    }

    /// The `customresourcedefinitions` resource.
    pub fn crds() -> Self {
        Self::new("apiextensions.k8s.io", "customresourcedefinitions")
    }
}

/// One served resource: what discovery lists and the API routes.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: String,
    /// Served versions, preferred first.
    pub versions: Vec<String>,
    /// Kind of the objects.
    pub kind: String,
    /// Plural name used in paths.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names (`cm`, `deploy`, ...).
    pub short_names: Vec<String>,
    /// Whether `/status` is a separate subresource.
    pub has_status: bool,
    /// Whether the resource only answers `create` (access and token reviews), storing nothing.
    pub create_only: bool,
    /// A CRD's `additionalPrinterColumns` (of its preferred version) for table output.
    pub printer_columns: Vec<PrinterColumn>,
    /// Whether a CustomResourceDefinition defines the resource.
    pub custom: bool,
    /// A CRD's `openAPIV3Schema` of each served version that has one.
    pub schemas: BTreeMap<String, Value>,
    /// A CRD's `selectableFields` (of its preferred version), as field selector paths.
    pub selectable_fields: Vec<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type (`string`, `integer`, `date`, ...).
    pub kind: String,
    /// Simple JSONPath of the value (`.spec.replicas`).
    pub json_path: String,
    /// 0 is shown by default, higher only with `-o wide`.
    pub priority: i64,
}

impl ResourceInfo {
    /// Whether a CustomResourceDefinition defines the resource.
    pub fn is_custom(&self) -> bool {
        self.custom
    }

    /// Whether objects of the kind carry `metadata.generation` (kinds with a spec that
    /// controllers observe; ConfigMaps, Secrets, Namespaces, RBAC, Leases, Events... do not).
    pub fn keeps_generation(&self) -> bool {
        if self.custom {
            return true;
        }
        matches!(
            (self.group.as_str(), self.plural.as_str()),
            ("", "pods" | "podtemplates")
                | (
                    "apps",
                    "deployments" | "statefulsets" | "daemonsets" | "replicasets"
                )
                | ("batch", _)
                | ("networking.k8s.io", _)
                | ("policy", _)
                | ("apiextensions.k8s.io", _)
                | ("admissionregistration.k8s.io", _)
                | ("discovery.k8s.io", _)
                | ("autoscaling", _)
        )
    }

    /// Storage key of this resource.
    pub fn key(&self) -> ResKey {
        ResKey::new(&self.group, &self.plural)
    }

    /// `apiVersion` for a version of this resource's group.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// Group-qualified plural as used in error messages (`deployments.apps`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// (group, version, kind, plural, namespaced, short names, has status subresource)
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static str,
    bool,
);

#[rustfmt::skip]
const BUILTINS: &[Builtin] = &[
    ("", "v1", "Namespace", "namespaces", false, "ns", true),
    ("", "v1", "ConfigMap", "configmaps", true, "cm", false),
    ("", "v1", "Secret", "secrets", true, "", false),
    ("", "v1", "Service", "services", true, "svc", true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true, "sa", false),
    ("", "v1", "Pod", "pods", true, "po", true),
    ("", "v1", "Node", "nodes", false, "no", true),
    ("", "v1", "Endpoints", "endpoints", true, "ep", false),
    ("", "v1", "Event", "events", true, "ev", false),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, "pvc", true),
    ("", "v1", "PersistentVolume", "persistentvolumes", false, "pv", true),
    ("", "v1", "ResourceQuota", "resourcequotas", true, "quota", true),
    ("", "v1", "LimitRange", "limitranges", true, "limits", false),
    ("", "v1", "PodTemplate", "podtemplates", true, "", false),
    ("apps", "v1", "Deployment", "deployments", true, "deploy", true),
    ("apps", "v1", "StatefulSet", "statefulsets", true, "sts", true),
    ("apps", "v1", "DaemonSet", "daemonsets", true, "ds", true),
    ("apps", "v1", "ReplicaSet", "replicasets", true, "rs", true),
    ("apps", "v1", "ControllerRevision", "controllerrevisions", true, "", false),
    ("batch", "v1", "Job", "jobs", true, "", true),
    ("batch", "v1", "CronJob", "cronjobs", true, "cj", true),
    ("networking.k8s.io", "v1", "Ingress", "ingresses", true, "ing", true),
    ("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, "", false),
    ("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, "netpol", false),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", true, "", false),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, "", false),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, "", false),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, "", false),
    ("storage.k8s.io", "v1", "StorageClass", "storageclasses", false, "sc", false),
    ("events.k8s.io", "v1", "Event", "events", true, "ev", false),
    ("coordination.k8s.io", "v1", "Lease", "leases", true, "", false),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, "crd,crds", true),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, "pdb", true),
    ("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, "hpa", true),
    ("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, "hpa", true),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, "pc", false),
    ("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, "", false),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false, "", false),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false, "", false),
];

/// Review kinds: `create` answers with an approving status and stores nothing.
#[rustfmt::skip]
const REVIEWS: &[(&str, &str, &str, bool)] = &[
    ("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false),
    ("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews", false),
    ("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews", false),
    ("authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews", true),
    ("authentication.k8s.io", "SelfSubjectReview", "selfsubjectreviews", false),
    ("authentication.k8s.io", "TokenReview", "tokenreviews", false),
];

/// All resources the emulator serves right now.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    resources: Vec<ResourceInfo>,
}

impl Registry {
    /// The built-in table plus the resources of the given CRD objects.
    pub fn new<'a>(crds: impl Iterator<Item = &'a Value>) -> Self {
        let mut resources: Vec<ResourceInfo> = Vec::new();
        for (group, version, kind, plural, namespaced, short, status) in BUILTINS {
            if let Some(existing) = resources
                .iter_mut()
                .find(|r| r.group == *group && r.plural == *plural)
            {
                existing.versions.push((*version).to_string());
                continue;
            }
            resources.push(ResourceInfo {
                group: (*group).to_string(),
                versions: vec![(*version).to_string()],
                kind: (*kind).to_string(),
                plural: (*plural).to_string(),
                singular: kind.to_lowercase(),
                namespaced: *namespaced,
                short_names: short
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                has_status: *status,
                create_only: false,
                printer_columns: Vec::new(),
                custom: false,
                schemas: BTreeMap::new(),
                selectable_fields: Vec::new(),
            });
        }
        for (group, kind, plural, namespaced) in REVIEWS {
            resources.push(ResourceInfo {
                group: (*group).to_string(),
                versions: vec!["v1".to_string()],
                kind: (*kind).to_string(),
                plural: (*plural).to_string(),
                singular: kind.to_lowercase(),
                namespaced: *namespaced,
                short_names: Vec::new(),
                has_status: false,
                create_only: true,
                printer_columns: Vec::new(),
                custom: false,
                schemas: BTreeMap::new(),
                selectable_fields: Vec::new(),
            });
        }
        for crd in crds {
            if let Some(info) = crd_resource(crd)
                && !resources
                    .iter()
                    .any(|r| r.group == info.group && r.plural == info.plural)
            {
                resources.push(info);
            }
        }
        Self { resources }
    }

    /// The resource served at `group/version/plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        self.resources.iter().find(|r| {
            r.group == group && r.plural == plural && r.versions.iter().any(|v| v == version)
        })
    }

    /// The resource stored under `key`, whatever its versions.
    pub fn by_key(&self, key: &ResKey) -> Option<&ResourceInfo> {
        self.resources
            .iter()
            .find(|r| r.group == key.group && r.plural == key.resource)
    }

    /// Non-core groups with their versions, preferred first, in first-seen order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for r in self.resources.iter().filter(|r| !r.group.is_empty()) {
            let entry = match groups.iter_mut().position(|(g, _)| *g == r.group) {
                Some(i) => &mut groups[i].1,
                None => {
                    groups.push((r.group.clone(), Vec::new()));
                    let last = groups.len() - 1;
                    &mut groups[last].1
                }
            };
            for v in &r.versions {
                if !entry.contains(v) {
                    entry.push(v.clone());
                }
            }
        }
        groups
    }

    /// Resources served in one group version.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<&ResourceInfo> {
        self.resources
            .iter()
            .filter(|r| r.group == group && r.versions.iter().any(|v| v == version))
            .collect()
    }
}

/// The resource a CRD object defines, if its spec is complete enough.
pub fn crd_resource(crd: &Value) -> Option<ResourceInfo> {
    let spec = crd.get("spec")?;
    let names = spec.get("names")?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    let kind = text(names, "kind")?;
    let plural = text(names, "plural")?;
    let versions: Vec<&Value> = spec.get("versions")?.as_array()?.iter().collect();
    let served: Vec<String> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(true))
        .filter_map(|v| text(v, "name"))
        .collect();
    if served.is_empty() {
        return None;
    }
    let has_status = versions
        .iter()
        .any(|v| v.pointer("/subresources/status").is_some());
    let short_names = names
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let schemas = versions
        .iter()
        .filter_map(|v| {
            let schema = v.pointer("/schema/openAPIV3Schema")?;
            Some((text(v, "name")?, schema.clone()))
        })
        .collect();
    let versions_sorted = sort_versions(served);
    let preferred = versions.iter().find(|v| {
        v.get("name").and_then(Value::as_str) == versions_sorted.first().map(String::as_str)
    });
    let printer_columns = preferred
        .and_then(|v| v.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .map(|cols| cols.iter().filter_map(printer_column).collect())
        .unwrap_or_default();
    let selectable_fields = preferred
        .and_then(|v| v.get("selectableFields"))
        .and_then(Value::as_array)
        .map(|fields| {
            fields
                .iter()
                .filter_map(|f| f.get("jsonPath")?.as_str())
                .map(|p| p.trim_start_matches('.').to_string())
                .collect()
        })
        .unwrap_or_default();
    Some(ResourceInfo {
        group: text(spec, "group")?,
        versions: versions_sorted,
        singular: text(names, "singular").unwrap_or_else(|| kind.to_lowercase()),
        kind,
        plural,
        namespaced: spec.get("scope").and_then(Value::as_str) != Some("Cluster"),
        short_names,
        has_status,
        create_only: false,
        printer_columns,
        custom: true,
        schemas,
        selectable_fields,
    })
}

fn printer_column(col: &Value) -> Option<PrinterColumn> {
    Some(PrinterColumn {
        name: col.get("name")?.as_str()?.to_string(),
        kind: col
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string")
            .to_string(),
        json_path: col.get("jsonPath")?.as_str()?.to_string(),
        priority: col.get("priority").and_then(Value::as_i64).unwrap_or(0),
    })
}

/// Orders versions the Kubernetes way: GA before beta before alpha, higher numbers first.
fn sort_versions(mut versions: Vec<String>) -> Vec<String> {
    versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    versions
}

fn version_priority(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (stage, minor) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (stage, major, minor)
}

/// Whether the resource has a `/scale` subresource.
pub fn has_scale(info: &ResourceInfo) -> bool {
    info.group == "apps"
        && matches!(
            info.plural.as_str(),
            "deployments" | "statefulsets" | "replicasets"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_table_serves_deployments_in_apps_v1() {
        let reg = Registry::new(std::iter::empty());
        let deploy = reg.find("apps", "v1", "deployments").unwrap();
        assert_eq!(deploy.kind, "Deployment");
        assert!(deploy.namespaced);
        assert_eq!(
            reg.find("autoscaling", "v1", "horizontalpodautoscalers")
                .unwrap()
                .versions,
            ["v2", "v1"]
        );
    }

    #[test]
    fn crd_registers_its_served_versions_preferring_ga() {
        let crd = json!({"spec": {"group": "ex.io", "scope": "Cluster",
            "names": {"kind": "Thing", "plural": "things", "shortNames": ["th"]},
            "versions": [{"name": "v1beta1", "served": true}, {"name": "v1", "served": true},
                         {"name": "v2alpha1", "served": false}]}});
        let reg = Registry::new([&crd].into_iter());
        let things = reg.find("ex.io", "v1beta1", "things").unwrap();
        assert_eq!(things.versions, ["v1", "v1beta1"]);
        assert!(!things.namespaced);
        assert_eq!(things.singular, "thing");
        assert!(
            reg.groups()
                .iter()
                .any(|(g, v)| g == "ex.io" && v[0] == "v1")
        );
    }
}
