//! Helm without a cluster: every upgrade renders the chart with `helm template` (so chart and
//! values errors surface exactly as they would on install) and releases are remembered in memory.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use futures::future::BoxFuture;
use tokio::process::Command;

use super::{Helm, HelmError, UpgradeRequest};

/// A release as last rendered.
struct Rendered {
    checksum: String,
    manifest: String,
}

/// Renders charts locally with the `helm` binary.
pub struct TemplateHelm {
    binary: PathBuf,
    namespace: String,
    tmp_dir: PathBuf,
    /// release → its last render
    releases: Mutex<BTreeMap<String, Rendered>>,
}

impl TemplateHelm {
    pub fn new(binary: PathBuf, namespace: String, tmp_dir: PathBuf) -> Self {
        Self {
            binary,
            namespace,
            tmp_dir,
            releases: Mutex::new(BTreeMap::new()),
        }
    }

    /// The last manifest rendered for `release`.
    pub fn manifest(&self, release: &str) -> Option<String> {
        self.releases().get(release).map(|r| r.manifest.clone())
    }

    fn releases(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Rendered>> {
        self.releases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn render(&self, req: &UpgradeRequest) -> Result<String, HelmError> {
        let failed = |message: String| HelmError::Command {
            operation: "template",
            release: req.release.clone(),
            message,
        };
        let values = tempfile::Builder::new()
            .prefix(&format!("{}.module-values.yaml-", req.release))
            .tempfile_in(&self.tmp_dir)
            .map_err(|e| failed(format!("cannot write the values file: {e}")))?;
        std::fs::write(values.path(), &req.values_yaml)
            .map_err(|e| failed(format!("cannot write the values file: {e}")))?;
        let mut cmd = Command::new(&self.binary);
        cmd.kill_on_drop(true)
            .arg("template")
            .arg(&req.release)
            .arg(&req.chart_dir)
            .arg("--namespace")
            .arg(if self.namespace.is_empty() {
                "default"
            } else {
                &self.namespace
            })
            .arg("--values")
            .arg(values.path())
            .env("HELM_CACHE_HOME", self.tmp_dir.join("helm-cache"))
            .env("HELM_CONFIG_HOME", self.tmp_dir.join("helm-config"))
            .env("HELM_DATA_HOME", self.tmp_dir.join("helm-data"));
        let out = cmd.output().await.map_err(|source| HelmError::Spawn {
            binary: self.binary.clone(),
            source,
        })?;
        if !out.status.success() {
            return Err(failed(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Helm for TemplateHelm {
    fn releases(&self) -> BoxFuture<'_, Result<Vec<String>, HelmError>> {
        let names = self.releases().keys().cloned().collect();
        Box::pin(async move { Ok(names) })
    }

    fn should_upgrade<'a>(
        &'a self,
        req: &'a UpgradeRequest,
    ) -> BoxFuture<'a, Result<bool, HelmError>> {
        let changed = self
            .releases()
            .get(&req.release)
            .is_none_or(|r| r.checksum != req.checksum);
        Box::pin(async move { Ok(changed) })
    }

    fn upgrade<'a>(&'a self, req: &'a UpgradeRequest) -> BoxFuture<'a, Result<(), HelmError>> {
        Box::pin(async move {
            let manifest = self.render(req).await?;
            let objects = manifest.matches("\nkind:").count();
            tracing::info!(
                release = %req.release,
                objects,
                "chart rendered with helm template (no cluster: nothing is applied)"
            );
            tracing::debug!(release = %req.release, "rendered manifest:\n{manifest}");
            let rendered = Rendered {
                checksum: req.checksum.clone(),
                manifest,
            };
            self.releases().insert(req.release.clone(), rendered);
            Ok(())
        })
    }

    fn uninstall<'a>(&'a self, release: &'a str) -> BoxFuture<'a, Result<(), HelmError>> {
        self.releases().remove(release);
        Box::pin(async { Ok(()) })
    }
}
