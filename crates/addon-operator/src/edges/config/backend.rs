//! The watched config file as the runtime's `ConfigBackend` port.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use addon_core::config::Config;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::edges::config::{ConfigEvent, FileConfigStore, splice};

use crate::runtime::edges::{
    ConfigBackend, ConfigBackendError, ConfigKeyChange, ConfigUpdate, ParsedConfig, SavedConfig,
};

/// The local config file (`--config-file`), parsed with the file format of `addon_core::config`.
pub struct FileConfig {
    store: Arc<FileConfigStore>,
    path: PathBuf,
}

impl FileConfig {
    pub fn new(store: FileConfigStore) -> Self {
        let path = store.path().to_path_buf();
        Self {
            store: Arc::new(store),
            path,
        }
    }

    fn parse(path: &Path, text: &str) -> ParsedConfig {
        Config::from_file(&path.display().to_string(), text).map_err(ConfigBackendError::Parse)
    }
}

impl ConfigBackend for FileConfig {
    /// A missing file is an empty config (like a missing ConfigMap); the first config patch
    /// creates it.
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
        Box::pin(async move {
            match self.store.load().await {
                Ok(Some(text)) => Self::parse(&self.path, &text),
                Ok(None) => {
                    tracing::info!(path = %self.path.display(), "config file does not exist yet: empty config");
                    Ok(Config::empty())
                }
                Err(e) => Err(ConfigBackendError::Load(Box::new(e))),
            }
        })
    }

    fn apply<'a>(
        &'a self,
        change: &'a ConfigKeyChange,
    ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>> {
        Box::pin(async move {
            let edit = |text: &str| {
                splice::patch_text(text, change)
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            };
            let (version, text) = self
                .store
                .apply(edit)
                .await
                .map_err(|e| ConfigBackendError::Save(Box::new(e)))?;
            Ok(SavedConfig {
                version,
                stored: Self::parse(&self.path, &text),
            })
        })
    }

    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut events = self.store.subscribe();
        let path = self.path.clone();
        tokio::spawn(async move {
            loop {
                // Every report carries the whole text: after a lag the next one is newer.
                let event = match events.recv().await {
                    Ok(event) => event,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                };
                let update = match event {
                    ConfigEvent::OwnWrite => ConfigUpdate::OwnWrite,
                    ConfigEvent::Changed { version, text } => ConfigUpdate::Edited {
                        version,
                        config: text
                            .map_err(|e| ConfigBackendError::Load(Box::new(e)))
                            .and_then(|text| Self::parse(&path, &text)),
                    },
                };
                if tx.send(update).is_err() {
                    break;
                }
            }
        });
        rx
    }
}
