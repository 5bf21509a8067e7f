//! A throwaway CA and serving certificate for a webhook server started without certificates (local mode and the embedded cluster), written as PEM files the server and the `caBundle` read like given ones.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// The files of a generated certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A certificate that could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("make a certificate for {names:?}")]
    Make {
        names: Vec<String>,
        #[source]
        source: rcgen::Error,
    },
    #[error("write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl GenerateError {
    pub fn category(&self) -> &'static str {
        "webhook_tls"
    }
}

/// The names a Service `name` in `namespace` is called by, and the loopback addresses.
pub fn service_names(name: &str, namespace: &str) -> Vec<String> {
    let mut names = vec![
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.cluster.local"),
        format!("{name}.{namespace}"),
        name.to_string(),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    names.dedup();
    names
}

struct Pems {
    ca: String,
    cert: String,
    key: String,
}

fn make(names: &[String]) -> Result<Pems, rcgen::Error> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    (ca.distinguished_name).push(DnType::CommonName, "addon-operator throwaway webhook CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(names.to_vec())?;
    let first = names.first().map_or("webhook", String::as_str);
    serving.distinguished_name.push(DnType::CommonName, first);
    serving.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = serving.signed_by(&key, &issuer)?;
    Ok(Pems {
        ca: ca_cert.pem(),
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

/// Writes `text` to `path` afresh, readable by the owner only.
fn write_private(path: &Path, text: &str) -> Result<(), GenerateError> {
    let written = (|| {
        let _ = std::fs::remove_file(path);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        file.write_all(text.as_bytes())
    })();
    written.map_err(|source| GenerateError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Makes a CA and a certificate for `names` signed by it, and writes `ca.crt`, `tls.crt` and
/// `tls.key` into `dir` (created when missing).
pub fn generate(dir: &Path, names: &[String]) -> Result<GeneratedFiles, GenerateError> {
    let pems = make(names).map_err(|source| GenerateError::Make {
        names: names.to_vec(),
        source,
    })?;
    std::fs::create_dir_all(dir).map_err(|source| GenerateError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let files = GeneratedFiles {
        ca: dir.join("ca.crt"),
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    write_private(&files.key, &pems.key)?;
    write_private(&files.cert, &pems.cert)?;
    write_private(&files.ca, &pems.ca)?;
    Ok(files)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_serves_tls_for_the_service_names() {
        let dir = tempfile::tempdir().unwrap();
        let names = service_names("svc", "ns");
        let files = generate(dir.path(), &names).unwrap();
        let tls = super::super::TlsFiles {
            cert: files.cert.clone(),
            key: files.key.clone(),
            client_cas: Vec::new(),
        };
        // the pair loads as a serving key
        super::super::tls::server_config(&tls).unwrap();
        let mode = std::fs::metadata(&files.key).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
            0o600
        );
        for name in ["svc.ns.svc", "127.0.0.1"] {
            verify(&files, name).unwrap();
        }
        assert!(verify(&files, "other.ns.svc").is_err());
    }

    /// Checks the serving certificate for `name` against the generated CA, as a client would.
    fn verify(files: &GeneratedFiles, name: &str) -> Result<(), rustls::Error> {
        use rustls_pki_types::pem::PemObject as _;
        use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(&files.ca).unwrap())
            .unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider,
        )
        .build()
        .unwrap();
        let cert = CertificateDer::from_pem_file(&files.cert).unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        rustls::client::danger::ServerCertVerifier::verify_server_cert(
            verifier.as_ref(),
            &cert,
            &[],
            &name,
            &[],
            UnixTime::now(),
        )
        .map(|_| ())
    }
}
