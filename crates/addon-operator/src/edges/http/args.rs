//! Flags of the HTTP server and the debug API, for `start` to flatten into its arguments.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use crate::env::shell_operator_default;

/// Upstream's debug socket path.
pub const DEFAULT_DEBUG_SOCKET: &str = "/var/run/addon-operator/debug.socket";

/// Listen address, metric prefix and debug API locations (upstream names and defaults).
#[derive(Debug, Clone, clap::Args)]
pub struct HttpArgs {
    /// Address of the HTTP server (metrics, health, readiness)
    /// [fallback env: SHELL_OPERATOR_LISTEN_ADDRESS]
    #[arg(long, env = "ADDON_OPERATOR_LISTEN_ADDRESS",
          default_value = shell_operator_default("SHELL_OPERATOR_LISTEN_ADDRESS", "0.0.0.0"))]
    pub prometheus_listen_address: IpAddr,
    /// Port of the HTTP server [fallback env: SHELL_OPERATOR_LISTEN_PORT]
    #[arg(long, env = "ADDON_OPERATOR_LISTEN_PORT",
          default_value = shell_operator_default("SHELL_OPERATOR_LISTEN_PORT", "9650"))]
    pub prometheus_listen_port: u16,
    /// Prefix of the operator's metric names (not of metrics written by hooks)
    /// [fallback env: SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX]
    #[arg(
        long,
        env = "ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX",
        default_value = shell_operator_default("SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX", crate::runtime::metrics::DEFAULT_PREFIX)
    )]
    pub prometheus_metrics_prefix: String,
    /// Unix socket of the debug API
    #[arg(long, env = "DEBUG_UNIX_SOCKET", default_value = DEFAULT_DEBUG_SOCKET)]
    pub debug_unix_socket: PathBuf,
    /// Also serve the debug API over TCP on this address (e.g. 127.0.0.1:9652); off when empty
    #[arg(long, env = "DEBUG_HTTP_SERVER_ADDR")]
    pub debug_http_addr: Option<SocketAddr>,
}

impl HttpArgs {
    /// Where the main HTTP server listens.
    pub fn listen_addr(&self) -> SocketAddr {
        SocketAddr::new(self.prometheus_listen_address, self.prometheus_listen_port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        http: HttpArgs,
    }

    #[test]
    fn defaults_are_upstreams() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["addon-operator"]).unwrap();
        assert_eq!(cli.http.listen_addr(), "0.0.0.0:9650".parse().unwrap());
        assert_eq!(cli.http.prometheus_metrics_prefix, "addon_operator_");
        assert_eq!(
            cli.http.debug_unix_socket,
            PathBuf::from(DEFAULT_DEBUG_SOCKET)
        );
        assert_eq!(cli.http.debug_http_addr, None);
    }

    #[test]
    fn flags_override_the_defaults() {
        let cli = Cli::try_parse_from([
            "addon-operator",
            "--prometheus-listen-address",
            "127.0.0.1",
            "--prometheus-listen-port",
            "9999",
            "--debug-http-addr",
            "127.0.0.1:9652",
        ])
        .unwrap();
        assert_eq!(cli.http.listen_addr(), "127.0.0.1:9999".parse().unwrap());
        assert_eq!(
            cli.http.debug_http_addr,
            Some("127.0.0.1:9652".parse().unwrap())
        );
    }
}
