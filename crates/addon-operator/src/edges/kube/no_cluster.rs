//! No cluster (local mode, `module render`): watches list nothing and object operations are
//! refused, behind the runtime's `KubeEvents` and `ObjectPatches` ports.

use addon_core::hook_config::KubernetesBinding;
use addon_core::hook_output::kube_patch::KubeOperation;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::runtime::edges::{KubeError, KubeEvents, MonitorKey, ObjectPatches, ObjectsError};

/// No cluster: kubernetes bindings see no objects and no events.
pub struct NoCluster;

impl KubeEvents for NoCluster {
    fn start<'a>(
        &'a self,
        key: &'a MonitorKey,
        binding: &'a KubernetesBinding,
    ) -> BoxFuture<'a, Result<Vec<Value>, KubeError>> {
        tracing::info!(
            hook = %key.hook,
            binding = %binding.name,
            kind = %binding.kind,
            "local mode: the binding sees no objects (use --embedded-cluster or --kube-config)"
        );
        Box::pin(async { Ok(Vec::new()) })
    }

    fn stop(&self, _key: &MonitorKey) {}
}

impl ObjectPatches for NoCluster {
    fn apply<'a>(&'a self, ops: &'a [KubeOperation]) -> BoxFuture<'a, Result<(), ObjectsError>> {
        tracing::debug!(
            operations = ops.len(),
            "local mode: the hook's Kubernetes operations are validated, not applied"
        );
        Box::pin(async { Ok(()) })
    }
}
