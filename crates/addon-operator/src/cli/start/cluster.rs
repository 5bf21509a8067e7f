//! Which cluster `start` manages (none, the embedded emulator, or one named by `--kube-config`,
//! `--kube-context`, `--kube-server` or the pod's service account) and the operator's clients of it.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kube_emulator::{Emulator, EmulatorConfig, EmulatorHandle};

use super::{StartArgs, api_settings};
use crate::edges::kube::{ApiSettings, ClientError, ClusterTarget};

/// Which cluster the operator manages.
pub(super) enum Cluster {
    /// None: charts are rendered, kubernetes bindings see nothing.
    None,
    /// The in-process emulator; held (and stopped on drop) for the operator's lifetime.
    Embedded {
        _emulator: Box<EmulatorHandle>,
        kubeconfig: PathBuf,
    },
    /// A real cluster through a kubeconfig (`None`: in-cluster service account).
    External(Option<PathBuf>),
}

impl Cluster {
    pub(super) fn kubeconfig(&self) -> Option<&Path> {
        match self {
            Cluster::Embedded { kubeconfig, .. } | Cluster::External(Some(kubeconfig)) => {
                Some(kubeconfig)
            }
            _ => None,
        }
    }
}

pub(super) async fn choose_cluster(args: &StartArgs) -> anyhow::Result<Cluster> {
    if args.embedded_cluster {
        let config = EmulatorConfig {
            port: args.embedded_cluster_port,
            data_dir: args.embedded_cluster_data_dir.clone(),
            ..EmulatorConfig::default()
        };
        let handle = Emulator::start(config)
            .await
            .context("start the embedded cluster")?;
        let kubeconfig = args.tmp_dir.join("embedded-cluster.kubeconfig");
        handle
            .write_kubeconfig(&kubeconfig)
            .context("write the embedded cluster's kubeconfig")?;
        tracing::info!(
            url = %handle.url(),
            kubeconfig = %kubeconfig.display(),
            "embedded cluster started; use: kubectl --kubeconfig {}",
            kubeconfig.display()
        );
        return Ok(Cluster::Embedded {
            _emulator: Box::new(handle),
            kubeconfig,
        });
    }
    let (context, server) = (&args.upstream.kube_context, &args.upstream.kube_server);
    let named = args.kube_config.is_some() || context.is_some() || server.is_some();
    if named || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        return Ok(Cluster::External(args.kube_config.clone()));
    }
    Ok(Cluster::None)
}

/// The cluster the clients talk to: the embedded one's kubeconfig, or `--kube-config`,
/// `--kube-context` and `--kube-server`.
pub(super) fn cluster_target(args: &StartArgs, cluster: &Cluster) -> ClusterTarget {
    match cluster {
        Cluster::Embedded { kubeconfig, .. } => ClusterTarget::kubeconfig(Some(kubeconfig)),
        _ => ClusterTarget {
            kubeconfig: args.kube_config.clone(),
            context: args.upstream.kube_context.clone(),
            server: args.upstream.kube_server.clone(),
        },
    }
}

/// The operator's clients of one cluster, each with its own request rate limit as upstream's:
/// the main one (watches, ConfigMap, discovery) and the object patcher's; and the leader lease's,
/// without a limit, so that a backlog of throttled requests never delays a renewal past the
/// lease's deadline.
pub(super) struct KubeClients {
    pub(super) main: kube::Client,
    pub(super) patcher: kube::Client,
    pub(super) lease: kube::Client,
}

impl KubeClients {
    pub(super) async fn connect(
        args: &StartArgs,
        target: &ClusterTarget,
    ) -> Result<Self, ClientError> {
        let config = crate::edges::kube::client::load_config(target).await?;
        let api = api_settings(args);
        let patcher_api = ApiSettings {
            request_timeout: args.upstream.object_patcher_kube_client_timeout,
            ..api
        };
        let build = |api: &ApiSettings, rate| {
            crate::edges::kube::client::build(config.clone(), api, rate).map_err(ClientError::Build)
        };
        Ok(Self {
            main: build(&api, args.upstream.kube_rate())?,
            patcher: build(&patcher_api, args.upstream.object_patcher_rate())?,
            lease: build(&api, None)?,
        })
    }
}
