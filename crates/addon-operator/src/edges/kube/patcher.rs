//! [`ObjectPatcher`]: executes hooks' `$KUBERNETES_PATCH_PATH` operations (Create*, Delete*, JQPatch, MergePatch, JSONPatch) against the API server.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use addon_core::hook_output::kube_patch::{
    CreateMode, DeletePropagation, KubeOperation, ObjectNameError, ObjectRef, check_object_meta,
    check_target,
};
use addon_core::jq::{JqError, JqFilter};
use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, PropagationPolicy,
};
use serde_json::Value;

use super::discovery::{DiscoveryError, KindResolver};
use crate::edges::jq::JqRunner;
use crate::runtime::edges::ObjectsError;

/// Timing and retry knobs (upstream: Delete waits up to 20 s, polling every second).
#[derive(Debug, Clone)]
pub struct PatcherSettings {
    /// How long `Delete` (foreground) waits for the object to disappear.
    pub delete_timeout: Duration,
    pub delete_poll: Duration,
    /// Attempts of read-modify-write operations (CreateOrUpdate, JQPatch) on `409 Conflict`.
    pub conflict_attempts: usize,
    /// Where `JQPatch` filters run (the operator's jq sandbox).
    pub jq: JqRunner,
}

impl Default for PatcherSettings {
    fn default() -> Self {
        Self {
            delete_timeout: Duration::from_secs(20),
            delete_poll: Duration::from_secs(1),
            conflict_attempts: 5,
            jq: JqRunner::default(),
        }
    }
}

