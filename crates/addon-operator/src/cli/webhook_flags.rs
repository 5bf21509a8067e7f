//! shell-operator's `--validating-webhook-*` and `--conversion-webhook-*` flags (same names, environment variables and defaults) with the servers' connection bounds, the certificates resolved (given, default, or throwaway in local and embedded mode), and starting the webhook servers the tree's hooks need.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use addon_core::hook_config::FailurePolicy;
use tokio_util::sync::CancellationToken;

use addon_core::webhook::ServiceRef;

use crate::edges::webhook::generated::{self, GenerateError};
use crate::edges::webhook::{Limits, ServerSettings, TlsFiles, WebhookServer, WebhookSettings};
use crate::runtime::RuntimeHandle;
use crate::runtime::webhook_objects::CaBundle;
use crate::runtime::webhook_objects::WebhookObjects;

fn parse_failure_policy(text: &str) -> Result<FailurePolicy, String> {
    FailurePolicy::parse(text).ok_or_else(|| format!("'{text}' is not Fail or Ignore"))
}

/// The webhook servers' flags.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookArgs {
    /// A name of a ValidatingWebhookConfiguration (and MutatingWebhookConfiguration) resource
    #[arg(
        long,
        env = "VALIDATING_WEBHOOK_CONFIGURATION_NAME",
        default_value = "shell-operator-hooks"
    )]
    pub validating_webhook_configuration_name: String,
    /// A name of a service used in ValidatingWebhookConfiguration
    #[arg(
        long,
        env = "VALIDATING_WEBHOOK_SERVICE_NAME",
        default_value = "shell-operator-validating-svc"
    )]
    pub validating_webhook_service_name: String,
    /// A path to a server certificate for service used in ValidatingWebhookConfiguration
    /// [default: /validating-certs/tls.crt; without it and that file, in local mode and with
    /// --embedded-cluster, a throwaway CA and certificate are made in <tmp-dir>/webhook-certs]
    #[arg(long, env = "VALIDATING_WEBHOOK_SERVER_CERT", value_name = "FILE")]
    pub validating_webhook_server_cert: Option<PathBuf>,
    /// A path to a server private key for service used in ValidatingWebhookConfiguration
    /// [default: /validating-certs/tls.key]
    #[arg(long, env = "VALIDATING_WEBHOOK_SERVER_KEY", value_name = "FILE")]
    pub validating_webhook_server_key: Option<PathBuf>,
    /// A path to a ca certificate for ValidatingWebhookConfiguration [default:
    /// /validating-certs/ca.crt]
    #[arg(long, env = "VALIDATING_WEBHOOK_CA", value_name = "FILE")]
    pub validating_webhook_ca: Option<PathBuf>,
    /// A path to a client CA certificate for ValidatingWebhookConfiguration (can be set multiple
    /// times)
    #[arg(long, env = "VALIDATING_WEBHOOK_CLIENT_CA", value_delimiter = ',')]
    pub validating_webhook_client_ca: Vec<PathBuf>,
    /// Default failure policy for ValidatingWebhookConfiguration (Fail or Ignore)
    #[arg(long, env = "VALIDATING_WEBHOOK_FAILURE_POLICY", default_value = "Fail",
          value_parser = parse_failure_policy)]
    pub validating_webhook_failure_policy: FailurePolicy,
    /// Port for the validating webhook HTTPS server
    #[arg(
        long,
        env = "VALIDATING_WEBHOOK_LISTEN_PORT",
        default_value_t = crate::edges::webhook::DEFAULT_ADMISSION_PORT
    )]
    pub validating_webhook_listen_port: u16,
    /// Address for the validating webhook HTTPS server
    #[arg(
        long,
        env = "VALIDATING_WEBHOOK_LISTEN_ADDRESS",
        default_value = "0.0.0.0"
    )]
    pub validating_webhook_listen_address: IpAddr,
    /// A name of a service for clientConfig in CRD
    #[arg(
        long,
        env = "CONVERSION_WEBHOOK_SERVICE_NAME",
        default_value = "shell-operator-conversion-svc"
    )]
    pub conversion_webhook_service_name: String,
    /// A path to a server certificate for clientConfig in CRD [default:
    /// /conversion-certs/tls.crt; without it and that file, in local mode and with
    /// --embedded-cluster, a throwaway CA and certificate are made in <tmp-dir>/webhook-certs]
    #[arg(long, env = "CONVERSION_WEBHOOK_SERVER_CERT", value_name = "FILE")]
    pub conversion_webhook_server_cert: Option<PathBuf>,
    /// A path to a server private key for clientConfig in CRD [default: /conversion-certs/tls.key]
    #[arg(long, env = "CONVERSION_WEBHOOK_SERVER_KEY", value_name = "FILE")]
    pub conversion_webhook_server_key: Option<PathBuf>,
    /// A path to a ca certificate for clientConfig in CRD [default: /conversion-certs/ca.crt]
    #[arg(long, env = "CONVERSION_WEBHOOK_CA", value_name = "FILE")]
    pub conversion_webhook_ca: Option<PathBuf>,
    /// A path to a client CA certificate for CRD.spec.conversion.webhook (can be set multiple times)
    #[arg(long, env = "CONVERSION_WEBHOOK_CLIENT_CA", value_delimiter = ',')]
    pub conversion_webhook_client_ca: Vec<PathBuf>,
    /// Port for the conversion webhook HTTPS server
    #[arg(
        long,
        env = "CONVERSION_WEBHOOK_LISTEN_PORT",
        default_value_t = crate::edges::webhook::DEFAULT_CONVERSION_PORT
    )]
    pub conversion_webhook_listen_port: u16,
    /// Address for the conversion webhook HTTPS server
    #[arg(
        long,
        env = "CONVERSION_WEBHOOK_LISTEN_ADDRESS",
        default_value = "0.0.0.0"
    )]
    pub conversion_webhook_listen_address: IpAddr,
    /// Connections each webhook server keeps at once; more are closed as they arrive
    #[arg(long, env = "ADDON_OPERATOR_WEBHOOK_MAX_CONNECTIONS",
          default_value_t = crate::edges::webhook::accept::DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub webhook_max_connections: u64,
    /// TLS handshakes each webhook server runs at once (more wait for a turn), and connections
    /// that have sent nothing yet (a new one past it closes the oldest silent one)
    #[arg(long, env = "ADDON_OPERATOR_WEBHOOK_MAX_HANDSHAKES",
          default_value_t = crate::edges::webhook::accept::DEFAULT_MAX_HANDSHAKES as u64,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub webhook_max_handshakes: u64,
    /// A client that has not finished its TLS handshake by then is dropped
    #[arg(long, env = "ADDON_OPERATOR_WEBHOOK_HANDSHAKE_TIMEOUT", default_value = "10s",
          value_parser = crate::cli::support::parse_duration)]
    pub webhook_handshake_timeout: std::time::Duration,
}

