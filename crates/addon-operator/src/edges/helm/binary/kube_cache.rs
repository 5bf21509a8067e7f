//! The private directory helm keeps its Kubernetes discovery cache in (`KUBECACHEDIR`), in RAM
//! where a tmpfs is at hand, so helm processes neither share `~/.kube/cache` nor wait for a disk.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Where the RAM-backed candidates are looked for by default: `/dev/shm` (a tmpfs on Linux).
pub const RAM_DIRS: &[&str] = &["/dev/shm"];

/// Prefix of the directory created in a RAM candidate.
const PREFIX: &str = "addon-operator-helm-kube-cache-";

/// helm's discovery cache directory; a directory created in a RAM candidate is removed when this
/// is dropped, the fallback under the operator's temp dir is kept for the next start.
#[derive(Debug)]
pub(crate) enum KubeCache {
    /// A fresh private directory (mode 0700) in a RAM candidate.
    Ram(tempfile::TempDir),
    /// `<tmp_dir>/helm/kube-cache` (mode 0700).
    TmpDir(PathBuf),
}

impl KubeCache {
    /// A fresh private directory in the first usable `ram_dirs` entry, else
    /// `<tmp_dir>/helm/kube-cache`.
    pub fn create(tmp_dir: &Path, ram_dirs: &[PathBuf]) -> std::io::Result<Self> {
        for parent in ram_dirs.iter().filter(|dir| dir.is_dir()) {
            let private = std::fs::Permissions::from_mode(0o700);
            let made = tempfile::Builder::new()
                .prefix(PREFIX)
                .permissions(private)
                .tempdir_in(parent);
            match made {
                Ok(dir) => return Ok(Self::Ram(dir)),
                Err(error) => tracing::debug!(
                    dir = %parent.display(),
                    %error,
                    "no helm discovery cache there; trying the next place"
                ),
            }
        }
        let dir = tmp_dir.join("helm").join("kube-cache");
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        Ok(Self::TmpDir(dir))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        match self {
            Self::Ram(dir) => dir.path(),
            Self::TmpDir(dir) => dir,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_fresh_private_directory_is_made_in_the_first_ram_candidate_and_removed_on_drop() {
        let (tmp, ram) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let missing = ram.path().join("missing");
        let cache = KubeCache::create(tmp.path(), &[missing, ram.path().into()]).unwrap();
        let dir = cache.path().to_path_buf();
        assert_eq!(dir.parent(), Some(ram.path()));
        assert_eq!(mode(&dir), 0o700);
        let other = KubeCache::create(tmp.path(), &[ram.path().into()]).unwrap();
        assert_ne!(other.path(), dir, "each operator has its own");
        drop(cache);
        assert!(!dir.exists());
    }

    #[test]
    fn without_a_ram_candidate_the_cache_is_a_private_directory_under_the_temp_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = KubeCache::create(tmp.path(), &[tmp.path().join("no-shm")]).unwrap();
        assert_eq!(cache.path(), tmp.path().join("helm/kube-cache"));
        assert_eq!(mode(cache.path()), 0o700);
        drop(cache);
        assert!(
            tmp.path().join("helm/kube-cache").is_dir(),
            "kept for the next start"
        );
    }
}
