//! The admission chain for creates and updates: the stored MutatingWebhookConfigurations' matching webhooks are called over HTTPS (their patches applied), then the ValidatingWebhookConfigurations' ones; a denial rejects the request with the webhook's message, an unreachable webhook follows its `failurePolicy`, as kube-apiserver does.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::app::App;
use crate::request::ResourceRequest;
use crate::status::ApiError;

/// The annotation of a Service that tells the emulator where the Service's endpoint listens
/// (`127.0.0.1:9680`): the emulator has no pods or proxies, so a webhook that names a Service is
/// reached through it.
pub const ENDPOINT_ANNOTATION: &str = "kube-emulator.flant.com/endpoint";

/// Largest webhook answer read.
const MAX_ANSWER_BYTES: usize = 16 << 20;

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// A webhook call that failed: the webhook could not be reached, or its answer is no review.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    #[error("url {url} is not https")]
    NotHttps { url: String },
    #[error("url {url}: the emulator only reaches IP addresses")]
    NotAnAddress { url: String },
    #[error("service \"{name}\" not found")]
    NoService { name: String },
    #[error(
        "service {namespace}/{name} has no {} annotation (the emulator's way to reach it)",
        ENDPOINT_ANNOTATION
    )]
    NoEndpoint { namespace: String, name: String },
    #[error("{} '{target}' is not host:port", ENDPOINT_ANNOTATION)]
    BadEndpoint { target: String },
    #[error("no caBundle")]
    NoCaBundle,
    #[error("caBundle: {0}")]
    CaBase64(base64::DecodeError),
    #[error("caBundle: {0}")]
    CaPem(rustls_pki_types::pem::Error),
    #[error("caBundle: {0}")]
    CaCertificate(rustls::Error),
    #[error("{0}")]
    Tls(rustls::Error),
    #[error("{0}")]
    ServerName(rustls_pki_types::InvalidDnsNameError),
    #[error("{0}")]
    Io(std::io::Error),
    #[error("context deadline exceeded")]
    Timeout,
    #[error("no HTTP response")]
    NoHttpResponse,
    #[error("{status_line}")]
    Status { status_line: String },
    #[error("{0}")]
    Json(serde_json::Error),
    #[error("the answer has no response")]
    NoResponse,
}

/// One request to admit.
pub struct Admission<'a> {
    pub req: &'a ResourceRequest,
    /// `CREATE` or `UPDATE`.
    pub operation: &'static str,
    pub object: Value,
    pub old_object: Option<Value>,
    pub dry_run: bool,
}

/// Runs the chain; returns the object as the mutating webhooks left it.
pub async fn admit(app: &App, admission: Admission<'_>) -> Result<Value, ApiError> {
    let req = admission.req;
    if req.sub.is_some() || req.info.create_only || req.info.group == "admissionregistration.k8s.io"
    {
        return Ok(admission.object);
    }
    let mut object = admission.object.clone();
    for (kind, plural) in [
        ("Mutating", "mutatingwebhookconfigurations"),
        ("Validating", "validatingwebhookconfigurations"),
    ] {
        for webhook in webhooks(app, plural) {
            if !matches(app, &webhook, &admission, &object) {
                continue;
            }
            let name = webhook["name"].as_str().unwrap_or_default().to_string();
            let review = review(&admission, &object);
            let answer = call(app, &webhook, &review).await;
            match answer {
                Err(e) => {
                    if webhook["failurePolicy"] == "Ignore" {
                        tracing::debug!(webhook = %name, error = %e, "webhook failed, ignored");
                        continue;
                    }
                    return Err(ApiError::Internal(format!(
                        "Internal error occurred: failed calling webhook \"{name}\": {e}"
                    )));
                }
                Ok(response) => {
                    if response["allowed"] != true {
                        let message = response["status"]["message"].as_str().unwrap_or("");
                        return Err(ApiError::Forbidden(format!(
                            "admission webhook \"{name}\" denied the request: {message}"
                        )));
                    }
                    if kind == "Mutating" {
                        object = apply_patch(&name, object, &response)?;
                    }
                }
            }
        }
    }
    Ok(object)
}

fn webhooks(app: &App, plural: &str) -> Vec<Value> {
    let registry = app.store.registry();
    let Some(info) = registry.find("admissionregistration.k8s.io", "v1", plural) else {
        return Vec::new();
    };
    let (configs, _) = app.store.list(&info.key(), None);
    let mut configs = configs;
    configs.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    configs
        .iter()
        .flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn listed(list: &Value, value: &str) -> bool {
    list.as_array()
        .is_some_and(|items| items.iter().any(|i| i == "*" || i == value))
}

fn matches(app: &App, webhook: &Value, admission: &Admission<'_>, object: &Value) -> bool {
    let req = admission.req;
    let rules = webhook["rules"].as_array().cloned().unwrap_or_default();
    let scope = if req.info.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    };
    let rule_ok = rules.iter().any(|r| {
        listed(&r["operations"], admission.operation)
            && listed(&r["apiGroups"], &req.info.group)
            && listed(&r["apiVersions"], &req.version)
            && listed(&r["resources"], &req.info.plural)
            && r["scope"].as_str().is_none_or(|s| s == "*" || s == scope)
    });
    if !rule_ok {
        return false;
    }
    let labels = &object["metadata"]["labels"];
    if !selected(&webhook["objectSelector"], labels) {
        return false;
    }
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    if req.info.namespaced && webhook["namespaceSelector"].is_object() {
        let registry = app.store.registry();
        let ns_labels = registry
            .find("", "v1", "namespaces")
            .and_then(|info| app.store.get(&info.key(), "", namespace))
            .map(|ns| ns["metadata"]["labels"].clone())
            .unwrap_or(Value::Null);
        return selected(&webhook["namespaceSelector"], &ns_labels);
    }
    true
}

