//! HTTP: the main server (`/metrics`, `/metrics/hooks`, `/healthz`, `/readyz`, `/status/converge`)
//! and the debug API on a unix socket (and optionally TCP), both stopped by a cancellation token.

mod args;
pub mod debug;
mod format;
mod graph;
mod reply;
mod server;
mod snapshots;
mod startup;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;

use crate::runtime::metrics::Metrics;

pub use crate::runtime::edges::status::{
    BindingItems, ConvergeStatus, StartupConverge, StatusSource,
};
pub use args::{DEFAULT_DEBUG_SOCKET, HttpArgs};
pub use format::Format;
pub use startup::StartupStatus;

/// A server that could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("listen on {addr}")]
    BindTcp {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("prepare debug socket {path}")]
    PrepareSocket {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("listen on debug socket {path}")]
    BindSocket {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("serve {what}")]
    Serve {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl HttpError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::BindTcp { .. } => "http_bind",
            Self::PrepareSocket { .. } | Self::BindSocket { .. } => "debug_socket",
            Self::Serve { .. } => "http_serve",
        }
    }
}

/// Binds the main server's address (fails fast when the port is taken).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, HttpError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::BindTcp { addr, source })
}

/// Binds `addr` and serves the main routes until `shutdown`.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    status: Arc<dyn StatusSource>,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let listener = bind(addr).await?;
    serve_listener(listener, metrics, status, shutdown).await
}

/// Serves the main routes on an already bound listener until `shutdown`.
pub async fn serve_listener(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    status: Arc<dyn StatusSource>,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let what = listener
        .local_addr()
        .map_or_else(|_| "HTTP".to_string(), |a| format!("HTTP on {a}"));
    tracing::info!(%what, "HTTP server listening");
    axum::serve(listener, server::router(metrics, status))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(|source| HttpError::Serve { what, source })
}

/// Creates the socket's directory (mode 0700), removes a stale socket file and binds the socket.
pub fn bind_debug_socket(path: &Path) -> Result<UnixListener, HttpError> {
    prepare_socket_path(path).map_err(|source| HttpError::PrepareSocket {
        path: path.to_path_buf(),
        source,
    })?;
    UnixListener::bind(path).map_err(|source| HttpError::BindSocket {
        path: path.to_path_buf(),
        source,
    })
}

fn prepare_socket_path(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = parent.filter(|d| !d.exists()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Binds the debug socket at `path` and serves the debug API until `shutdown`, then removes the file.
pub async fn serve_debug_socket(
    path: &Path,
    status: Arc<dyn StatusSource>,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let listener = bind_debug_socket(path)?;
    serve_debug_listener(listener, path, status, shutdown).await
}

/// Serves the debug API on a bound socket until `shutdown`, then removes the socket file at `path`.
pub async fn serve_debug_listener(
    listener: UnixListener,
    path: &Path,
    status: Arc<dyn StatusSource>,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    tracing::info!(socket = %path.display(), "debug API listening");
    let result = axum::serve(listener, debug::router(status))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(|source| HttpError::Serve {
            what: format!("debug API on {}", path.display()),
            source,
        });
    let _ = std::fs::remove_file(path);
    result
}

/// Serves the debug API over TCP (`--debug-http-addr`) until `shutdown`.
pub async fn serve_debug_tcp(
    listener: TcpListener,
    status: Arc<dyn StatusSource>,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let what = listener
        .local_addr()
        .map_or_else(|_| "debug API".to_string(), |a| format!("debug API on {a}"));
    tracing::info!(%what, "debug API listening");
    axum::serve(listener, debug::router(status))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(|source| HttpError::Serve { what, source })
}
