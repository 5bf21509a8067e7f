//! Starting, stopping and restarting the emulator, and the handle tests and embedders hold.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api;
use crate::app::App;
use crate::faults::Faults;
use crate::kubeconfig;
use crate::persist::PersistError;
use crate::resources::ResKey;
use crate::store::{Store, StoreConfig};

/// Largest accepted request body (the real API server allows 3 MiB; helm releases can be big).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// How to run an emulator.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Directory for crash-safe persistence; `None` keeps state in memory only.
    pub data_dir: Option<PathBuf>,
    /// How many events a watch can resume from before getting `410 Gone`.
    pub history_limit: usize,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// Whether every write is fsync'ed before it is acknowledged (with `data_dir`).
    pub fsync: bool,
    /// Whether new or changed specs get the status a healthy controller would report (workloads
    /// ready, jobs complete, claims bound, pods running); off, status is only what clients write.
    pub simulate_status: bool,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        Self {
            port: 0,
            data_dir: None,
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(5),
            fsync: true,
            simulate_status: true,
        }
    }
}

/// Failures starting or restarting the emulator.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The data directory could not be loaded.
    #[error("cannot open the data directory")]
    Open(#[from] PersistError),
    /// The kubeconfig could not be written.
    #[error("cannot write kubeconfig {path}")]
    WriteKubeconfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl EmulatorError {
    /// Static label for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Bind { .. } => "bind",
            Self::Open(e) => e.category(),
            Self::WriteKubeconfig { .. } => "io",
        }
    }
}

/// Entry point: `Emulator::start(config)`.
pub struct Emulator;

impl Emulator {
    /// Opens the store and starts serving on 127.0.0.1.
    pub async fn start(config: EmulatorConfig) -> Result<EmulatorHandle, EmulatorError> {
        let store = Arc::new(open_store(&config)?);
        let faults = Arc::new(Faults::default());
        let running = serve(&config, config.port, store.clone(), faults.clone()).await?;
        Ok(EmulatorHandle {
            config,
            addr: running.addr,
            store,
            faults,
            running: Some(running),
        })
    }
}

fn open_store(config: &EmulatorConfig) -> Result<Store, PersistError> {
    Store::open(&StoreConfig {
        data_dir: config.data_dir.clone(),
        history_limit: config.history_limit,
        fsync: config.fsync,
        simulate_status: config.simulate_status,
    })
}

struct Running {
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

async fn serve(
    config: &EmulatorConfig,
    port: u16,
    store: Arc<Store>,
    faults: Arc<Faults>,
) -> Result<Running, EmulatorError> {
    let wanted = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = TcpListener::bind(wanted)
        .await
        .map_err(|source| EmulatorError::Bind {
            addr: wanted,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| EmulatorError::Bind {
            addr: wanted,
            source,
        })?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let app = Arc::new(App {
        store,
        faults,
        shutdown: shutdown_rx.clone(),
        bookmark_interval: config.bookmark_interval,
        server_address: addr.to_string(),
    });
    let router = Router::new()
        .fallback(api::handle)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(app);
    let mut stop = shutdown_rx;
    let task = tokio::spawn(async move {
        let graceful = async move {
            // An error means the sender is gone: stop as well.
            let _ = stop.wait_for(|s| *s).await;
        };
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(graceful)
            .await
        {
            tracing::error!(error = %e, "the emulator's server failed");
        }
    });
    tracing::info!(%addr, "kube-emulator listening");
    Ok(Running {
        addr,
        shutdown,
        task,
    })
}

/// A running (or stopped) emulator.
pub struct EmulatorHandle {
    config: EmulatorConfig,
    addr: SocketAddr,
    store: Arc<Store>,
    faults: Arc<Faults>,
    running: Option<Running>,
}

impl EmulatorHandle {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A kubeconfig pointing at this emulator.
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig::kubeconfig_yaml(&self.url())
    }

    /// Writes [`Self::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), EmulatorError> {
        kubeconfig::write(path, &self.url()).map_err(|source| EmulatorError::WriteKubeconfig {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Stops serving: open watches end, the port is released. Idempotent.
    pub async fn stop(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        // The server task may already be gone; nothing to tell then.
        let _ = running.shutdown.send(true);
        let mut task = running.task;
        if tokio::time::timeout(Duration::from_secs(3), &mut task)
            .await
            .is_err()
        {
            task.abort();
            // Aborted on purpose; the join error says only that.
            let _ = task.await;
        }
    }

    /// Stops and starts again on the same port; with a data directory the state is re-read
    /// from disk (as after a crash), otherwise the in-memory state is kept.
    pub async fn restart(&mut self) -> Result<(), EmulatorError> {
        self.stop().await;
        if self.config.data_dir.is_some() {
            self.store.close();
            self.store = Arc::new(open_store(&self.config)?);
        }
        let running = serve(
            &self.config,
            self.addr.port(),
            self.store.clone(),
            self.faults.clone(),
        )
        .await?;
        self.addr = running.addr;
        self.running = Some(running);
        Ok(())
    }

    /// Whether the server is up.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Ends every open watch now.
    pub fn drop_watches(&self) {
        self.faults.drop_watches();
    }

    /// Makes the next `count` API requests fail with `code` (500, 503, 429, ...).
    pub fn fail_next_requests(&self, count: u32, code: u16) {
        self.faults.fail_next(count, code);
    }

    /// Streaming lists (watches with `sendInitialEvents`) asked for so far.
    pub fn streaming_lists(&self) -> u64 {
        self.faults.streaming_lists()
    }

    /// Refuses streaming lists (`422`, as a server before Kubernetes 1.27 or with the
    /// `WatchList` feature off does), or serves them again.
    pub fn refuse_streaming_lists(&self, refuse: bool) {
        self.faults.refuse_streaming_lists(refuse);
    }

    /// Ignores `sendInitialEvents` (the objects are sent, never the bookmark that ends them, as
    /// a server that does not know the parameter would), or serves streaming lists again.
    pub fn ignore_streaming_lists(&self, ignore: bool) {
        self.faults.ignore_streaming_lists(ignore);
    }

    /// List requests so far: (lists started, of which paged with `limit`); later pages of a
    /// list are not counted.
    pub fn list_starts(&self) -> (u64, u64) {
        self.faults.lists()
    }

    /// Objects list requests have looked at so far, matching or not: a test's measure of what
    /// lists cost (a paged list of N objects looks at about N).
    pub fn objects_examined_by_lists(&self) -> u64 {
        self.store.objects_examined()
    }

    /// Watch streams of a resource being served now (`group` is `""` for core): a test's signal
    /// that a client's watch started (or, when it falls, stopped).
    pub fn open_watches(&self, group: &str, resource: &str) -> usize {
        self.faults.open_watches(&ResKey::new(group, resource))
    }

    /// Forgets the watch history: resuming from any version seen so far gets `410 Gone`.
    pub fn expire_history(&self) {
        self.store.compact_history();
    }

    /// One stored object (`namespace` is `""` for cluster-scoped resources).
    pub fn object(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        self.store
            .get(&ResKey::new(group, resource), namespace, name)
    }

    /// All stored objects of a resource, in every namespace.
    pub fn objects(&self, group: &str, resource: &str) -> Vec<Value> {
        self.store.list(&ResKey::new(group, resource), None).0
    }

    /// The last resourceVersion handed out.
    pub fn resource_version(&self) -> u64 {
        self.store.current_rv()
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            // Best effort on drop: the task ends when it sees the flag.
            let _ = running.shutdown.send(true);
        }
    }
}
