//! The files port: what the runtime reads from disk (a chart's checksum, a module's CRDs, a
//! webhook CA), through [`Files`]; `edges::files::DiskFiles` reads them. Every method is blocking
//! I/O: call it off the async executor.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// File name prefixes left out of `crds/` (upstream's default `--crd-filters`).
pub const DEFAULT_CRD_FILTERS: [&str; 2] = ["doc-", "_"];

/// The CRDs of a module and a checksum of the files they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleCrds {
    pub checksum: String,
    pub objects: Vec<Value>,
}

/// A `crds/` file that is not a list of CRDs.
#[derive(Debug, thiserror::Error)]
pub enum CrdsError {
    #[error("read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parse {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: document {index} is a {kind}, not an apiextensions.k8s.io/v1 CustomResourceDefinition with a name", path.display())]
    NotACrd {
        path: PathBuf,
        index: usize,
        kind: String,
    },
}

/// Reads the files the runtime needs.
pub trait Files: Send + Sync {
    /// Checksum of `extra` (the values) and of every file Helm loads for the module at
    /// `module_dir`, plus its `crds/`.
    fn chart_checksum(
        &self,
        module_dir: &Path,
        extra: &[u8],
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
    /// The CRDs in `module_dir/crds` (`None` when there is no such directory), files whose name
    /// starts with one of `filters` left out.
    fn read_crds(
        &self,
        module_dir: &Path,
        filters: &[String],
    ) -> Result<Option<ModuleCrds>, CrdsError>;
    /// The `caBundle` of a CA file: its bytes in base64.
    fn ca_bundle(&self, ca: &Path) -> std::io::Result<String>;
}
