//! Crash-safe persistence: a snapshot file plus an fsync'ed write-ahead log of events, private
//! to the user (dir 0700, files 0600: they hold Helm release Secrets).

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::Event;
use crate::resources::ResKey;

const SNAPSHOT: &str = "snapshot.json";
const WAL: &str = "wal.jsonl";
/// The log is folded into a new snapshot once it grows past this size.
const WAL_COMPACT_BYTES: u64 = 64 * 1024 * 1024;

/// Failures reading or writing the data directory.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// Creating, reading or writing a file failed.
    #[error("cannot {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The snapshot is not valid JSON of the expected shape.
    #[error("cannot parse snapshot {path}")]
    Snapshot {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl PersistError {
    /// Static label for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Io { .. } => "io",
            Self::Snapshot { .. } => "corrupt",
        }
    }
}

fn io<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> PersistError + 'a {
    move |source| PersistError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// One stored object in a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredObject {
    /// Its resource.
    #[serde(flatten)]
    pub key: ResKey,
    /// The object.
    pub object: Value,
}

/// The whole state at one resourceVersion.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Last resourceVersion handed out.
    pub rv: u64,
    /// Versions at or below this cannot be resumed from.
    pub compacted_rv: u64,
    /// Every object.
    pub objects: Vec<StoredObject>,
    /// Recent events, oldest first, for watch resumes across restarts.
    pub history: Vec<Event>,
}

/// The state found in a data directory: the snapshot with the log replayed on top.
pub struct Loaded {
    /// The snapshot as read.
    pub snapshot: Snapshot,
    /// Log events newer than the snapshot, in order.
    pub events: Vec<Event>,
}

/// Reads the snapshot and the log; a torn last log line (crash mid-write) is ignored.
pub fn load(dir: &Path) -> Result<Loaded, PersistError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io("create", dir))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(io("restrict the permissions of", dir))?;
    let snap_path = dir.join(SNAPSHOT);
    let snapshot = match fs::read(&snap_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| PersistError::Snapshot {
            path: snap_path.clone(),
            source,
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Snapshot::default(),
        Err(e) => return Err(io("read", &snap_path)(e)),
    };
    let wal_path = dir.join(WAL);
    let mut events = Vec::new();
    match File::open(&wal_path) {
        Ok(file) => {
            let mut lines = BufReader::new(file).lines();
            for line in lines.by_ref() {
                let Ok(line) = line else { break };
                let Ok(event) = serde_json::from_str::<Event>(&line) else {
                    break;
                };
                if event.rv > snapshot.rv {
                    events.push(event);
                }
            }
            // Only the last line can be torn by a crash; anything after a bad line is damage.
            let dropped = lines.count();
            if dropped > 0 {
                tracing::warn!(path = %wal_path.display(), dropped, "ignoring log lines after a corrupt one");
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("read", &wal_path)(e)),
    }
    Ok(Loaded { snapshot, events })
}

/// Writes a new snapshot atomically, then starts an empty log and returns it.
pub fn checkpoint(dir: &Path, snapshot: &Snapshot, fsync: bool) -> Result<Wal, PersistError> {
    let snap_path = dir.join(SNAPSHOT);
    let tmp = dir.join("snapshot.json.tmp");
    let bytes = serde_json::to_vec(snapshot).map_err(|source| PersistError::Snapshot {
        path: snap_path.clone(),
        source,
    })?;
    let mut file = create_private(&tmp)?;
    file.write_all(&bytes).map_err(io("write", &tmp))?;
    file.sync_all().map_err(io("sync", &tmp))?;
    fs::rename(&tmp, &snap_path).map_err(io("rename", &snap_path))?;
    sync_dir(dir)?;
    let wal_path = dir.join(WAL);
    let file = create_private(&wal_path)?;
    file.sync_all().map_err(io("sync", &wal_path))?;
    sync_dir(dir)?;
    Ok(Wal {
        file,
        path: wal_path,
        dir: dir.to_path_buf(),
        bytes: 0,
        fsync,
    })
}

/// Creates or truncates `path` with mode 0600 (also when it existed with a wider mode).
fn create_private(path: &Path) -> Result<File, PersistError> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io("create", path))?;
    file.set_permissions(fs::Permissions::from_mode(0o600))
        .map_err(io("restrict the permissions of", path))?;
    Ok(file)
}

fn sync_dir(dir: &Path) -> Result<(), PersistError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("sync", dir))
}

/// The append-only event log.
#[derive(Debug)]
pub struct Wal {
    file: File,
    path: PathBuf,
    dir: PathBuf,
    bytes: u64,
    fsync: bool,
}

impl Wal {
    /// Appends one event and makes it durable before returning.
    pub fn append(&mut self, event: &Event) -> Result<(), PersistError> {
        let mut line = serde_json::to_vec(event).map_err(|source| PersistError::Snapshot {
            path: self.path.clone(),
            source,
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(io("append to", &self.path))?;
        if self.fsync {
            self.file.sync_data().map_err(io("sync", &self.path))?;
        }
        self.bytes += line.len() as u64;
        Ok(())
    }

    /// Whether the log is big enough to fold into a snapshot.
    pub fn wants_checkpoint(&self) -> bool {
        self.bytes > WAL_COMPACT_BYTES
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether appends are fsync'ed.
    pub fn fsync(&self) -> bool {
        self.fsync
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventType;
    use serde_json::json;
    use std::fs::OpenOptions;
    use std::io::Write;

    #[test]
    fn log_replays_on_top_of_snapshot_and_skips_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let snap = Snapshot {
            rv: 5,
            ..Default::default()
        };
        let mut wal = checkpoint(dir.path(), &snap, true).unwrap();
        for rv in [6, 7] {
            let ev = Event {
                rv,
                kind: EventType::Added,
                key: ResKey::new("", "configmaps"),
                object: json!({"metadata": {"name": format!("c{rv}")}}),
                previous: None,
            };
            wal.append(&ev).unwrap();
        }
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(WAL))
            .unwrap();
        f.write_all(b"{\"rv\": 8, \"ty").unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(loaded.snapshot.rv, 5);
        assert_eq!(
            loaded.events.iter().map(|e| e.rv).collect::<Vec<_>>(),
            [6, 7]
        );
    }

    #[test]
    fn the_data_dir_is_0700_and_its_files_0600() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("data");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(dir.join(WAL), "").unwrap();
        fs::set_permissions(dir.join(WAL), fs::Permissions::from_mode(0o644)).unwrap();
        load(&dir).unwrap();
        checkpoint(&dir, &Snapshot::default(), false).unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(SNAPSHOT)), 0o600);
        assert_eq!(mode(&dir.join(WAL)), 0o600);
        let fresh = base.path().join("new/data");
        load(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
