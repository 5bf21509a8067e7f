//! Throwaway keys and certificates for a test cluster, made with the `openssl` command: a CA,
//! serving certificates it signs (the API server's, a webhook server's) and the service-account
//! signing key pair.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A certificate and its private key, PEM files in a directory.
#[derive(Debug, Clone)]
pub struct CertPair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A CA that signs serving certificates.
#[derive(Debug, Clone)]
pub struct Ca {
    pub pair: CertPair,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (Debian's openssl package)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An EC P-256 key at `dir/name`.
fn ec_key(dir: &Path, name: &str) -> PathBuf {
    openssl(
        dir,
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            name,
        ],
    );
    dir.join(name)
}

impl Ca {
    /// A new self-signed CA in `dir` (`NAME.crt`, `NAME.key`), valid for two days.
    pub fn new(dir: &Path, name: &str) -> Self {
        let key = ec_key(dir, &format!("{name}.key"));
        let cert = dir.join(format!("{name}.crt"));
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                &key.to_string_lossy(),
                "-out",
                &cert.to_string_lossy(),
                "-days",
                "2",
                "-subj",
                &format!("/CN={name}"),
            ],
        );
        Self {
            pair: CertPair { cert, key },
        }
    }

    /// A serving certificate for `sans` (IP addresses and DNS names) signed by this CA, as
    /// `dir/NAME.crt` and `dir/NAME.key`.
    pub fn serving(&self, dir: &Path, name: &str, sans: &[&str]) -> CertPair {
        let key = ec_key(dir, &format!("{name}.key"));
        let csr = dir.join(format!("{name}.csr"));
        let cert = dir.join(format!("{name}.crt"));
        openssl(
            dir,
            &[
                "req",
                "-new",
                "-key",
                &key.to_string_lossy(),
                "-out",
                &csr.to_string_lossy(),
                "-subj",
                &format!("/CN={}", sans.first().copied().unwrap_or(name)),
            ],
        );
        let alt: Vec<String> = sans
            .iter()
            .map(|s| match s.parse::<std::net::IpAddr>() {
                Ok(_) => format!("IP:{s}"),
                Err(_) => format!("DNS:{s}"),
            })
            .collect();
        let ext = dir.join(format!("{name}.ext"));
        std::fs::write(
            &ext,
            format!(
                "subjectAltName={}\nextendedKeyUsage=serverAuth,clientAuth\n",
                alt.join(",")
            ),
        )
        .expect("write extensions file");
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr.to_string_lossy(),
                "-CA",
                &self.pair.cert.to_string_lossy(),
                "-CAkey",
                &self.pair.key.to_string_lossy(),
                "-CAcreateserial",
                "-out",
                &cert.to_string_lossy(),
                "-days",
                "2",
                "-extfile",
                &ext.to_string_lossy(),
            ],
        );
        CertPair { cert, key }
    }
}

/// The service-account signing key pair (`sa.key`, `sa.pub`) in `dir`.
pub fn service_account_keys(dir: &Path) -> CertPair {
    let key = ec_key(dir, "sa.key");
    let public = dir.join("sa.pub");
    openssl(
        dir,
        &[
            "pkey",
            "-in",
            &key.to_string_lossy(),
            "-pubout",
            "-out",
            &public.to_string_lossy(),
        ],
    );
    CertPair { cert: public, key }
}
