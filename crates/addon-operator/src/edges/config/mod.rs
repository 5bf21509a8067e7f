//! The local config store of `--config-file PATH`: load the file's text, rewrite it atomically with
//! an edit of its current text, and watch the file, announcing content changes by others (our own
//! writes are echoes). Parsing the YAML belongs to the core; this edge is text in, text out.

pub mod backend;
pub mod memory;
pub mod splice;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

/// Quiet time after the last file-system event before the file is read again.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);
const EVENT_BUFFER: usize = 16;
/// A re-read happens at the latest this many debounce periods after the first event.
const MAX_DEBOUNCES: u32 = 10;

/// A change of the stored config.
#[derive(Debug, Clone)]
pub enum ConfigEvent {
    /// Someone else changed the file: its text now (or why it cannot be used). `version` grows
    /// with every state the store knows, our own writes included.
    Changed {
        version: u64,
        text: Result<String, Arc<ConfigFileError>>,
    },
    /// The file system reported our own write; its content is exactly what we wrote.
    OwnWrite,
}

/// A failed operation on the config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("cannot watch the config file '{path}'", path = path.display())]
    Watch {
        path: PathBuf,
        #[source]
        source: notify::Error,
    },
    #[error("cannot read the config file '{path}'", path = path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the config file '{path}' is not a regular file (a {kind}); give the path of a plain file", path = path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("the config file '{path}' is not UTF-8 text", path = path.display())]
    NotUtf8 { path: PathBuf },
    #[error("cannot change the config file '{path}'", path = path.display())]
    Edit {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot write the config file '{path}'", path = path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the config file '{path}' kept changing while it was being saved", path = path.display())]
    Conflicts { path: PathBuf },
}

impl ConfigFileError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Watch { .. } => "config_watch",
            Self::Read { .. } | Self::NotRegular { .. } | Self::NotUtf8 { .. } => "config_read",
            Self::Edit { .. } => "config_edit",
            Self::Write { .. } | Self::Conflicts { .. } => "config_write",
        }
    }
}

/// What the store knows of the file; one lock orders saves and the watch's re-reads.
#[derive(Debug, Default)]
struct Known {
    version: u64,
    /// The bytes last read or written; `None` while the file is absent.
    bytes: Option<Vec<u8>>,
    /// We wrote `bytes` and the watch has not seen them yet.
    own_pending: bool,
    /// The last read problem logged (each is logged once).
    last_problem: Option<String>,
    /// How often the watch read the file (tests check that reading does not trigger reading).
    rereads: u64,
}

type SharedKnown = Arc<tokio::sync::Mutex<Known>>;

/// The local config file, watched through its directory so that editors replacing the file by a
/// rename are seen too. Saves rewrite the file atomically; the watch tells our own writes (by the
/// exact bytes written) from edits by others.
pub struct FileConfigStore {
    path: PathBuf,
    known: SharedKnown,
    events: broadcast::Sender<ConfigEvent>,
    _watcher: RecommendedWatcher,
    watch_loop: JoinHandle<()>,
}

impl Drop for FileConfigStore {
    fn drop(&mut self) {
        self.watch_loop.abort();
    }
}

/// How many times a save re-reads the file when it changed between the read and the rename.
const SAVE_ATTEMPTS: usize = 5;

