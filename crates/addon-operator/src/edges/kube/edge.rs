//! [`KubeEdge`]: one client and one discovery cache shared by the watches, the ConfigMap store and the object patcher.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::api_guard::ApiSettings;
use super::client::{ClientError, connect, connect_with};
use super::configmap::ConfigMapStore;
use super::discovery::KindResolver;
use super::events::KubeWatches;
use super::patcher::{ObjectPatcher, PatcherSettings};
use crate::runtime::edges::KubeEvent;

/// The Kubernetes side of the operator, built once at start.
#[derive(Clone)]
pub struct KubeEdge {
    pub client: kube::Client,
    pub resolver: Arc<KindResolver>,
}

impl KubeEdge {
    /// Connects with `kubeconfig` (or the inferred config when `None`); no request is made yet.
    pub async fn connect(kubeconfig: Option<&Path>) -> Result<Self, ClientError> {
        Ok(Self::new(connect(kubeconfig).await?))
    }

    /// [`Self::connect`] with the API call timeouts and retries of `api`.
    pub async fn connect_with(
        kubeconfig: Option<&Path>,
        api: &ApiSettings,
    ) -> Result<Self, ClientError> {
        Ok(Self::new(connect_with(kubeconfig, api).await?))
    }

    pub fn new(client: kube::Client) -> Self {
        let resolver = Arc::new(KindResolver::new(client.clone()));
        Self { client, resolver }
    }

    /// The `KubeEvents` edge; `events` is the sender of the runtime's kube event channel.
    pub fn watches(&self, events: mpsc::Sender<KubeEvent>) -> KubeWatches {
        KubeWatches::new(self.resolver.clone(), events)
    }

    /// The `ConfigBackend` edge on ConfigMap `name` in `namespace`.
    pub fn config_store(&self, namespace: &str, name: &str) -> ConfigMapStore {
        ConfigMapStore::new(self.client.clone(), namespace, name)
    }

    /// The executor of `$KUBERNETES_PATCH_PATH` operations.
    pub fn patcher(&self, settings: PatcherSettings) -> ObjectPatcher {
        ObjectPatcher::with_settings(self.resolver.clone(), settings)
    }
}