/// A LabelSelector (`matchLabels`, `matchExpressions`) against labels; no selector selects all.
fn selected(selector: &Value, labels: &Value) -> bool {
    crate::selector::LabelSelector::from_object(selector).matches_labels(Some(labels))
}

fn review(admission: &Admission<'_>, object: &Value) -> Value {
    let req = admission.req;
    let uid = format!("kube-emulator-{}", NEXT_UID.fetch_add(1, Ordering::Relaxed));
    let kind = json!({"group": req.info.group, "version": req.version, "kind": req.info.kind});
    let resource =
        json!({"group": req.info.group, "version": req.version, "resource": req.info.plural});
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": admission.operation,
            "userInfo": {"username": "kube-emulator", "groups": ["system:masters", "system:authenticated"]},
            "object": object,
            "oldObject": admission.old_object,
            "dryRun": admission.dry_run,
        }
    })
}

fn apply_patch(name: &str, mut object: Value, response: &Value) -> Result<Value, ApiError> {
    let Some(encoded) = response["patch"].as_str() else {
        return Ok(object);
    };
    let bad = |e: String| {
        ApiError::Internal(format!(
            "Internal error occurred: admission webhook \"{name}\" returned an invalid patch: {e}"
        ))
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| bad(e.to_string()))?;
    let patch: json_patch::Patch =
        serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    json_patch::patch(&mut object, &patch).map_err(|e| bad(e.to_string()))?;
    Ok(object)
}

/// Where a webhook is reached: the socket address, the TLS server name and the path.
fn endpoint(app: &App, client_config: &Value) -> Result<(SocketAddr, String, String), CallError> {
    if let Some(url) = client_config["url"].as_str() {
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| CallError::NotHttps { url: url.into() })?;
        let (host_port, path) = rest.split_once('/').unwrap_or((rest, ""));
        let addr: SocketAddr = host_port
            .parse()
            .or_else(|_| format!("{host_port}:443").parse())
            .map_err(|_| CallError::NotAnAddress { url: url.into() })?;
        let host = host_port
            .rsplit_once(':')
            .map_or(host_port, |(h, _)| h)
            .to_string();
        return Ok((addr, host, format!("/{path}")));
    }
    let service = &client_config["service"];
    let (ns, name) = (
        service["namespace"].as_str().unwrap_or_default(),
        service["name"].as_str().unwrap_or_default(),
    );
    let registry = app.store.registry();
    let svc = registry
        .find("", "v1", "services")
        .and_then(|info| app.store.get(&info.key(), ns, name))
        .ok_or_else(|| CallError::NoService { name: name.into() })?;
    let target = svc["metadata"]["annotations"][ENDPOINT_ANNOTATION]
        .as_str()
        .ok_or_else(|| CallError::NoEndpoint {
            namespace: ns.into(),
            name: name.into(),
        })?;
    let addr = target.parse().map_err(|_| CallError::BadEndpoint {
        target: target.into(),
    })?;
    let path = service["path"].as_str().unwrap_or("/").to_string();
    Ok((addr, format!("{name}.{ns}.svc"), path))
}

fn connector(ca_bundle: &Value) -> Result<TlsConnector, CallError> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle.as_str().ok_or(CallError::NoCaBundle)?)
        .map_err(CallError::CaBase64)?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(CallError::CaPem)?;
        roots.add(cert).map_err(CallError::CaCertificate)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(CallError::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Posts the review and returns its `response`, within the webhook's `timeoutSeconds`.
async fn call(app: &App, webhook: &Value, review: &Value) -> Result<Value, CallError> {
    let timeout = Duration::from_secs(webhook["timeoutSeconds"].as_u64().unwrap_or(10));
    post_review(app, &webhook["clientConfig"], review, timeout).await
}

/// Posts a review (admission or conversion) to the webhook a `clientConfig` names, over HTTPS
/// checked against its `caBundle`, and returns the answer's `response`: a failure is a call that
/// failed (unreachable, late, not `200`, no response).
pub(crate) async fn post_review(
    app: &App,
    client_config: &Value,
    review: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    let (addr, server_name, path) = endpoint(app, client_config)?;
    let connector = connector(&client_config["caBundle"])?;
    let exchange = async {
        let tcp = TcpStream::connect(addr).await.map_err(CallError::Io)?;
        let name = ServerName::try_from(server_name).map_err(CallError::ServerName)?;
        let mut tls = connector.connect(name, tcp).await.map_err(CallError::Io)?;
        let body = review.to_string();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes())
            .await
            .map_err(CallError::Io)?;
        tls.write_all(body.as_bytes())
            .await
            .map_err(CallError::Io)?;
        let mut answer = Vec::new();
        (&mut tls)
            .take(MAX_ANSWER_BYTES as u64)
            .read_to_end(&mut answer)
            .await
            .map_err(CallError::Io)?;
        Ok::<Vec<u8>, CallError>(answer)
    };
    let answer = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| CallError::Timeout)??;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or(CallError::NoHttpResponse)?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(CallError::Status {
            status_line: head.lines().next().unwrap_or_default().to_string(),
        });
    }
    let review: Value = serde_json::from_str(body).map_err(CallError::Json)?;
    let response = review["response"].clone();
    if !response.is_object() {
        return Err(CallError::NoResponse);
    }
    Ok(response)
}
