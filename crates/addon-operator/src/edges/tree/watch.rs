//! Watches the module tree's directories (`--reload-tree`) and announces a change once the writes
//! have settled: a quiet period after the last file-system event, so that an editor's save, a
//! `git checkout` or a Kubernetes volume's `..data` symlink swap counts as one change.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;

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
    source: notify::Error,
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
    watcher: RecommendedWatcher,
}

impl TreeWatch {
    /// Starts watching `roots` (the ones that exist). Must be called inside a tokio runtime.
    /// Relative roots are taken from the working directory now (the events name absolute
    /// paths); symlinks in them are kept, so a swapped link is still seen.
    pub fn start(roots: Vec<PathBuf>, settle: Duration) -> Result<Self, TreeWatchError> {
        let roots: Vec<PathBuf> = (roots.into_iter())
            .map(|root| std::path::absolute(&root).unwrap_or(root))
            .collect();
        let (sender, signals) = mpsc::unbounded_channel();
        let watcher = watcher(&roots, sender.clone())?;
        Ok(Self {
            resolved: resolve(&roots),
            roots,
            settle,
            signals,
            sender,
            watcher,
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
        match watcher(&self.roots, self.sender.clone()) {
            Ok(watcher) => {
                self.watcher = watcher;
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

fn watcher(
    roots: &[PathBuf],
    sender: mpsc::UnboundedSender<()>,
) -> Result<RecommendedWatcher, TreeWatchError> {
    let watch_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TreeWatchError { path, source }
    };
    let watched: Vec<(PathBuf, Option<PathBuf>)> =
        roots.iter().cloned().zip(resolve(roots)).collect();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        if let Ok(event) = event
            && changes_tree(&event, &watched)
        {
            let _ = sender.send(());
        }
    })
    .map_err(watch_error(Path::new("")))?;
    for root in roots.iter().filter(|r| r.exists()) {
        watcher
            .watch(root, RecursiveMode::Recursive)
            .map_err(watch_error(root))?;
    }
    // a relative root's parent is the working directory
    let parents = roots.iter().filter_map(|r| r.parent()).map(|p| match p {
        p if p.as_os_str().is_empty() => Path::new("."),
        p => p,
    });
    for parent in parents.filter(|p| p.is_dir()) {
        // only the parent itself: its other entries are not the tree's
        let _ = watcher.watch(parent, RecursiveMode::NonRecursive);
    }
    Ok(watcher)
}

/// Whether a file-system event may have changed the tree: anything but a mere read, of a path
/// in a root or of a root itself, or any change beside a root that makes it lead elsewhere (a
/// volume's `..data` symlink swapped); other entries of a root's parent (the config file, a
/// config volume's own swap) are not the tree's.
fn changes_tree(event: &Event, roots: &[(PathBuf, Option<PathBuf>)]) -> bool {
    if matches!(event.kind, EventKind::Access(_)) {
        return false;
    }
    let in_root = |path: &PathBuf| roots.iter().any(|(root, _)| path.starts_with(root));
    if event.paths.iter().any(in_root) {
        return true;
    }
    (roots.iter()).any(|(root, resolved)| std::fs::canonicalize(root).ok() != *resolved)
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
