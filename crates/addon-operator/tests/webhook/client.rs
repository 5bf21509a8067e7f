//! A minimal HTTPS client: one HTTP/1.1 request per TLS connection, checked against a CA, with an optional client certificate.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

pub fn certs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webhook-certs")
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A connector trusting the test CA, presenting `client` (cert, key) when given.
pub fn connector(client: Option<(&str, &str)>) -> TlsConnector {
    connector_trusting(&certs().join("ca.crt"), client)
}

/// A connector trusting the CA in the PEM file `ca`, presenting `client` (cert, key) when given.
pub fn connector_trusting(ca: &Path, client: Option<(&str, &str)>) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain: Vec<_> = CertificateDer::pem_file_iter(certs().join(cert))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_file(certs().join(key)).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    TlsConnector::from(Arc::new(config))
}

/// The status code and body of one request, or the connection error.
pub async fn request(
    connector: &TlsConnector,
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> Result<(u16, String), String> {
    let (status, body, _) = request_with_peer(connector, addr, method, path, body).await?;
    Ok((status, body))
}

/// [`request`] also returning the server's certificate.
pub async fn request_with_peer(
    connector: &TlsConnector,
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> Result<(u16, String, Vec<u8>), String> {
    send(connector, addr, method, path, body.len(), body).await
}

/// A POST whose head declares `declared` bytes of body while `body` is what is sent (then the
/// client waits for the answer without closing).
pub async fn post_declaring(
    connector: &TlsConnector,
    addr: SocketAddr,
    declared: usize,
    body: &str,
) -> Result<(u16, String), String> {
    let (status, body, _) = send(connector, addr, "POST", "/review", declared, body).await?;
    Ok((status, body))
}

async fn send(
    connector: &TlsConnector,
    addr: SocketAddr,
    method: &str,
    path: &str,
    declared: usize,
    body: &str,
) -> Result<(u16, String, Vec<u8>), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let peer = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec())
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(head.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    tls.write_all(body.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    tls.read_to_end(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&response).to_string();
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    Ok((status, body.to_string(), peer))
}
