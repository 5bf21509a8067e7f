//! An in-memory Helm for runtime tests: releases in a map, every call recorded, failures scripted.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use addon_operator::edges::helm::{Drift, Helm, HelmError, UpgradeRequest};

/// A recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelmCall {
    Upgrade {
        release: String,
        values_yaml: String,
    },
    Uninstall {
        release: String,
    },
}

#[derive(Debug, Default)]
struct State {
    /// release → checksum of the last upgrade
    releases: BTreeMap<String, String>,
    calls: Vec<HelmCall>,
    /// releases whose next upgrades fail, one entry per failure
    failures: VecDeque<String>,
    /// what the next `drift` of a release reports
    drifts: BTreeMap<String, Drift>,
    /// `maintenance` of every upgrade, in order
    maintenance: Vec<bool>,
    /// release → the objects of its manifest (`release_objects`)
    manifests: BTreeMap<String, Vec<serde_json::Value>>,
}

/// A cheap-to-clone handle on shared fake state.
#[derive(Debug, Clone, Default)]
pub struct FakeHelm {
    state: Arc<Mutex<State>>,
}

impl FakeHelm {
    pub fn new() -> Self {
        Self::default()
    }

    /// A release that exists before the operator starts (e.g. of a module that was removed).
    pub fn with_release(self, release: &str) -> Self {
        self.lock()
            .releases
            .insert(release.to_string(), String::new());
        self
    }

    /// A release someone else installs while the operator runs.
    pub fn add_release(&self, release: &str) {
        self.lock()
            .releases
            .insert(release.to_string(), String::new());
    }

    /// Makes the next upgrade of `release` fail.
    pub fn fail_next_upgrade(&self, release: &str) {
        self.lock().failures.push_back(release.to_string());
    }

    /// Makes `release` drift from what was installed (as if objects were deleted): the next
    /// `should_upgrade` says yes.
    pub fn drift(&self, release: &str) {
        if let Some(checksum) = self.lock().releases.get_mut(release) {
            checksum.clear();
        }
    }

    /// Like [`Self::drift`], and the next resource monitor check reports `why`.
    pub fn drift_because(&self, release: &str, why: Drift) {
        self.drift(release);
        self.lock().drifts.insert(release.to_string(), why);
    }

    /// The objects `release_objects` gives for `release` (the manifest of its latest revision).
    pub fn set_manifest(&self, release: &str, objects: Vec<serde_json::Value>) {
        self.lock().manifests.insert(release.to_string(), objects);
    }

    pub fn calls(&self) -> Vec<HelmCall> {
        self.lock().calls.clone()
    }

    /// [`UpgradeRequest::maintenance`] of every upgrade so far, in order.
    pub fn maintenance_of_upgrades(&self) -> Vec<bool> {
        self.lock().maintenance.clone()
    }

    pub fn release_names(&self) -> Vec<String> {
        self.lock().releases.keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Helm for FakeHelm {
    fn releases(&self) -> BoxFuture<'_, Result<Vec<String>, HelmError>> {
        let names = self.release_names();
        Box::pin(async move { Ok(names) })
    }

    fn should_upgrade<'a>(
        &'a self,
        req: &'a UpgradeRequest,
    ) -> BoxFuture<'a, Result<bool, HelmError>> {
        let changed = self.lock().releases.get(&req.release) != Some(&req.checksum);
        Box::pin(async move { Ok(changed) })
    }

    fn drift<'a>(
        &'a self,
        req: &'a UpgradeRequest,
    ) -> BoxFuture<'a, Result<Option<Drift>, HelmError>> {
        let mut state = self.lock();
        let scripted = state.drifts.remove(&req.release);
        let changed = state.releases.get(&req.release) != Some(&req.checksum);
        let drift = scripted.or(changed.then_some(Drift::Other));
        Box::pin(async move { Ok(drift) })
    }

    fn release_objects<'a>(
        &'a self,
        release: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<serde_json::Value>>, HelmError>> {
        let objects = self.lock().manifests.get(release).cloned();
        Box::pin(async move { Ok(objects) })
    }

    fn upgrade<'a>(&'a self, req: &'a UpgradeRequest) -> BoxFuture<'a, Result<(), HelmError>> {
        let mut state = self.lock();
        state.calls.push(HelmCall::Upgrade {
            release: req.release.clone(),
            values_yaml: req.values_yaml.clone(),
        });
        state.maintenance.push(req.maintenance);
        let fail = state.failures.front() == Some(&req.release);
        let result = if fail {
            state.failures.pop_front();
            Err(HelmError::Command {
                operation: "upgrade",
                release: req.release.clone(),
                message: "scripted failure".into(),
            })
        } else {
            state
                .releases
                .insert(req.release.clone(), req.checksum.clone());
            Ok(())
        };
        Box::pin(async move { result })
    }

    fn uninstall<'a>(&'a self, release: &'a str) -> BoxFuture<'a, Result<(), HelmError>> {
        let mut state = self.lock();
        state.calls.push(HelmCall::Uninstall {
            release: release.to_string(),
        });
        state.releases.remove(release);
        Box::pin(async move { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn req(checksum: &str) -> UpgradeRequest {
        UpgradeRequest {
            release: "web".into(),
            chart_dir: PathBuf::from("/m/web"),
            values_yaml: "web: {}\n".into(),
            checksum: checksum.into(),
            maintenance: false,
        }
    }

    #[tokio::test]
    async fn upgrade_is_needed_only_when_the_checksum_changes() {
        let helm = FakeHelm::new();
        assert!(helm.should_upgrade(&req("a")).await.unwrap());
        helm.upgrade(&req("a")).await.unwrap();
        assert!(!helm.should_upgrade(&req("a")).await.unwrap());
        assert!(helm.should_upgrade(&req("b")).await.unwrap());
        assert_eq!(helm.releases().await.unwrap(), ["web"]);
    }

    #[tokio::test]
    async fn scripted_failure_fails_once_and_records_the_call() {
        let helm = FakeHelm::new();
        helm.fail_next_upgrade("web");
        assert!(helm.upgrade(&req("a")).await.is_err());
        assert!(helm.upgrade(&req("a")).await.is_ok());
        helm.uninstall("web").await.unwrap();
        assert_eq!(helm.calls().len(), 3);
        assert!(helm.releases().await.unwrap().is_empty());
    }
}
