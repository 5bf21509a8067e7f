//! The admission and conversion webhook servers (HTTPS, shell-operator's flags and defaults) that hand reviews to hooks.

pub mod accept;
pub mod generated;
pub mod server;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;

use addon_core::hook_config::FailurePolicy;
use base64::Engine as _;

pub use accept::Limits;
pub use server::{Answerer, MAX_BODY_BYTES, Reply, ServerError, WebhookServer};
pub use tls::{TlsError, TlsFiles};

/// shell-operator's default port of the validating (admission) webhook server.
pub const DEFAULT_ADMISSION_PORT: u16 = 9680;
/// shell-operator's default port of the conversion webhook server.
pub const DEFAULT_CONVERSION_PORT: u16 = 9681;

/// One server's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    pub listen: SocketAddr,
    pub tls: TlsFiles,
    /// The CA that signed the serving certificate: its PEM goes, base64, into `caBundle`.
    pub ca: PathBuf,
    /// The Service the API server calls.
    pub service_name: String,
}

/// Both servers' settings, from the `--validating-webhook-*` and `--conversion-webhook-*` flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    pub admission: ServerSettings,
    /// The Validating/MutatingWebhookConfiguration name.
    pub configuration_name: String,
    /// For admission bindings without `failurePolicy`.
    pub failure_policy: FailurePolicy,
    pub conversion: ServerSettings,
    /// Each server's bounds on connections and TLS handshakes.
    pub limits: Limits,
}

/// The `caBundle` of a CA file: its bytes in base64.
pub fn ca_bundle(ca: &std::path::Path) -> std::io::Result<String> {
    std::fs::read(ca).map(|pem| base64::engine::general_purpose::STANDARD.encode(pem))
}
