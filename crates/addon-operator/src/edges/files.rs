//! [`DiskFiles`]: the runtime's `Files` port read from disk (the chart files Helm loads, a
//! module's `crds/`, a webhook CA file).

use std::path::Path;

use crate::runtime::edges::files::{CrdsError, Files, ModuleCrds};

/// The files as the disk has them.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskFiles;

impl Files for DiskFiles {
    fn chart_checksum(
        &self,
        module_dir: &Path,
        extra: &[u8],
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        Ok(super::helm::chart_files::checksum(module_dir, extra)?)
    }

    fn read_crds(
        &self,
        module_dir: &Path,
        filters: &[String],
    ) -> Result<Option<ModuleCrds>, CrdsError> {
        super::kube::crds::read(module_dir, filters)
    }

    fn ca_bundle(&self, ca: &Path) -> std::io::Result<String> {
        super::webhook::ca_bundle(ca)
    }
}
