//! A config held in memory (no cluster and no `--config-file`; `module render`) as the runtime's
//! `ConfigBackend` port; tests also edit it and make saves fail.

use addon_core::config::Config;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::runtime::edges::{
    ConfigBackend, ConfigBackendError, ConfigKeyChange, ConfigUpdate, ParsedConfig, SavedConfig,
};

/// A config that lives only in memory (no `--config-file`): patches from hooks are kept for the
/// life of the process. Tests use it as the fake store: edits by others, failing saves.
#[derive(Default)]
pub struct MemoryConfig {
    state: std::sync::Mutex<MemoryState>,
}

#[derive(Default)]
struct MemoryState {
    config: Config,
    version: u64,
    failing_saves: usize,
    updates: Option<mpsc::UnboundedSender<ConfigUpdate>>,
}

impl MemoryConfig {
    pub fn new(config: Config) -> Self {
        Self {
            state: std::sync::Mutex::new(MemoryState {
                config,
                ..MemoryState::default()
            }),
        }
    }

    /// The config as last saved.
    pub fn current(&self) -> Config {
        lock(&self.state).config.clone()
    }

    /// Simulates an edit by someone else (tests).
    pub fn edit(&self, update: ParsedConfig) {
        let mut st = lock(&self.state);
        if let Ok(config) = &update {
            st.config = config.clone();
        }
        st.version += 1;
        let version = st.version;
        if let Some(tx) = st.updates.as_ref() {
            let _ = tx.send(ConfigUpdate::Edited {
                version,
                config: update,
            });
        }
    }

    /// The next `count` saves fail, as a store answering errors would (tests).
    pub fn fail_next_saves(&self, count: usize) {
        lock(&self.state).failing_saves = count;
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fake store's answer to a save it was told to fail.
#[derive(Debug, thiserror::Error)]
#[error("the config store answered an error (simulated)")]
struct SimulatedSaveError;

impl MemoryConfig {
    fn apply_now(&self, change: &ConfigKeyChange) -> Result<SavedConfig, ConfigBackendError> {
        let mut st = lock(&self.state);
        if st.failing_saves > 0 {
            st.failing_saves -= 1;
            return Err(ConfigBackendError::Save(Box::new(SimulatedSaveError)));
        }
        let mut data = st.config.to_data().map_err(ConfigBackendError::Render)?;
        change
            .apply_to_data(&mut data)
            .map_err(ConfigBackendError::Render)?;
        let config = Config::from_data(&data).map_err(ConfigBackendError::Parse)?;
        st.config = config.clone();
        st.version += 1;
        Ok(SavedConfig {
            version: st.version,
            stored: Ok(config),
        })
    }
}

impl ConfigBackend for MemoryConfig {
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
        let config = self.current();
        Box::pin(async move { Ok(config) })
    }

    fn apply<'a>(
        &'a self,
        change: &'a ConfigKeyChange,
    ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>> {
        let saved = self.apply_now(change);
        Box::pin(async move { saved })
    }

    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.state).updates = Some(tx);
        rx
    }
}