/// Why one operation failed.
#[derive(Debug, thiserror::Error)]
pub enum OperationFailure {
    #[error("resolve the kind")]
    Resolve(#[source] DiscoveryError),
    #[error("the kind is namespaced: a namespace is required")]
    NamespaceRequired,
    #[error(transparent)]
    InvalidName(ObjectNameError),
    #[error("the object is not a Kubernetes object")]
    BadObject(#[source] serde_json::Error),
    #[error("create")]
    Create(#[source] kube::Error),
    #[error("get")]
    Get(#[source] kube::Error),
    #[error("update")]
    Update(#[source] kube::Error),
    #[error("patch")]
    Patch(#[source] kube::Error),
    #[error("delete")]
    Delete(#[source] kube::Error),
    #[error("apply the jqFilter")]
    Jq(#[source] JqError),
    #[error("the object still exists {0:?} after deleting it")]
    StillExists(Duration),
    #[error("still conflicting after {0} attempts")]
    Conflicts(usize),
}

impl OperationFailure {
    pub fn category(&self) -> &'static str {
        match self {
            Self::Resolve(e) => e.category(),
            Self::NamespaceRequired | Self::BadObject(_) | Self::InvalidName(_) => {
                "kube_patch_invalid"
            }
            Self::Jq(e) => e.category(),
            Self::StillExists(_) => "kube_delete_timeout",
            Self::Conflicts(_) => "kube_conflict",
            Self::Create(_) | Self::Get(_) | Self::Update(_) | Self::Patch(_) | Self::Delete(_) => {
                "kube_api"
            }
        }
    }
}

/// One failed operation: its index in the file and what it was (`Create object v1/ConfigMap/ns/name`).
#[derive(Debug, thiserror::Error)]
#[error("operation {index} ({description})")]
pub struct OperationError {
    pub index: usize,
    pub description: String,
    #[source]
    pub source: OperationFailure,
}

/// The operations that failed (every operation is attempted, as upstream).
#[derive(Debug, thiserror::Error)]
#[error("{} of {total} Kubernetes operations failed: {}", failures.len(), describe(failures))]
pub struct PatchError {
    pub total: usize,
    pub failures: Vec<OperationError>,
}

fn describe(failures: &[OperationError]) -> String {
    let mut out = String::new();
    for (i, f) in failures.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        let _ = write!(out, "{}", addon_core::error::error_chain(f));
    }
    out
}

impl PatchError {
    /// The category of the first failure.
    pub fn category(&self) -> &'static str {
        self.failures
            .first()
            .map_or("kube_patch", |f| f.source.category())
    }
}

impl From<PatchError> for ObjectsError {
    fn from(error: PatchError) -> Self {
        Self::Apply(Box::new(error))
    }
}

/// Applies parsed `$KUBERNETES_PATCH_PATH` operations in order.
pub struct ObjectPatcher {
    resolver: Arc<KindResolver>,
    /// The client of the operations (the resolver's by default; upstream gives the object
    /// patcher its own, with its own rate limit).
    client: kube::Client,
    settings: PatcherSettings,
}

type Step<T> = Result<T, OperationFailure>;

impl ObjectPatcher {
    pub fn new(resolver: Arc<KindResolver>) -> Self {
        Self::with_settings(resolver, PatcherSettings::default())
    }

    pub fn with_settings(resolver: Arc<KindResolver>, settings: PatcherSettings) -> Self {
        let client = resolver.client().clone();
        Self {
            resolver,
            client,
            settings,
        }
    }

    /// The same patcher sending its operations with `client` (kinds are still resolved with the
    /// resolver's).
    pub fn with_client(mut self, client: kube::Client) -> Self {
        self.client = client;
        self
    }

    /// Executes every operation; the error lists those that failed.
    pub async fn apply(&self, ops: &[KubeOperation]) -> Result<(), PatchError> {
        let mut failures = Vec::new();
        for (index, op) in ops.iter().enumerate() {
            let description = description(op);
            match self.execute(op).await {
                Ok(()) => tracing::debug!(operation = %description, "kubernetes operation applied"),
                Err(source) => failures.push(OperationError {
                    index,
                    description,
                    source,
                }),
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(PatchError {
                total: ops.len(),
                failures,
            })
        }
    }

    /// The object `target` names, `None` when the cluster has none.
    pub async fn get(&self, target: &ObjectRef) -> Result<Option<Value>, PatchError> {
        let got = async {
            let api = self.api(target).await?;
            let object = api
                .get_opt(&target.name)
                .await
                .map_err(OperationFailure::Get)?;
            object
                .map(serde_json::to_value)
                .transpose()
                .map_err(OperationFailure::BadObject)
        };
        got.await.map_err(|source| PatchError {
            total: 1,
            failures: vec![OperationError {
                index: 0,
                description: format!("get {} {}", target.kind, target.name),
                source,
            }],
        })
    }

    async fn execute(&self, op: &KubeOperation) -> Step<()> {
        match op {
            KubeOperation::Create {
                mode,
                object,
                subresource,
            } => self.create(*mode, object, subresource.as_deref()).await,
            KubeOperation::Delete {
                target,
                propagation,
            } => self.delete(target, *propagation).await,
            KubeOperation::JqPatch {
                target,
                filter,
                ignore_missing_object,
            } => {
                let api = self.api(target).await?;
                let done = self.jq_patch(&api, target, filter).await;
                ignore_missing(done, *ignore_missing_object)
            }
            KubeOperation::MergePatch {
                target,
                patch,
                ignore_missing_object,
            } => {
                let done = self.patch(target, &Patch::Merge(patch)).await;
                ignore_missing(done, *ignore_missing_object)
            }
            KubeOperation::JsonPatch {
                target,
                patch,
                ignore_missing_object,
            } => {
                let done = self.patch(target, &Patch::Json::<()>(patch.clone())).await;
                ignore_missing(done, *ignore_missing_object)
            }
        }
    }

    async fn api_for(
        &self,
        api_version: Option<&str>,
        kind: &str,
        namespace: Option<&str>,
    ) -> Step<Api<DynamicObject>> {
        let resolved = self
            .resolver
            .resolve(api_version, kind)
            .await
            .map_err(OperationFailure::Resolve)?;
        let client = self.client.clone();
        let ar = &resolved.resource;
        if !resolved.namespaced {
            return Ok(Api::all_with(client, ar));
        }
        let ns = namespace.ok_or(OperationFailure::NamespaceRequired)?;
        Ok(Api::namespaced_with(client, ns, ar))
    }

    /// The API of `target`, whose name and namespace go into request URLs: checked here again,
    /// whoever built the operation.
    async fn api(&self, target: &ObjectRef) -> Step<Api<DynamicObject>> {
        check_target(target).map_err(OperationFailure::InvalidName)?;
        self.api_for(
            target.api_version.as_deref(),
            &target.kind,
            target.namespace.as_deref(),
        )
        .await
    }

    async fn create(&self, mode: CreateMode, object: &Value, sub: Option<&str>) -> Step<()> {
        check_object_meta(object).map_err(OperationFailure::InvalidName)?;
        let meta = &object["metadata"];
        let api = self
            .api_for(
                object["apiVersion"].as_str(),
                object["kind"].as_str().unwrap_or_default(),
                meta["namespace"].as_str().filter(|s| !s.is_empty()),
            )
            .await?;
        let desired: DynamicObject =
            serde_json::from_value(object.clone()).map_err(OperationFailure::BadObject)?;
        let err = match api.create(&PostParams::default(), &desired).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        match mode {
            _ if !is_code(&err, 409) => Err(OperationFailure::Create(err)),
            CreateMode::Create => Err(OperationFailure::Create(err)),
            CreateMode::CreateIfNotExists => Ok(()),
            CreateMode::CreateOrUpdate => self.replace_whole(&api, desired, sub).await,
        }
    }

    /// CreateOrUpdate of an existing object: {GET, copy its resourceVersion, PUT} until no conflict.
    async fn replace_whole(
        &self,
        api: &Api<DynamicObject>,
        mut desired: DynamicObject,
        sub: Option<&str>,
    ) -> Step<()> {
        let name = desired.metadata.name.clone().unwrap_or_default();
        for _ in 0..self.settings.conflict_attempts {
            let current = api.get(&name).await.map_err(OperationFailure::Get)?;
            desired.metadata.resource_version = current.metadata.resource_version;
            match replace(api, &name, &desired, sub).await {
                Err(e) if is_code(&e, 409) => continue,
                other => return other.map(drop).map_err(OperationFailure::Update),
            }
        }
        Err(OperationFailure::Conflicts(self.settings.conflict_attempts))
    }

    async fn delete(&self, target: &ObjectRef, propagation: DeletePropagation) -> Step<()> {
        let api = self.api(target).await?;
        let policy = match propagation {
            DeletePropagation::Foreground => PropagationPolicy::Foreground,
            DeletePropagation::Background => PropagationPolicy::Background,
            DeletePropagation::Orphan => PropagationPolicy::Orphan,
        };
        let dp = DeleteParams {
            propagation_policy: Some(policy),
            ..DeleteParams::default()
        };
        match api.delete(&target.name, &dp).await {
            Ok(_) => {}
            Err(e) if is_code(&e, 404) => return Ok(()),
            Err(e) => return Err(OperationFailure::Delete(e)),
        }
        if propagation == DeletePropagation::Foreground {
            self.wait_gone(&api, &target.name).await?;
        }
        Ok(())
    }

    async fn wait_gone(&self, api: &Api<DynamicObject>, name: &str) -> Step<()> {
        let deadline = tokio::time::Instant::now() + self.settings.delete_timeout;
        loop {
            if api
                .get_opt(name)
                .await
                .map_err(OperationFailure::Get)?
                .is_none()
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(OperationFailure::StillExists(self.settings.delete_timeout));
            }
            tokio::time::sleep(self.settings.delete_poll).await;
        }
    }

    /// {GET, run the filter on the whole object, PUT if it changed} until no conflict.
    async fn jq_patch(
        &self,
        api: &Api<DynamicObject>,
        target: &ObjectRef,
        filter: &JqFilter,
    ) -> Step<()> {
        let sub = target.subresource.as_deref();
        for _ in 0..self.settings.conflict_attempts {
            let current = api.get(&target.name).await.map_err(OperationFailure::Get)?;
            let before = serde_json::to_value(&current).map_err(OperationFailure::BadObject)?;
            let after = self
                .settings
                .jq
                .apply(filter, &before)
                .await
                .map_err(OperationFailure::Jq)?;
            if after == before {
                return Ok(());
            }
            let desired: DynamicObject =
                serde_json::from_value(after).map_err(OperationFailure::BadObject)?;
            match replace(api, &target.name, &desired, sub).await {
                Err(e) if is_code(&e, 409) => continue,
                other => return other.map(drop).map_err(OperationFailure::Update),
            }
        }
        Err(OperationFailure::Conflicts(self.settings.conflict_attempts))
    }

    async fn patch<P: serde::Serialize + std::fmt::Debug>(
        &self,
        target: &ObjectRef,
        patch: &Patch<P>,
    ) -> Step<()> {
        let api = self.api(target).await?;
        let pp = PatchParams::default();
        let result = match target.subresource.as_deref() {
            Some(sub) => api.patch_subresource(sub, &target.name, &pp, patch).await,
            None => api.patch(&target.name, &pp, patch).await,
        };
        result.map(drop).map_err(OperationFailure::Patch)
    }
}

async fn replace(
    api: &Api<DynamicObject>,
    name: &str,
    object: &DynamicObject,
    sub: Option<&str>,
) -> Result<DynamicObject, kube::Error> {
    let pp = PostParams::default();
    match sub {
        Some(sub) => api.replace_subresource(sub, name, &pp, object).await,
        None => api.replace(name, &pp, object).await,
    }
}

fn is_code(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

/// `ignoreMissingObject`: a `404 Not Found` from the GET or PATCH is success.
fn ignore_missing(done: Step<()>, ignore: bool) -> Step<()> {
    match done {
        Err(OperationFailure::Get(e) | OperationFailure::Patch(e))
            if ignore && is_code(&e, 404) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// Upstream's description: `Create object v1/ConfigMap/ns/name`.
fn description(op: &KubeOperation) -> String {
    match op {
        KubeOperation::Create { mode, object, .. } => {
            let verb = match mode {
                CreateMode::Create => "Create",
                CreateMode::CreateOrUpdate => "CreateOrUpdate",
                CreateMode::CreateIfNotExists => "CreateIfNotExists",
            };
            let meta = &object["metadata"];
            let name = meta["name"]
                .as_str()
                .or_else(|| meta["generateName"].as_str())
                .unwrap_or_default();
            format!(
                "{verb} object {}/{}/{}/{name}",
                object["apiVersion"].as_str().unwrap_or_default(),
                object["kind"].as_str().unwrap_or_default(),
                meta["namespace"].as_str().unwrap_or_default(),
            )
        }
        KubeOperation::Delete {
            target,
            propagation,
        } => {
            let verb = match propagation {
                DeletePropagation::Foreground => "Delete",
                DeletePropagation::Background => "DeleteInBackground",
                DeletePropagation::Orphan => "DeleteNonCascading",
            };
            target_description(verb, target)
        }
        KubeOperation::JqPatch { target, .. } => target_description("JQPatch", target),
        KubeOperation::MergePatch { target, .. } => target_description("MergePatch", target),
        KubeOperation::JsonPatch { target, .. } => target_description("JSONPatch", target),
    }
}

fn target_description(verb: &str, t: &ObjectRef) -> String {
    let sub = t
        .subresource
        .as_ref()
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    format!(
        "{verb} object {}/{}/{}/{}{sub}",
        t.api_version.as_deref().unwrap_or_default(),
        t.kind,
        t.namespace.as_deref().unwrap_or_default(),
        t.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::hook_output::kube_patch::parse;

    #[test]
    fn descriptions_name_the_operation_and_the_object() {
        let ops = parse(concat!(
            r#"{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns", "name": "a"}}}"#,
            r#"{"operation": "DeleteInBackground", "kind": "Pod", "namespace": "ns", "name": "p"}"#,
            r#"{"operation": "MergePatch", "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d", "subresource": "status", "mergePatch": {}}"#,
        ))
        .unwrap();
        let texts: Vec<String> = ops.iter().map(description).collect();
        assert_eq!(
            texts,
            vec![
                "Create object v1/ConfigMap/ns/a",
                "DeleteInBackground object /Pod/ns/p",
                "MergePatch object apps/v1/Deployment/ns/d (status)",
            ]
        );
    }
}
