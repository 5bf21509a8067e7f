//! Building a `kube::Client` for the cluster upstream's `--kube-config`, `--kube-context` and `--kube-server` name (or the environment: in-cluster, `$KUBECONFIG`, `~/.kube/config`), with the API limits and an optional request rate limit.

use std::path::{Path, PathBuf};

use kube::Client;
use kube::client::ClientBuilder;
use tower::buffer::BufferLayer;
use tower::layer::layer_fn;
use tower::retry::RetryLayer;

use super::api_guard::{ApiSettings, RequestTimeout, TransientRetry};
use super::rate_limit::{RateLimit, RateLimited, TokenBucket};

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
    #[error("use the context {context} of $KUBECONFIG or ~/.kube/config")]
    UseContext {
        context: String,
        #[source]
        source: KubeconfigError,
    },
    #[error("use --kube-server {server}: not a URL")]
    Server {
        server: String,
        #[source]
        source: axum::http::uri::InvalidUri,
    },
    #[error("infer the Kubernetes config (in-cluster or $KUBECONFIG)")]
    Infer(#[source] kube::config::InferConfigError),
    #[error("build the Kubernetes client")]
    Build(#[source] kube::Error),
}

impl ClientError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadKubeconfig { .. } | Self::UseKubeconfig { .. } | Self::UseContext { .. } => {
                "kubeconfig"
            }
            Self::Server { .. } => "kube_server",
            Self::Infer(_) => "kube_config_infer",
            Self::Build(_) => "kube_client",
        }
    }
}

/// Which cluster a client talks to: upstream's `--kube-server` (a URL, without credentials;
/// the kubeconfig is then not read), else `--kube-config` with `--kube-context` (the file's
/// current context without it), else `$KUBECONFIG` / `~/.kube/config` (with the context when
/// given) or the in-cluster service account.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterTarget {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub server: Option<String>,
}

impl ClusterTarget {
    /// The cluster of the kubeconfig file `path` (its current context).
    pub fn kubeconfig(path: Option<&Path>) -> Self {
        Self {
            kubeconfig: path.map(Path::to_path_buf),
            ..Self::default()
        }
    }
}

/// The client config of `target`.
pub async fn load_config(target: &ClusterTarget) -> Result<kube::Config, ClientError> {
    if let Some(server) = &target.server {
        let url = server.parse().map_err(|source| ClientError::Server {
            server: server.clone(),
            source,
        })?;
        return Ok(kube::Config::new(url));
    }
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..KubeConfigOptions::default()
    };
    match (&target.kubeconfig, &target.context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
                path: path.clone(),
                source,
            })?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|source| ClientError::UseKubeconfig {
                    path: path.clone(),
                    source,
                })
        }
        (None, Some(context)) => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|source| ClientError::UseContext {
                context: context.clone(),
                source,
            }),
        (None, None) => kube::Config::infer().await.map_err(ClientError::Infer),
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
    let config = load_config(&ClusterTarget::kubeconfig(kubeconfig)).await?;
    build(config, api, None).map_err(ClientError::Build)
}

/// A client for `config` whose calls have the timeouts and retries of `api` (instead of
/// kube-rs's default retries, which may wait up to 1000 s for one request), each attempt
/// waiting for a token of `rate` first when given.
pub fn build(
    mut config: kube::Config,
    api: &ApiSettings,
    rate: Option<RateLimit>,
) -> Result<Client, kube::Error> {
    config.connect_timeout = Some(api.connect_timeout);
    config.read_timeout = Some(api.read_timeout);
    config.default_retry = false;
    let limit = api.request_timeout;
    let bucket = rate.map(TokenBucket::new);
    let client = ClientBuilder::try_from(config)?
        // the boxed stack is not `Clone`; a buffer in front of it is, as retries need
        .with_layer(&BufferLayer::new(1024))
        .with_layer(&layer_fn(move |inner| {
            RateLimited::new(inner, bucket.clone())
        }))
        .with_layer(&layer_fn(move |inner| RequestTimeout::new(inner, limit)))
        .with_layer(&RetryLayer::new(TransientRetry::new(*api)))
        .build();
    Ok(client)
}
