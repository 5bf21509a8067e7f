//! A recursive inotify watch of the tree's directories that sees writes, creations, deletions,
//! renames and mode changes, but never reads: hooks run from inside the tree, and every exec and
//! script read would otherwise be an event (the `notify` crate always asks for `IN_OPEN`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use futures::StreamExt as _;
use inotify::{EventMask, EventStream, Inotify, WatchDescriptor, WatchMask, Watches};

/// What a change of the tree is made of.
fn change_mask() -> WatchMask {
    WatchMask::ATTRIB
        | WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::CLOSE_WRITE
        | WatchMask::MODIFY
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
}

/// The most directories watched: a tree deeper than this is watched in part (a warning says so)
/// rather than exhausting the user's inotify watches.
const MAX_DIRS: usize = 20_000;

/// An event of a watched directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Something inside a recursively watched directory changed.
    InTree,
    /// An entry of a non-recursively watched directory (a root's parent) changed: its name.
    Beside(OsString),
    /// Events were lost (the kernel's queue overflowed): anything may have changed.
    Overflow,
}

/// The watch: directories by descriptor, recursive or not.
pub struct DirWatch {
    events: EventStream<[u8; 8192]>,
    watches: Watches,
    dirs: HashMap<WatchDescriptor, (PathBuf, bool)>,
}

impl DirWatch {
    /// Must be called inside a tokio runtime.
    pub fn new() -> std::io::Result<Self> {
        let events = Inotify::init()?.into_event_stream([0; 8192])?;
        Ok(Self {
            watches: events.watches(),
            events,
            dirs: HashMap::new(),
        })
    }

    /// Watches `dir` and, when `recursive`, every directory below it (hidden ones too: a
    /// volume's `..data`).
    pub fn add(&mut self, dir: &Path, recursive: bool) -> std::io::Result<()> {
        let wd = self.watches.add(dir, change_mask())?;
        self.dirs.insert(wd, (dir.to_path_buf(), recursive));
        if recursive {
            self.add_below(dir);
        }
        Ok(())
    }

    fn add_below(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir {
                continue;
            }
            if self.dirs.len() >= MAX_DIRS {
                tracing::warn!(dir = %dir.display(), "the module tree has more than {MAX_DIRS} directories: the rest is not watched");
                return;
            }
            // a directory gone meanwhile is no error: its deletion is an event of its parent
            let _ = self.add(&entry.path(), true);
        }
    }

    /// Waits for the next event (`None`: one that says nothing about the tree); a new directory
    /// in the tree is watched from then on. An error ends the watch.
    pub async fn next(&mut self) -> std::io::Result<Option<Seen>> {
        let event = match self.events.next().await {
            Some(event) => event?,
            None => return Err(std::io::Error::other("the inotify stream ended")),
        };
        Ok(self.seen(event.wd, event.mask, event.name))
    }

    fn seen(
        &mut self,
        wd: WatchDescriptor,
        mask: EventMask,
        name: Option<OsString>,
    ) -> Option<Seen> {
        if mask.contains(EventMask::Q_OVERFLOW) {
            return Some(Seen::Overflow);
        }
        if mask.contains(EventMask::IGNORED) {
            self.dirs.remove(&wd);
            return None;
        }
        let (dir, recursive) = self.dirs.get(&wd).cloned()?;
        if !recursive {
            return Some(Seen::Beside(name.unwrap_or_default()));
        }
        let new_dir = mask.contains(EventMask::ISDIR)
            && (mask.contains(EventMask::CREATE) || mask.contains(EventMask::MOVED_TO));
        if let (true, Some(name)) = (new_dir, name.as_deref()) {
            let _ = self.add(&dir.join(name), true);
        }
        Some(Seen::InTree)
    }
}
