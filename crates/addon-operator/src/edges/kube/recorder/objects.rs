//! The Module status objects in the cluster: their CRD (created when missing), one labelled
//! object per module of the tree (objects without the label are never touched), and their
//! `status` subresource.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

/// The CRD of the status objects, as shipped in `deploy/`.
const CRD_YAML: &str = include_str!("../../../../../../deploy/base/modules-crd.yaml");
pub const MODULE_CRD_NAME: &str = "modules.addon-operator.io";
pub const MODULE_API_VERSION: &str = "addon-operator.io/v1alpha1";
/// The status object of the global hooks: a name no module can have (module names have no dot).
pub const GLOBAL_OBJECT: &str = "global.hooks";
/// The label of the objects this operator keeps; its value is the operator's namespace, so that
/// two operators in one cluster leave each other's objects alone.
pub const OWNER_LABEL: &str = "addon-operator.io/owner";
/// How long the new CRD may take to be served.
const CRD_WAIT: Duration = Duration::from_secs(30);

/// The CRD of the status objects could not be had.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("parse the shipped CRD")]
    Parse(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("read the CRD {MODULE_CRD_NAME}")]
    Read(#[source] kube::Error),
    #[error("create the CRD {MODULE_CRD_NAME}")]
    Create(#[source] kube::Error),
    #[error(transparent)]
    Wait(#[from] crate::edges::kube::crds::CrdWaitError),
}

/// The Module kind.
pub fn module_resource() -> ApiResource {
    ApiResource {
        group: "addon-operator.io".into(),
        version: "v1alpha1".into(),
        api_version: MODULE_API_VERSION.into(),
        kind: "Module".into(),
        plural: "modules".into(),
    }
}

/// The shipped CRD, parsed.
pub fn crd() -> Result<CustomResourceDefinition, CrdError> {
    let value = addon_core::yaml::parse(CRD_YAML).map_err(|e| CrdError::Parse(Box::new(e)))?;
    serde_json::from_value(value).map_err(|e| CrdError::Parse(Box::new(e)))
}

/// Creates the CRD when it is missing and waits until it is served.
pub async fn ensure_crd(client: &kube::Client) -> Result<(), CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let found = api.get_opt(MODULE_CRD_NAME).await.map_err(CrdError::Read)?;
    if found.is_none() {
        let crd = crd()?;
        match api.create(&PostParams::default(), &crd).await {
            Ok(_) => tracing::info!(
                crd = MODULE_CRD_NAME,
                "created the CRD of the module status objects"
            ),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(CrdError::Create(e)),
        }
    }
    let names = [MODULE_CRD_NAME.to_string()];
    crate::edges::kube::crds::wait_established(client, &names, CRD_WAIT).await?;
    Ok(())
}

/// The Module objects of the cluster, as name → uid: the labelled ones of `owner` (`ours`) and
/// the names of all others (`foreign`).
pub struct Existing {
    pub ours: BTreeMap<String, String>,
    pub foreign: BTreeSet<String>,
}

pub async fn list(client: &kube::Client, owner: &str) -> Result<Existing, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &module_resource());
    let listed = api.list(&ListParams::default()).await?;
    let mut existing = Existing {
        ours: BTreeMap::new(),
        foreign: BTreeSet::new(),
    };
    for object in listed.items {
        let name = object.metadata.name.clone().unwrap_or_default();
        let labelled = (object.metadata.labels.as_ref())
            .and_then(|l| l.get(OWNER_LABEL))
            .is_some_and(|v| v == owner);
        match labelled {
            true => existing
                .ours
                .insert(name, object.metadata.uid.unwrap_or_default()),
            false => existing.foreign.insert(name).then_some(String::new()),
        };
    }
    Ok(existing)
}

/// Creates the labelled object `name`; its uid, or `None` when another object has the name.
pub async fn create(
    client: &kube::Client,
    owner: &str,
    name: &str,
) -> Result<Option<String>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &module_resource());
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": MODULE_API_VERSION,
        "kind": "Module",
        "metadata": {
            "name": name,
            "labels": {
                OWNER_LABEL: owner,
                "app.kubernetes.io/managed-by": "addon-operator",
            },
        },
        "spec": {},
    }))
    .map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &object).await {
        Ok(created) => Ok(Some(created.metadata.uid.unwrap_or_default())),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes our object `name` (a module that left the tree).
pub async fn delete(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &module_resource());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `status` to the status subresource of `name`.
pub async fn write_status(
    client: &kube::Client,
    name: &str,
    status: Value,
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &module_resource());
    let patch = json!({ "status": status });
    let params = PatchParams::default();
    api.patch_status(name, &params, &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_crd_parses_and_names_the_kind_the_operator_writes() {
        let crd = crd().unwrap();
        assert_eq!(crd.metadata.name.as_deref(), Some(MODULE_CRD_NAME));
        let spec = &crd.spec;
        assert_eq!(spec.group, module_resource().group);
        assert_eq!(spec.names.plural, module_resource().plural);
        assert_eq!(spec.scope, "Cluster");
        let version = &spec.versions[0];
        assert_eq!(version.name, module_resource().version);
        assert!(version.subresources.as_ref().unwrap().status.is_some());
        assert!(
            !GLOBAL_OBJECT.is_empty() && addon_core::names::ModuleName::new(GLOBAL_OBJECT).is_err()
        );
    }

    #[test]
    fn the_chart_ships_the_same_crd() {
        let chart =
            include_str!("../../../../../../deploy/helm/addon-operator/crds/modules-crd.yaml");
        assert_eq!(
            chart, CRD_YAML,
            "copy deploy/base/modules-crd.yaml into the chart's crds/"
        );
    }
}
