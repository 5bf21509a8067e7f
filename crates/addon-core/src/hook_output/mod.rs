//! What hooks write after a run besides values patches: Kubernetes object operations (`$KUBERNETES_PATCH_PATH`) and metric operations (`$METRICS_PATH`), parsed into data.

pub mod kube_patch;
pub mod metrics;