impl FileConfigStore {
    /// Starts watching `path` (its directory must exist; the file may not yet, but must be a
    /// regular file when it does). Must be called inside a tokio runtime.
    pub async fn open(path: &Path, debounce: Duration) -> Result<Self, ConfigFileError> {
        let path = path.to_path_buf();
        let initial = read_regular(&path).await?;
        let known: SharedKnown = Arc::new(tokio::sync::Mutex::new(Known {
            bytes: initial,
            ..Known::default()
        }));
        let (signal, signals) = mpsc::unbounded_channel();
        let name = path.file_name().map(|n| n.to_os_string());
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            if let Ok(event) = event
                && concerns_file(&event, name.as_deref())
            {
                let _ = signal.send(());
            }
        })
        .map_err(|source| ConfigFileError::Watch {
            path: path.clone(),
            source,
        })?;
        watcher
            .watch(&parent_dir(&path), RecursiveMode::NonRecursive)
            .map_err(|source| ConfigFileError::Watch {
                path: path.clone(),
                source,
            })?;
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let watch_loop = tokio::spawn(watch_loop(
            signals,
            path.clone(),
            known.clone(),
            events.clone(),
            debounce,
        ));
        Ok(Self {
            path,
            known,
            events,
            _watcher: watcher,
            watch_loop,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current config text; `None` when the file does not exist.
    pub async fn load(&self) -> Result<Option<String>, ConfigFileError> {
        let mut known = self.known.lock().await;
        let bytes = read_regular(&self.path).await?;
        known.bytes = bytes.clone();
        bytes.map(|b| self.text(b)).transpose()
    }

    /// Rewrites the file with `edit` applied to its current text (empty when absent) and returns
    /// the version and text written. When the file changes between the read and the rename, the
    /// edit is applied again to the new text. The watch reports this write as
    /// [`ConfigEvent::OwnWrite`] at most.
    pub async fn apply<E>(&self, edit: E) -> Result<(u64, String), ConfigFileError>
    where
        E: Fn(&str) -> Result<String, Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut known = self.known.lock().await;
        for _ in 0..SAVE_ATTEMPTS {
            let read = read_regular(&self.path).await?;
            let current = read.clone().map(|b| self.text(b)).transpose()?;
            let text = edit(current.as_deref().unwrap_or_default()).map_err(|source| {
                ConfigFileError::Edit {
                    path: self.path.clone(),
                    source,
                }
            })?;
            if self.write_unless_changed(read, &text).await? {
                known.bytes = Some(text.clone().into_bytes());
                known.own_pending = true;
                known.version += 1;
                return Ok((known.version, text));
            }
            tracing::debug!(path = %self.path.display(), "config file changed while saving; applying the change again");
        }
        Err(ConfigFileError::Conflicts {
            path: self.path.clone(),
        })
    }

    /// Writes `text` atomically unless the file no longer holds `read`; false when it changed.
    async fn write_unless_changed(
        &self,
        read: Option<Vec<u8>>,
        text: &str,
    ) -> Result<bool, ConfigFileError> {
        let path = self.path.clone();
        let text = text.to_string();
        let written = tokio::task::spawn_blocking(move || {
            write_atomically(&path, &text, |_| unchanged_since(&path, read.as_deref()))
        })
        .await
        .unwrap_or_else(|join| Err(std::io::Error::other(join)));
        match written {
            Ok(()) => Ok(true),
            Err(e) if e.get_ref().is_some_and(|e| e.is::<ChangedWhileSaving>()) => Ok(false),
            Err(source) => Err(ConfigFileError::Write {
                path: self.path.clone(),
                source,
            }),
        }
    }

    fn text(&self, bytes: Vec<u8>) -> Result<String, ConfigFileError> {
        String::from_utf8(bytes).map_err(|_| ConfigFileError::NotUtf8 {
            path: self.path.clone(),
        })
    }

    /// Edits by others from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ConfigEvent> {
        self.events.subscribe()
    }
}

/// The file was changed by someone else between our read and our rename.
#[derive(Debug, thiserror::Error)]
#[error("the file changed while it was being saved")]
struct ChangedWhileSaving;

fn unchanged_since(path: &Path, read: Option<&[u8]>) -> std::io::Result<()> {
    let now = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if now.as_deref() == read {
        Ok(())
    } else {
        Err(std::io::Error::other(ChangedWhileSaving))
    }
}

/// Whether a file-system event may have changed the config file: a creation, modification,
/// rename or removal (never a mere read) of the file itself, or of a `..data`-style entry through
/// which Kubernetes volume mounts swap files.
fn concerns_file(event: &Event, name: Option<&std::ffi::OsStr>) -> bool {
    if matches!(event.kind, EventKind::Access(_)) {
        return false;
    }
    event.paths.iter().any(|p| {
        let file = p.file_name();
        file.is_some() && file == name
            || file.is_some_and(|f| f.as_encoded_bytes().starts_with(b".."))
    })
}

