//! The Helm port: what the runtime asks of Helm (releases, upgrade decisions, install, delete)
//! and its data. The `helm` binary behind it is in `edges/helm`; the test kit has a fake.

use std::path::PathBuf;

use futures::future::BoxFuture;

/// The values-file key that carries the checksum of what was last installed, so the next run
/// can tell whether anything changed (the Go operator's legacy key, kept for compatibility).
pub const CHECKSUM_KEY: &str = "_addonOperatorModuleChecksum";

/// One release to install or upgrade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeRequest {
    /// Release name: the module name in kebab-case.
    pub release: String,
    /// The module directory (the chart).
    pub chart_dir: PathBuf,
    /// Helm values as YAML (global + the module's section, no `enabledModules`).
    pub values_yaml: String,
    /// Checksum of the values and chart files; stored with the release.
    pub checksum: String,
    /// The module is in maintenance (`<key>Maintenance: NoResourceReconciliation`): the release
    /// and its objects are labelled `maintenance.deckhouse.io/no-resource-reconciliation`.
    pub maintenance: bool,
}

/// A Helm operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    #[error("helm {operation} of release '{release}' failed: {message}")]
    Command {
        operation: &'static str,
        release: String,
        message: String,
    },
    #[error("helm list of releases failed: {message}")]
    List { message: String },
    #[error("start helm binary {}", binary.display())]
    Spawn {
        binary: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl HelmError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::Command { .. } => "helm_command",
            Self::List { .. } => "helm_list",
            Self::Spawn { .. } => "helm_spawn",
        }
    }
}

/// How a release differs from what its module would install (the resource monitor asks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// The release's last revision is not `deployed` (e.g. `failed`): its status.
    UnexpectedStatus(String),
    /// Objects of the release's manifest are missing from the cluster, as `ns/Kind/name`.
    AbsentResources(Vec<String>),
    /// Any other reason to upgrade (no release, a changed checksum).
    Other,
}

/// What the runtime needs from Helm.
pub trait Helm: Send + Sync {
    /// Names of the releases in the operator's namespace.
    fn releases(&self) -> BoxFuture<'_, Result<Vec<String>, HelmError>>;
    /// Whether `upgrade` must run: no release, a release not in `deployed` state, a different
    /// checksum, or resources of the release missing from the cluster.
    fn should_upgrade<'a>(
        &'a self,
        req: &'a UpgradeRequest,
    ) -> BoxFuture<'a, Result<bool, HelmError>>;
    /// Why the release drifted, or `None` when it did not. By default: [`Drift::Other`] when
    /// [`Self::should_upgrade`] says yes.
    fn drift<'a>(
        &'a self,
        req: &'a UpgradeRequest,
    ) -> BoxFuture<'a, Result<Option<Drift>, HelmError>> {
        Box::pin(async move {
            let upgrade = self.should_upgrade(req).await?;
            Ok(upgrade.then_some(Drift::Other))
        })
    }
    /// The objects of the release's latest revision as its manifest has them (hooks left out),
    /// each with the release namespace when it names none; `None` when there is no release or
    /// the edge cannot read manifests.
    fn release_objects<'a>(
        &'a self,
        release: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<serde_json::Value>>, HelmError>> {
        let _ = release;
        Box::pin(async { Ok(None) })
    }
    /// `helm upgrade --install`.
    fn upgrade<'a>(&'a self, req: &'a UpgradeRequest) -> BoxFuture<'a, Result<(), HelmError>>;
    /// `helm uninstall`; a missing release is not an error.
    fn uninstall<'a>(&'a self, release: &'a str) -> BoxFuture<'a, Result<(), HelmError>>;
    /// The latest revision of `release` (for Events and the module's status); `None` when there
    /// is none or the implementation cannot tell.
    fn revision<'a>(&'a self, release: &'a str) -> BoxFuture<'a, Result<Option<u64>, HelmError>> {
        let _ = release;
        Box::pin(async { Ok(None) })
    }
}
