//! Building a `kube::Client` from a kubeconfig file or from the environment (in-cluster, `$KUBECONFIG`, `~/.kube/config`).

use std::path::{Path, PathBuf};

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

/// A client that could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("read the kubeconfig {path}")]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: KubeconfigError,
    },
    #[error("use the kubeconfig {path}")]
    UseKubeconfig {
        path: PathBuf,
        #[source]
        source: KubeconfigError,
    },
    #[error("infer the Kubernetes config (in-cluster or $KUBECONFIG)")]
    Infer(#[source] kube::config::InferConfigError),
    #[error("build the Kubernetes client")]
    Build(#[source] kube::Error),
}

impl ClientError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadKubeconfig { .. } | Self::UseKubeconfig { .. } => "kubeconfig",
            Self::Infer(_) => "kube_config_infer",
            Self::Build(_) => "kube_client",
        }
    }
}

/// A client for the cluster of `kubeconfig` (its current context), or, without a path, the
/// config kube-rs infers (`$KUBECONFIG`, `~/.kube/config`, then the in-cluster service account).
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, ClientError> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
                path: path.to_path_buf(),
                source,
            })?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|source| ClientError::UseKubeconfig {
                    path: path.to_path_buf(),
                    source,
                })?
        }
        None => kube::Config::infer().await.map_err(ClientError::Infer)?,
    };
    Client::try_from(config).map_err(ClientError::Build)
}
