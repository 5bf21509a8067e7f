//! shell-operator's `--validating-webhook-*` and `--conversion-webhook-*` flags (same names, environment variables and defaults), and starting the webhook servers the tree's hooks need.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use addon_core::hook_config::FailurePolicy;
use tokio_util::sync::CancellationToken;

use addon_core::webhook::ServiceRef;

use crate::edges::webhook::{ServerSettings, TlsFiles, WebhookServer, WebhookSettings};
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
    #[arg(
        long,
        env = "VALIDATING_WEBHOOK_SERVER_CERT",
        default_value = "/validating-certs/tls.crt"
    )]
    pub validating_webhook_server_cert: PathBuf,
    /// A path to a server private key for service used in ValidatingWebhookConfiguration
    #[arg(
        long,
        env = "VALIDATING_WEBHOOK_SERVER_KEY",
        default_value = "/validating-certs/tls.key"
    )]
    pub validating_webhook_server_key: PathBuf,
    /// A path to a ca certificate for ValidatingWebhookConfiguration
    #[arg(
        long,
        env = "VALIDATING_WEBHOOK_CA",
        default_value = "/validating-certs/ca.crt"
    )]
    pub validating_webhook_ca: PathBuf,
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
    /// A path to a server certificate for clientConfig in CRD
    #[arg(
        long,
        env = "CONVERSION_WEBHOOK_SERVER_CERT",
        default_value = "/conversion-certs/tls.crt"
    )]
    pub conversion_webhook_server_cert: PathBuf,
    /// A path to a server private key for clientConfig in CRD
    #[arg(
        long,
        env = "CONVERSION_WEBHOOK_SERVER_KEY",
        default_value = "/conversion-certs/tls.key"
    )]
    pub conversion_webhook_server_key: PathBuf,
    /// A path to a ca certificate for clientConfig in CRD
    #[arg(
        long,
        env = "CONVERSION_WEBHOOK_CA",
        default_value = "/conversion-certs/ca.crt"
    )]
    pub conversion_webhook_ca: PathBuf,
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
}

impl WebhookArgs {
    pub fn settings(&self) -> WebhookSettings {
        WebhookSettings {
            admission: ServerSettings {
                listen: SocketAddr::new(
                    self.validating_webhook_listen_address,
                    self.validating_webhook_listen_port,
                ),
                tls: TlsFiles {
                    cert: self.validating_webhook_server_cert.clone(),
                    key: self.validating_webhook_server_key.clone(),
                    client_cas: self.validating_webhook_client_ca.clone(),
                },
                ca: self.validating_webhook_ca.clone(),
                service_name: self.validating_webhook_service_name.clone(),
            },
            configuration_name: self.validating_webhook_configuration_name.clone(),
            failure_policy: self.validating_webhook_failure_policy,
            conversion: ServerSettings {
                listen: SocketAddr::new(
                    self.conversion_webhook_listen_address,
                    self.conversion_webhook_listen_port,
                ),
                tls: TlsFiles {
                    cert: self.conversion_webhook_server_cert.clone(),
                    key: self.conversion_webhook_server_key.clone(),
                    client_cas: self.conversion_webhook_client_ca.clone(),
                },
                ca: self.conversion_webhook_ca.clone(),
                service_name: self.conversion_webhook_service_name.clone(),
            },
        }
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
            runtime.admission_answers(),
        ),
        (
            used.conversion,
            "conversion",
            &settings.conversion,
            runtime.conversion_answers(),
        ),
    ];
    for (wanted, what, server, answers) in servers {
        if !wanted {
            continue;
        }
        let bound = WebhookServer::bind(server.listen, &server.tls)
            .await
            .map_err(|e| format!("{what} {}", addon_core::error::error_chain(&e)))?;
        tracing::info!(address = ?bound.local_addr(), "{what} webhook server listening");
        tokio::spawn(bound.run(Arc::clone(&answers), shutdown.clone()));
    }
    Ok(())
}
