//! The local config store of `--config-file PATH`: load the file's text, save a new text atomically,
//! and watch the file, announcing only real content changes (not our own writes). Parsing the YAML
//! belongs to the core; this edge is text in, text out.

use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

/// Quiet time after the last file-system event before the file is read again.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);
const EVENT_BUFFER: usize = 16;
/// A re-read happens at the latest this many debounce periods after the first event.
const MAX_DEBOUNCES: u32 = 10;

/// A change of the stored config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigEvent {
    /// The config text is now this (and differs from the last text seen or saved).
    Changed(String),
}

/// Where the operator's config lives: a local file or (later) the `addon-operator` ConfigMap.
pub trait ConfigStore: Send + Sync {
    type Error: std::error::Error + Send + Sync + 'static;

    /// The current config text.
    fn load(&self) -> impl Future<Output = Result<String, Self::Error>> + Send;

    /// Replaces the config text; this does not produce a [`ConfigEvent`].
    fn save(&self, text: String) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Changes made by others from now on.
    fn subscribe(&self) -> broadcast::Receiver<ConfigEvent>;
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
    #[error("cannot write the config file '{path}'", path = path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ConfigFileError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Watch { .. } => "config_watch",
            Self::Read { .. } => "config_read",
            Self::Write { .. } => "config_write",
        }
    }
}

/// The text last read from or written to the file; a change is a text different from it.
type LastSeen = Arc<Mutex<Option<String>>>;

fn remember(last_seen: &LastSeen, text: Option<String>) -> Option<String> {
    let mut guard = last_seen.lock().unwrap_or_else(PoisonError::into_inner);
    std::mem::replace(&mut *guard, text)
}

/// A [`ConfigStore`] on a local file, watched through its directory so that editors replacing the
/// file by a rename are seen too.
pub struct FileConfigStore {
    path: PathBuf,
    last_seen: LastSeen,
    events: broadcast::Sender<ConfigEvent>,
    _watcher: RecommendedWatcher,
    watch_loop: JoinHandle<()>,
}

impl Drop for FileConfigStore {
    fn drop(&mut self) {
        self.watch_loop.abort();
    }
}

impl FileConfigStore {
    /// Starts watching `path` (its directory must exist; the file may not yet). Must be called
    /// inside a tokio runtime.
    pub async fn open(path: &Path, debounce: Duration) -> Result<Self, ConfigFileError> {
        let path = path.to_path_buf();
        let initial = match tokio::fs::read_to_string(&path).await {
            Ok(text) => Some(text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(ConfigFileError::Read { path, source }),
        };
        let last_seen: LastSeen = Arc::new(Mutex::new(initial));
        let (signal, signals) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_event| {
            let _ = signal.send(());
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
            last_seen.clone(),
            events.clone(),
            debounce,
        ));
        Ok(Self {
            path,
            last_seen,
            events,
            _watcher: watcher,
            watch_loop,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl ConfigStore for FileConfigStore {
    type Error = ConfigFileError;

    async fn load(&self) -> Result<String, ConfigFileError> {
        tokio::fs::read_to_string(&self.path)
            .await
            .map_err(|source| ConfigFileError::Read {
                path: self.path.clone(),
                source,
            })
    }

    async fn save(&self, text: String) -> Result<(), ConfigFileError> {
        let previous = remember(&self.last_seen, Some(text.clone()));
        let path = self.path.clone();
        let written =
            tokio::task::spawn_blocking(move || write_atomically(&path, &text, |_| Ok(())))
                .await
                .unwrap_or_else(|join| Err(std::io::Error::other(join)));
        written.map_err(|source| {
            remember(&self.last_seen, previous);
            ConfigFileError::Write {
                path: self.path.clone(),
                source,
            }
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<ConfigEvent> {
        self.events.subscribe()
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

/// Re-reads the file once file-system events have been quiet for `debounce`, and announces the
/// text when it differs from the last one seen or saved.
async fn watch_loop(
    mut signals: mpsc::UnboundedReceiver<()>,
    path: PathBuf,
    last_seen: LastSeen,
    events: broadcast::Sender<ConfigEvent>,
    debounce: Duration,
) {
    while signals.recv().await.is_some() {
        // Wait for quiet, but not forever: other files in the directory may change constantly.
        let give_up = tokio::time::Instant::now() + debounce * MAX_DEBOUNCES;
        loop {
            let quiet_at = (tokio::time::Instant::now() + debounce).min(give_up);
            match tokio::time::timeout_at(quiet_at, signals.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) => return,
                Err(_quiet) => break,
            }
        }
        match tokio::fs::read_to_string(&path).await {
            Ok(text) => announce_if_changed(&last_seen, &events, text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                tracing::debug!(path = %path.display(), "config file is absent, keeping the last config");
            }
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot read the changed config file");
            }
        }
    }
}

fn announce_if_changed(
    last_seen: &LastSeen,
    events: &broadcast::Sender<ConfigEvent>,
    text: String,
) {
    let mut guard = last_seen.lock().unwrap_or_else(PoisonError::into_inner);
    if guard.as_deref() == Some(text.as_str()) {
        return;
    }
    *guard = Some(text.clone());
    drop(guard);
    let _ = events.send(ConfigEvent::Changed(text));
}

#[cfg(test)]
mod tests;