/// Which flags and environment variables set one server's certificate files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertFlags {
    pub cert: (&'static str, &'static str),
    pub key: (&'static str, &'static str),
}

const ADMISSION_FLAGS: CertFlags = CertFlags {
    cert: (
        "--validating-webhook-server-cert",
        "VALIDATING_WEBHOOK_SERVER_CERT",
    ),
    key: (
        "--validating-webhook-server-key",
        "VALIDATING_WEBHOOK_SERVER_KEY",
    ),
};

const CONVERSION_FLAGS: CertFlags = CertFlags {
    cert: (
        "--conversion-webhook-server-cert",
        "CONVERSION_WEBHOOK_SERVER_CERT",
    ),
    key: (
        "--conversion-webhook-server-key",
        "CONVERSION_WEBHOOK_SERVER_KEY",
    ),
};

/// What a server gets when its certificate flag is not set and the default file is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WithoutCertificate {
    /// The default paths (with a cluster: starting the server fails, naming the flag).
    Defaults,
    /// A throwaway CA and certificate made under `dir` for the Services in `namespace` (local
    /// mode and the embedded cluster).
    Generate { dir: PathBuf, namespace: String },
}

/// One server's certificate flags, as given.
struct GivenFiles<'a> {
    cert: &'a Option<PathBuf>,
    key: &'a Option<PathBuf>,
    ca: &'a Option<PathBuf>,
    /// The directory of the defaults (`/validating-certs`).
    default_dir: &'static str,
    /// The directory under `<tmp-dir>/webhook-certs` of a generated certificate.
    generated_dir: &'static str,
}

impl GivenFiles<'_> {
    /// The cert, key and CA paths: given, generated, or the defaults.
    fn resolve(
        &self,
        service: &str,
        without: &WithoutCertificate,
    ) -> Result<[PathBuf; 3], GenerateError> {
        let default = |file: &str| Path::new(self.default_dir).join(file);
        let default_missing = !default("tls.crt").exists();
        if let (None, true, WithoutCertificate::Generate { dir, namespace }) =
            (self.cert, default_missing, without)
        {
            let names = generated::service_names(service, namespace);
            let files = generated::generate(&dir.join(self.generated_dir), &names)?;
            return Ok([files.cert, files.key, files.ca]);
        }
        let pick = |given: &Option<PathBuf>, file| given.clone().unwrap_or_else(|| default(file));
        Ok([
            pick(self.cert, "tls.crt"),
            pick(self.key, "tls.key"),
            pick(self.ca, "ca.crt"),
        ])
    }
}

