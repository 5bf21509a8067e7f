//! [`App`]: what every request handler shares (the store, injected faults, shutdown).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::faults::Faults;
use crate::store::Store;

/// Shared state of the request handlers.
pub struct App {
    /// The objects.
    pub store: Arc<Store>,
    /// Injected faults.
    pub faults: Arc<Faults>,
    /// Flips to `true` when the server stops (ends watches).
    pub shutdown: watch::Receiver<bool>,
    /// Period of watch bookmarks.
    pub bookmark_interval: Duration,
    /// `host:port` reported in discovery.
    pub server_address: String,
}
