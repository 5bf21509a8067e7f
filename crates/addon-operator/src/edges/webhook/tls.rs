//! The webhook servers' TLS: the serving certificate and key read from PEM files and read again when the files change (cert-manager rotates them), and the client-certificate check when client CAs are given.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Where the serving certificate, its key and the client CAs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Client certificates must be signed by one of these; empty: no client certificate asked.
    pub client_cas: Vec<PathBuf>,
}

/// Certificates or keys that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("read {}: {message}", path.display())]
    Read { path: PathBuf, message: String },
    #[error("{}: no PEM certificate in it", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{} and {}: {message}", cert.display(), key.display())]
    Key {
        cert: PathBuf,
        key: PathBuf,
        message: String,
    },
    #[error("client CA: {message}")]
    ClientCa { message: String },
}

impl TlsError {
    pub fn category(&self) -> &'static str {
        "webhook_tls"
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read = |message: String| TlsError::Read {
        path: path.to_path_buf(),
        message,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| read(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| read(e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

fn load_key(files: &TlsFiles) -> Result<CertifiedKey, TlsError> {
    let chain = read_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| TlsError::Read {
        path: files.key.clone(),
        message: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, key, &provider()).map_err(|e| TlsError::Key {
        cert: files.cert.clone(),
        key: files.key.clone(),
        message: e.to_string(),
    })
}

/// What identifies a version of the files: modification time and size of each.
type Stamp = Vec<Option<(SystemTime, u64)>>;

fn stamp(paths: &[&Path]) -> Stamp {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

/// Hands out the serving key, reading the files again when their time or size changed; a new
/// version that does not load is logged and the last good one kept.
#[derive(Debug)]
struct ReloadingKey {
    files: TlsFiles,
    current: Mutex<(Stamp, Arc<CertifiedKey>)>,
}

impl ReloadingKey {
    fn new(files: TlsFiles) -> Result<Self, TlsError> {
        let stamp = stamp(&[&files.cert, &files.key]);
        let key = Arc::new(load_key(&files)?);
        Ok(Self {
            files,
            current: Mutex::new((stamp, key)),
        })
    }

    fn key(&self) -> Arc<CertifiedKey> {
        let now = stamp(&[&self.files.cert, &self.files.key]);
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.0 != now {
            match load_key(&self.files) {
                Ok(key) => {
                    tracing::info!(cert = %self.files.cert.display(), "webhook certificate reloaded");
                    *current = (now, Arc::new(key));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "webhook certificate changed but cannot be loaded; the previous one is kept");
                    current.0 = now;
                }
            }
        }
        current.1.clone()
    }
}

impl ResolvesServerCert for ReloadingKey {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.key())
    }
}

/// The server config: HTTP/1.1, the reloading serving key, client certificates checked against
/// `client_cas` when some are given.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let resolver = Arc::new(ReloadingKey::new(files.clone())?);
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::ClientCa {
            message: e.to_string(),
        })?;
    let builder = if files.client_cas.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        for path in &files.client_cas {
            for cert in read_certs(path)? {
                roots.add(cert).map_err(|e| TlsError::ClientCa {
                    message: format!("{}: {e}", path.display()),
                })?;
            }
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| TlsError::ClientCa {
                message: e.to_string(),
            })?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut config = builder.with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
