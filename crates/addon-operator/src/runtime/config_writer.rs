//! The one writer of the config store: a hook's config patch becomes a change of the top-level keys
//! it touched, saved first and applied to memory after, in one order with the edits of others, so
//! that memory ends equal to what the store holds.

use addon_core::config::Config;
use addon_core::config_change::ConfigKeyChange;
use addon_core::values::patch::{HookRef, ValuesPatch};
use addon_core::values::store::{ConfigPatchOutcome, ValuesError, ValuesStore};
use tokio::sync::Mutex;

use super::Shared;
use super::edges::{ConfigBackendError, ConfigUpdate, SavedConfig};
use super::error::HookError;
use crate::runtime::metrics::ConfigReloadCause;
use addon_core::error::error_chain;

/// Serialises every change of the in-memory config: hooks' saves and edits by others. It holds
/// the version (in the config backend's order) of the store state memory reflects; an edit the
/// backend reported before a save that already included it is skipped.
#[derive(Debug, Default)]
pub struct ConfigWriter {
    version: Mutex<u64>,
}

impl ConfigWriter {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Applies a hook's config patch: computed against memory, saved to the store as a change of the
/// keys it touched, and only then applied to memory. On a save error nothing changed, so a retry
/// of the hook applies its patch once. `then` runs under the state lock right after the config
/// is in memory (the values patch), still inside the writer's turn.
pub async fn save_config_patch<T>(
    shared: &Shared,
    hook: &HookRef,
    patch: &ValuesPatch,
    then: impl FnOnce(&mut ValuesStore, &ConfigPatchOutcome) -> Result<T, HookError>,
) -> Result<T, HookError> {
    if patch.is_empty() {
        return then(&mut shared.lock().store, &ConfigPatchOutcome::default());
    }
    let mut version = shared.config_writer.version.lock().await;
    let (outcome, old, new) = {
        let mut st = shared.lock();
        tentative(&mut st.store, hook, patch)?
    };
    let change = ConfigKeyChange::between(&old, &new);
    let saved =
        if change.is_empty() {
            None
        } else {
            let saved = shared.edges.config.apply(&change).await.map_err(|source| {
                HookError::SaveConfig {
                    hook: hook.clone(),
                    source: Box::new(source),
                }
            })?;
            *version = (*version).max(saved.version);
            Some(saved)
        };
    let result = {
        let mut st = shared.lock();
        if saved.is_some() {
            st.store.set_config(new.clone());
        }
        then(&mut st.store, &outcome)
    };
    if let Some(SavedConfig { stored, .. }) = saved {
        adopt_stored(shared, &new, stored).await;
    }
    result
}

/// Applies `patch` to `store` to learn the new config and its effect, then puts the old config
/// back: memory changes only after the save.
fn tentative(
    store: &mut ValuesStore,
    hook: &HookRef,
    patch: &ValuesPatch,
) -> Result<(ConfigPatchOutcome, Config, Config), ValuesError> {
    let old = store.config().clone();
    let outcome = store.apply_config_patch(hook, patch)?;
    let new = store.config().clone();
    store.set_config(old.clone());
    Ok((outcome, old, new))
}

/// After our save: when the store holds more than our change (edits by others the watch has not
/// delivered yet, made before our write), those edits are applied as an edit by others.
async fn adopt_stored(shared: &Shared, ours: &Config, stored: Result<Config, ConfigBackendError>) {
    match stored {
        Ok(stored) if &stored != ours => {
            shared.metrics.config_reload(ConfigReloadCause::External);
            super::config_edit::apply_config(shared, stored).await;
        }
        Ok(_) => {}
        // The edit that made them invalid was logged when it arrived; not again at every save.
        Err(e) => tracing::debug!(
            error = %error_chain(&e),
            "the config store holds keys that are invalid; they stay as they are and unused"
        ),
    }
}

/// Handles one report of the config store's watch, in the writer's order.
pub async fn on_update(shared: &Shared, update: ConfigUpdate) {
    let (version, config) = match update {
        ConfigUpdate::OwnWrite => {
            shared.metrics.config_reload(ConfigReloadCause::OwnWrite);
            tracing::debug!("the config store echoed our own write; nothing to reload");
            return;
        }
        ConfigUpdate::Edited { version, config } => (version, config),
    };
    let mut known = shared.config_writer.version.lock().await;
    if version <= *known {
        tracing::debug!(
            version,
            known = *known,
            "config edit already included in a later save"
        );
        return;
    }
    *known = version;
    match config {
        Err(e) => {
            shared.metrics.config_values_error();
            tracing::error!(
                error = %error_chain(&e),
                "config edit rejected; the previous config stays in use"
            );
        }
        Ok(config) => {
            if shared.lock().store.config() != &config {
                shared.metrics.config_reload(ConfigReloadCause::External);
            }
            super::config_edit::apply_config(shared, config).await;
        }
    }
}
