//! Building a `kube::Client` from a kubeconfig file or from the environment (in-cluster, `$KUBECONFIG`, `~/.kube/config`).

use std::path::{Path, PathBuf};

use kube::Client;
use kube::client::ClientBuilder;
use tower::buffer::BufferLayer;
use tower::layer::layer_fn;
use tower::retry::RetryLayer;

use super::api_guard::{ApiSettings, RequestTimeout, TransientRetry};
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
/// config kube-rs infers (`$KUBECONFIG`, `~/.kube/config`, then the in-cluster service account),
/// with the default [`ApiSettings`].
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, ClientError> {
    connect_with(kubeconfig, &ApiSettings::default()).await
}

/// [`connect`] with the timeouts and retries of `api`.
pub async fn connect_with(
    kubeconfig: Option<&Path>,
    api: &ApiSettings,
) -> Result<Client, ClientError> {
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
    build(config, api).map_err(ClientError::Build)
}

/// A client for `config` whose calls have the timeouts and retries of `api` (instead of
/// kube-rs's default retries, which may wait up to 1000 s for one request).
pub fn build(mut config: kube::Config, api: &ApiSettings) -> Result<Client, kube::Error> {
    config.connect_timeout = Some(api.connect_timeout);
    config.read_timeout = Some(api.read_timeout);
    config.default_retry = false;
    let limit = api.request_timeout;
    let client = ClientBuilder::try_from(config)?
        // the boxed stack is not `Clone`; a buffer in front of it is, as retries need
        .with_layer(&BufferLayer::new(1024))
        .with_layer(&layer_fn(move |inner| RequestTimeout::new(inner, limit)))
        .with_layer(&RetryLayer::new(TransientRetry::new(*api)))
        .build();
    Ok(client)
}