impl WebhookArgs {
    /// Both servers' settings; a server without a certificate gets what `without` says.
    pub fn settings(&self, without: &WithoutCertificate) -> Result<WebhookSettings, GenerateError> {
        let admission = GivenFiles {
            cert: &self.validating_webhook_server_cert,
            key: &self.validating_webhook_server_key,
            ca: &self.validating_webhook_ca,
            default_dir: "/validating-certs",
            generated_dir: "validating",
        };
        let conversion = GivenFiles {
            cert: &self.conversion_webhook_server_cert,
            key: &self.conversion_webhook_server_key,
            ca: &self.conversion_webhook_ca,
            default_dir: "/conversion-certs",
            generated_dir: "conversion",
        };
        let service = &self.validating_webhook_service_name;
        let [cert, key, ca] = admission.resolve(service, without)?;
        let admission = ServerSettings {
            listen: SocketAddr::new(
                self.validating_webhook_listen_address,
                self.validating_webhook_listen_port,
            ),
            tls: TlsFiles {
                cert,
                key,
                client_cas: self.validating_webhook_client_ca.clone(),
            },
            ca,
            service_name: service.clone(),
        };
        let service = &self.conversion_webhook_service_name;
        let [cert, key, ca] = conversion.resolve(service, without)?;
        let conversion = ServerSettings {
            listen: SocketAddr::new(
                self.conversion_webhook_listen_address,
                self.conversion_webhook_listen_port,
            ),
            tls: TlsFiles {
                cert,
                key,
                client_cas: self.conversion_webhook_client_ca.clone(),
            },
            ca,
            service_name: service.clone(),
        };
        let limits = Limits {
            max_connections: usize::try_from(self.webhook_max_connections).unwrap_or(usize::MAX),
            max_handshakes: usize::try_from(self.webhook_max_handshakes).unwrap_or(usize::MAX),
            handshake_timeout: self.webhook_handshake_timeout,
        };
        Ok(WebhookSettings {
            limits,
            admission,
            configuration_name: self.validating_webhook_configuration_name.clone(),
            failure_policy: self.validating_webhook_failure_policy,
            conversion,
        })
    }
}

/// The cluster objects the operator keeps for the webhooks: services in `namespace`, the CA
/// files' bundles.
pub fn objects(settings: &WebhookSettings, namespace: &str, embedded: bool) -> WebhookObjects {
    let loopback = |s: &ServerSettings| {
        let mut addr = s.listen;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::IpAddr::from([127, 0, 0, 1]));
        }
        addr.to_string()
    };
    let service = |s: &ServerSettings| ServiceRef {
        namespace: namespace.to_string(),
        name: s.service_name.clone(),
    };
    WebhookObjects {
        configuration_name: settings.configuration_name.clone(),
        admission_service: service(&settings.admission),
        conversion_service: service(&settings.conversion),
        failure_policy: settings.failure_policy,
        admission_ca: CaBundle::File(settings.admission.ca.clone()),
        conversion_ca: CaBundle::File(settings.conversion.ca.clone()),
        embedded_endpoints: embedded.then(|| {
            (
                loopback(&settings.admission),
                loopback(&settings.conversion),
            )
        }),
    }
}

/// Starts the admission server when some hook has an admission binding, and the conversion
/// server when some hook has a conversion binding; an error says which could not start.
pub async fn start_servers(
    settings: &WebhookSettings,
    runtime: &RuntimeHandle,
    shutdown: &CancellationToken,
) -> Result<(), String> {
    let used = runtime.webhook_use();
    let servers = [
        (
            used.admission,
            "admission",
            &settings.admission,
            ADMISSION_FLAGS,
            runtime.admission_answers(),
        ),
        (
            used.conversion,
            "conversion",
            &settings.conversion,
            CONVERSION_FLAGS,
            runtime.conversion_answers(),
        ),
    ];
    for (wanted, what, server, flags, answers) in servers {
        if !wanted {
            continue;
        }
        readable(&server.tls, flags)
            .map_err(|problem| format!("{what} webhook server: {problem}"))?;
        let bound = WebhookServer::bind(server.listen, &server.tls)
            .await
            .map_err(|e| format!("{what} {}", addon_core::error::error_chain(&e)))?
            .with_limits(settings.limits);
        tracing::info!(address = ?bound.local_addr(), ca = %server.ca.display(), "{what} webhook server listening");
        tokio::spawn(bound.run(Arc::clone(&answers), shutdown.clone()));
    }
    Ok(())
}

/// The certificate and key files can be opened, or which one cannot, with the flag and
/// environment variable that set its path.
fn readable(tls: &TlsFiles, flags: CertFlags) -> Result<(), String> {
    for (path, (flag, env)) in [(&tls.cert, flags.cert), (&tls.key, flags.key)] {
        if let Err(e) = std::fs::File::open(path) {
            return Err(format!(
                "read {} (set by {flag} or {env}): {e}",
                path.display()
            ));
        }
    }
    Ok(())
}
