//! The private directory helm keeps its Kubernetes discovery cache in (`KUBECACHEDIR`), in RAM
//! where a tmpfs is at hand, so helm processes neither share `~/.kube/cache` nor wait for a disk.

use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// Where the RAM-backed candidates are looked for by default: `/dev/shm` (a tmpfs on Linux).
pub const RAM_DIRS: &[&str] = &["/dev/shm"];

/// Prefix of the directory made in a RAM candidate.
const PREFIX: &str = "addon-operator-helm-kube-cache-";

/// helm's discovery cache directory. The one in RAM is named after the operator's temp dir, so a
/// restarted operator (even after SIGKILL) takes its predecessor's directory instead of leaving
/// one more behind, and it is removed when this is dropped; the fallback under the temp dir stays.
#[derive(Debug)]
pub(crate) enum KubeCache {
    /// `<ram dir>/addon-operator-helm-kube-cache-<uid>-<hash of the temp dir>` (mode 0700).
    Ram(PathBuf),
    /// `<tmp_dir>/helm/kube-cache` (mode 0700).
    TmpDir(PathBuf),
}

impl Drop for KubeCache {
    fn drop(&mut self) {
        if let Self::Ram(dir) = self {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl KubeCache {
    /// The private directory in the first usable `ram_dirs` entry, else
    /// `<tmp_dir>/helm/kube-cache`.
    pub fn create(tmp_dir: &Path, ram_dirs: &[PathBuf]) -> std::io::Result<Self> {
        let name = ram_name(tmp_dir);
        for parent in ram_dirs.iter().filter(|dir| dir.is_dir()) {
            let dir = parent.join(&name);
            match private_dir(&dir) {
                Ok(()) => return Ok(Self::Ram(dir)),
                Err(error) => tracing::debug!(
                    dir = %dir.display(),
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
            Self::Ram(dir) | Self::TmpDir(dir) => dir,
        }
    }
}

/// `<PREFIX><uid>-<16 hex digits of the temp dir's hash>`.
pub fn ram_name(tmp_dir: &Path) -> String {
    let digest = Sha256::digest(tmp_dir.as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{}-{hex}", nix::unistd::geteuid())
}

/// Makes `dir` with mode 0700, or takes it when it is already a directory (not a link) of this
/// user with mode 0700; anything else there is refused.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    let made = std::fs::DirBuilder::new().mode(0o700).create(dir);
    match made {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        other => return other,
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let ours = meta.is_dir()
        && meta.uid() == nix::unistd::geteuid().as_raw()
        && meta.permissions().mode() & 0o777 == 0o700;
    if ours {
        return Ok(());
    }
    Err(std::io::Error::other(
        "exists and is not a private directory of this user",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_private_directory_is_made_in_the_first_ram_candidate_and_removed_on_drop() {
        let (tmp, ram) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let missing = ram.path().join("missing");
        let cache = KubeCache::create(tmp.path(), &[missing, ram.path().into()]).unwrap();
        let dir = cache.path().to_path_buf();
        assert_eq!(dir.parent(), Some(ram.path()));
        assert_eq!(mode(&dir), 0o700);
        let other_tmp = tempfile::tempdir().unwrap();
        let other = KubeCache::create(other_tmp.path(), &[ram.path().into()]).unwrap();
        assert_ne!(other.path(), dir, "each temp dir has its own");
        drop(cache);
        assert!(!dir.exists());
    }

    #[test]
    fn a_restart_takes_the_directory_a_killed_operator_left() {
        let (tmp, ram) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let killed = KubeCache::create(tmp.path(), &[ram.path().into()]).unwrap();
        let dir = killed.path().to_path_buf();
        std::fs::write(dir.join("servergroups.json"), "{}").unwrap();
        std::mem::forget(killed); // SIGKILL: no drop

        let restarted = KubeCache::create(tmp.path(), &[ram.path().into()]).unwrap();
        assert_eq!(restarted.path(), dir);
        assert_eq!(std::fs::read_dir(ram.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_link_or_a_directory_open_to_others_in_its_place_is_not_used() {
        let (tmp, ram) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let name = ram_name(tmp.path());
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), ram.path().join(&name)).unwrap();
        let cache = KubeCache::create(tmp.path(), &[ram.path().into()]).unwrap();
        assert_eq!(cache.path(), tmp.path().join("helm/kube-cache"));

        let (tmp, ram) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let open = ram.path().join(ram_name(tmp.path()));
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let cache = KubeCache::create(tmp.path(), &[ram.path().into()]).unwrap();
        assert_eq!(cache.path(), tmp.path().join("helm/kube-cache"));
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
