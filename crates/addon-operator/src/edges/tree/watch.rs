//! Watches the module tree's directories (`--reload-tree`) and announces a change once the writes
//! have settled: a quiet period after the last file-system event, so that an editor's save, a
//! `git checkout` or a Kubernetes volume's `..data` symlink swap counts as one change.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::inotify::{DirWatch, Seen};

/// Quiet time after the last file-system event before the tree is loaded again.
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(500);
/// A change is announced at the latest this many settle periods after its first event, even if
/// writes go on.
const MAX_SETTLES: u32 = 20;

/// A failed watch of the tree's directories.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch the module tree directory '{path}'", path = path.display())]
pub struct TreeWatchError {
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

/// The watch of the modules and global hooks directories: each directory recursively, and its
/// parent for the directory itself being replaced (a symlink swapped).
pub struct TreeWatch {
    roots: Vec<PathBuf>,
    /// What each root resolved to when it was watched.
    resolved: Vec<Option<PathBuf>>,
    settle: Duration,
    signals: mpsc::UnboundedReceiver<()>,
    sender: mpsc::UnboundedSender<()>,
    /// Reads the events and signals the ones that change the tree.
    reader: JoinHandle<()>,
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl TreeWatch {
    /// Starts watching `roots` (the ones that exist). Must be called inside a tokio runtime.
    /// Relative roots are taken from the working directory now; symlinks in them are kept, so a
    /// swapped link is still seen.
    pub fn start(roots: Vec<PathBuf>, settle: Duration) -> Result<Self, TreeWatchError> {
        let roots: Vec<PathBuf> = (roots.into_iter())
            .map(|root| std::path::absolute(&root).unwrap_or(root))
            .collect();
        let (sender, signals) = mpsc::unbounded_channel();
        let reader = watch(&roots, sender.clone())?;
        Ok(Self {
            resolved: resolve(&roots),
            roots,
            settle,
            signals,
            sender,
            reader,
        })
    }

    /// Waits for the next change and for the writes after it to settle. `None`: the watch ended.
    pub async fn changed(&mut self) -> Option<()> {
        self.signals.recv().await?;
        let deadline = tokio::time::Instant::now() + self.settle * MAX_SETTLES;
        loop {
            let quiet = (tokio::time::Instant::now() + self.settle).min(deadline);
            match tokio::time::timeout_at(quiet, self.signals.recv()).await {
                Err(_) => break,
                Ok(None) => return None,
                Ok(Some(())) => {}
            }
        }
        // a swapped symlink points the recursive watch at the old directory: watch anew
        let resolved = resolve(&self.roots);
        if resolved == self.resolved {
            return Some(());
        }
        match watch(&self.roots, self.sender.clone()) {
            Ok(reader) => {
                self.reader.abort();
                self.reader = reader;
                self.resolved = resolved;
            }
            Err(e) => {
                let error = addon_core::error::error_chain(&e);
                tracing::warn!(%error, "the module tree is watched as before");
            }
        }
        Some(())
    }
}

/// Where each root leads now (`None`: it does not exist).
fn resolve(roots: &[PathBuf]) -> Vec<Option<PathBuf>> {
    roots
        .iter()
        .map(|r| std::fs::canonicalize(r).ok())
        .collect()
}

/// Watches `roots` recursively and their parents alone; a task signals every change of the tree
/// on `sender`.
fn watch(
    roots: &[PathBuf],
    sender: mpsc::UnboundedSender<()>,
) -> Result<JoinHandle<()>, TreeWatchError> {
    let watch_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TreeWatchError { path, source }
    };
    let mut dirs = DirWatch::new().map_err(watch_error(Path::new("")))?;
    for root in roots.iter().filter(|r| r.exists()) {
        dirs.add(root, true).map_err(watch_error(root))?;
    }
    for parent in roots.iter().filter_map(|r| r.parent()) {
        // only the parent itself: its other entries are not the tree's
        if parent.is_dir() {
            let _ = dirs.add(parent, false);
        }
    }
    let watched: Vec<(PathBuf, Option<PathBuf>)> =
        roots.iter().cloned().zip(resolve(roots)).collect();
    Ok(tokio::spawn(async move {
        loop {
            let seen = match dirs.next().await {
                Ok(seen) => seen,
                Err(e) => {
                    tracing::warn!(error = %e, "the module tree watch stopped");
                    return;
                }
            };
            if seen.is_some_and(|s| changes_tree(&s, &watched)) && sender.send(()).is_err() {
                return;
            }
        }
    }))
}

/// Whether an event may have changed the tree: anything inside a root, lost events, or a change
/// beside a root that is the root's own entry or makes it lead elsewhere (a volume's `..data`
/// symlink swapped); other entries of a root's parent (the config file, a config volume's own
/// swap) are not the tree's.
fn changes_tree(seen: &Seen, roots: &[(PathBuf, Option<PathBuf>)]) -> bool {
    match seen {
        Seen::InTree | Seen::Overflow => true,
        Seen::Beside(name) => (roots.iter()).any(|(root, resolved)| {
            root.file_name() == Some(name.as_os_str())
                || std::fs::canonicalize(root).ok() != *resolved
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn many_quick_writes_are_announced_as_one_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("modules");
        std::fs::create_dir(&root).expect("mkdir");
        let mut watch =
            TreeWatch::start(vec![root.clone()], Duration::from_millis(200)).expect("watch");
        for i in 0..50 {
            std::fs::write(root.join("values.yaml"), format!("a: {i}\n")).expect("write");
        }
        let first = tokio::time::timeout(Duration::from_secs(10), watch.changed()).await;
        assert_eq!(first.ok().flatten(), Some(()));
        let second = tokio::time::timeout(Duration::from_millis(600), watch.changed()).await;
        assert!(second.is_err(), "the writes were announced more than once");
    }

    #[tokio::test]
    async fn a_swapped_data_link_is_a_change_and_other_files_beside_the_tree_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let volume = dir.path();
        std::fs::create_dir_all(volume.join("..v1/modules")).expect("mkdir");
        std::fs::create_dir_all(volume.join("..v2/modules/001-a")).expect("mkdir");
        std::os::unix::fs::symlink("..v1", volume.join("..data")).expect("link");
        std::os::unix::fs::symlink("..data/modules", volume.join("modules")).expect("link");
        let root = volume.join("modules");
        let mut watch =
            TreeWatch::start(vec![root.clone()], Duration::from_millis(100)).expect("watch");
        std::fs::write(volume.join("config.yaml"), "a: 1\n").expect("write");
        let unrelated = tokio::time::timeout(Duration::from_millis(500), watch.changed()).await;
        assert!(unrelated.is_err(), "a file beside the tree is not a change");
        // the way Kubernetes updates a volume: a new link renamed over ..data
        std::os::unix::fs::symlink("..v2", volume.join("..data_tmp")).expect("link");
        std::fs::rename(volume.join("..data_tmp"), volume.join("..data")).expect("swap");
        let swapped = tokio::time::timeout(Duration::from_secs(10), watch.changed()).await;
        assert_eq!(swapped.ok().flatten(), Some(()));
        // the new directory is watched now
        std::fs::write(root.join("001-a/values.yaml"), "a: 1\n").expect("write");
        let edited = tokio::time::timeout(Duration::from_secs(10), watch.changed()).await;
        assert_eq!(edited.ok().flatten(), Some(()));
    }

    #[tokio::test]
    async fn hooks_run_and_files_read_are_not_changes_but_a_file_in_a_new_directory_is() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("modules");
        std::fs::create_dir_all(root.join("001-a/hooks")).expect("mkdir");
        let hook = root.join("001-a/hooks/hook.sh");
        std::fs::write(&hook, "#!/bin/sh\ncat \"$0\" > /dev/null\n").expect("write");
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut watch =
            TreeWatch::start(vec![root.clone()], Duration::from_millis(100)).expect("watch");
        for _ in 0..5 {
            let status = std::process::Command::new(&hook).status().expect("run");
            assert!(status.success());
            std::fs::read_dir(root.join("001-a"))
                .expect("list")
                .for_each(drop);
        }
        let read = tokio::time::timeout(Duration::from_millis(600), watch.changed()).await;
        assert!(
            read.is_err(),
            "running a hook and reading files is not a change"
        );
        // a directory made after the start is watched too
        std::fs::create_dir_all(root.join("002-b/templates")).expect("mkdir");
        let made = tokio::time::timeout(Duration::from_secs(10), watch.changed()).await;
        assert_eq!(made.ok().flatten(), Some(()));
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::fs::write(root.join("002-b/templates/cm.yaml"), "a: 1\n").expect("write");
        let written = tokio::time::timeout(Duration::from_secs(10), watch.changed()).await;
        assert_eq!(written.ok().flatten(), Some(()));
    }

    #[tokio::test]
    async fn a_relative_root_is_watched_from_the_working_directory() {
        let dir = tempfile::tempdir_in(".").expect("tempdir in the working directory");
        let name = dir.path().file_name().expect("name");
        let root = std::path::Path::new(name).join("modules");
        std::fs::create_dir_all(root.join("001-a")).expect("mkdir");
        let mut watch =
            TreeWatch::start(vec![root.clone()], Duration::from_millis(100)).expect("watch");
        std::fs::write(root.join("001-a/values.yaml"), "a: 1\n").expect("write");
        let changed = tokio::time::timeout(Duration::from_secs(10), watch.changed()).await;
        assert_eq!(changed.ok().flatten(), Some(()));
    }

    #[tokio::test]
    async fn a_new_file_deep_in_the_tree_is_a_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("modules");
        std::fs::create_dir_all(root.join("001-a/hooks")).expect("mkdir");
        let mut watch =
            TreeWatch::start(vec![root.clone()], Duration::from_millis(100)).expect("watch");
        std::fs::write(root.join("001-a/hooks/new.sh"), "#!/bin/sh\n").expect("write");
        let changed = tokio::time::timeout(Duration::from_secs(10), watch.changed()).await;
        assert_eq!(changed.ok().flatten(), Some(()));
    }
}