/// The file's bytes, `None` when it does not exist. Anything but a regular file (a FIFO, a
/// device, a directory) is refused before it is opened: reading a FIFO would block forever.
async fn read_regular(path: &Path) -> Result<Option<Vec<u8>>, ConfigFileError> {
    let read_error = |source| ConfigFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = match tokio::fs::metadata(path).await {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read_error(e)),
    };
    if !metadata.is_file() {
        return Err(ConfigFileError::NotRegular {
            path: path.to_path_buf(),
            kind: file_kind(&metadata.file_type()),
        });
    }
    match tokio::fs::read(path).await {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(read_error(e)),
    }
}

/// The config file's text for the commands that read it once (`check`, `module render`,
/// `hook run`): like the store, anything but a regular file is refused instead of blocking.
pub fn read_text(path: &Path) -> Result<String, ConfigFileError> {
    let read_error = |source| ConfigFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_file() {
        return Err(ConfigFileError::NotRegular {
            path: path.to_path_buf(),
            kind: file_kind(&metadata.file_type()),
        });
    }
    let bytes = std::fs::read(path).map_err(read_error)?;
    String::from_utf8(bytes).map_err(|_| ConfigFileError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

fn file_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `text` to a temp file next to `path`, fsyncs it, keeps the old file's permissions and
/// renames it over `path`, then fsyncs the directory. `before_rename` is a seam for tests.
fn write_atomically(
    path: &Path,
    text: &str,
    before_rename: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = parent_dir(path);
    let mut file = tempfile::Builder::new()
        .prefix(".config-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    file.write_all(text.as_bytes())?;
    file.as_file().sync_all()?;
    if let Ok(metadata) = std::fs::metadata(path) {
        file.as_file().set_permissions(metadata.permissions())?;
    }
    before_rename(file.path())?;
    file.persist(path).map_err(|error| error.error)?;
    std::fs::File::open(&dir)?.sync_all()
}

/// Re-reads the file once file-system events about it have been quiet for `debounce`, and
/// reports what changed.
async fn watch_loop(
    mut signals: mpsc::UnboundedReceiver<()>,
    path: PathBuf,
    known: SharedKnown,
    events: broadcast::Sender<ConfigEvent>,
    debounce: Duration,
) {
    while signals.recv().await.is_some() {
        // Wait for quiet, but not forever: an editor may keep writing.
        let give_up = tokio::time::Instant::now() + debounce * MAX_DEBOUNCES;
        loop {
            let quiet_at = (tokio::time::Instant::now() + debounce).min(give_up);
            match tokio::time::timeout_at(quiet_at, signals.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) => return,
                Err(_quiet) => break,
            }
        }
        let mut known = known.lock().await;
        if let Some(event) = reread(&path, &mut known).await {
            let _ = events.send(event);
        }
    }
}

/// Reads the file and compares it with what is known: unchanged (nothing, or the echo of our
/// write), changed (its text or why it is unusable, once per distinct content or problem).
async fn reread(path: &Path, known: &mut Known) -> Option<ConfigEvent> {
    known.rereads += 1;
    let bytes = match read_regular(path).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            tracing::debug!(path = %path.display(), "config file is absent, keeping the last config");
            return None;
        }
        Err(error) => {
            let message = error.to_string();
            if known.last_problem.as_deref() != Some(message.as_str()) {
                tracing::warn!(path = %path.display(), %error, "cannot read the changed config file; the last config stays in use");
                known.last_problem = Some(message);
            }
            return None;
        }
    };
    known.last_problem = None;
    if known.bytes.as_deref() == Some(bytes.as_slice()) {
        return std::mem::take(&mut known.own_pending).then_some(ConfigEvent::OwnWrite);
    }
    known.bytes = Some(bytes.clone());
    known.own_pending = false;
    known.version += 1;
    let text = String::from_utf8(bytes).map_err(|_| {
        Arc::new(ConfigFileError::NotUtf8 {
            path: path.to_path_buf(),
        })
    });
    Some(ConfigEvent::Changed {
        version: known.version,
        text,
    })
}

#[cfg(test)]
mod tests;
