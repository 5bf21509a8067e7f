//! The one writer of the config store: a hook's config patch becomes a change of the top-level keys
//! it touched, saved first and applied to memory after, in one order with the edits of others, so
//! that memory ends equal to what the store holds.

use std::collections::BTreeMap;

use addon_core::config::Config;
use addon_core::values::patch::{HookRef, ValuesPatch};
use addon_core::values::static_values::Section;
use addon_core::values::store::{ConfigPatchOutcome, ValuesError, ValuesStore};
use serde_json::Value;
use tokio::sync::Mutex;

use super::Shared;
use super::edges::{ConfigBackendError, ConfigUpdate, SavedConfig};
use super::error::HookError;
use crate::edges::metrics::ConfigReloadCause;
use addon_core::error::error_chain;

/// New values of some top-level config keys: the plain value a config file holds (a mapping for
/// `global` and module sections, `false` for a disabled module, a boolean for `<module>Enabled`),
/// or `None` for a key to remove. Every other key of the store stays as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigKeyChange {
    keys: BTreeMap<String, Option<Value>>,
}

impl ConfigKeyChange {
    /// The keys whose value differs between `old` and `new` (keys kept verbatim, like
    /// `<module>Maintenance`, are never part of a change).
    pub fn between(old: &Config, new: &Config) -> Self {
        let (old, new) = (key_values(old), key_values(new));
        let mut keys = BTreeMap::new();
        for key in old.keys().chain(new.keys()) {
            if old.get(key) != new.get(key) {
                keys.insert(key.clone(), new.get(key).cloned());
            }
        }
        Self { keys }
    }

    /// This change and also `key` set to `value` (`None`: removed).
    pub fn with(mut self, key: &str, value: Option<Value>) -> Self {
        self.keys.insert(key.to_string(), value);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Each changed key and its new value (`None`: remove it).
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&Value>)> {
        self.keys.iter().map(|(k, v)| (k.as_str(), v.as_ref()))
    }

    /// Applies the change to ConfigMap `data`, where every value is a YAML string.
    pub fn apply_to_data(
        &self,
        data: &mut BTreeMap<String, String>,
    ) -> Result<(), ConfigBackendError> {
        for (key, value) in self.iter() {
            match value {
                None => {
                    data.remove(key);
                }
                Some(value) => {
                    data.insert(key.to_string(), data_text(key, value)?);
                }
            }
        }
        Ok(())
    }
}

/// The YAML string of one ConfigMap key: `true`/`false` for booleans, YAML for mappings.
fn data_text(key: &str, value: &Value) -> Result<String, ConfigBackendError> {
    match value {
        Value::Bool(b) => Ok(b.to_string()),
        _ => addon_core::yaml::to_string(value).map_err(|source| {
            ConfigBackendError::Render(addon_core::config::ConfigError::RenderSection {
                key: key.to_string(),
                source,
            })
        }),
    }
}

/// Every interpreted key of `config` with its plain value.
fn key_values(config: &Config) -> BTreeMap<String, Value> {
    let mut keys = BTreeMap::new();
    if let Some(global) = &config.global {
        keys.insert("global".to_string(), global.clone());
    }
    for (module, cfg) in &config.modules {
        match &cfg.section {
            Some(Section::Values(v)) => {
                keys.insert(module.values_key(), v.clone());
            }
            Some(Section::Disabled) => {
                keys.insert(module.values_key(), Value::Bool(false));
            }
            None => {}
        }
        if let Some(flag) = cfg.enabled {
            keys.insert(module.enabled_key(), Value::Bool(flag));
        }
    }
    keys
}

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
        adopt_stored(shared, &new, stored);
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
fn adopt_stored(shared: &Shared, ours: &Config, stored: Result<Config, ConfigBackendError>) {
    match stored {
        Ok(stored) if &stored != ours => {
            shared.metrics.config_reload(ConfigReloadCause::External);
            super::intake::apply_config(shared, stored);
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
            super::intake::apply_config(shared, config);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(text: &str) -> Config {
        Config::from_file("c.yaml", text).unwrap()
    }

    #[test]
    fn a_change_names_only_the_keys_that_differ() {
        let old = file("global: {a: 1}\nweb: {x: 1}\nwebEnabled: true\ndbMaintenance: Off\n");
        let new = file("global: {a: 2}\nweb: {x: 1}\ndb: false\ndbMaintenance: Off\n");
        let change = ConfigKeyChange::between(&old, &new);
        let keys: Vec<(&str, Option<&Value>)> = change.iter().collect();
        assert_eq!(
            keys,
            vec![
                ("db", Some(&json!(false))),
                ("global", Some(&json!({"a": 2}))),
                ("webEnabled", None),
            ]
        );
    }

    #[test]
    fn applying_a_change_to_data_keeps_every_other_key_verbatim() {
        let mut data = BTreeMap::from([
            ("global".to_string(), "# mine\na: 1\n".to_string()),
            ("web".to_string(), "x: 1\n".to_string()),
            ("webEnabled".to_string(), "true".to_string()),
        ]);
        let change = ConfigKeyChange::default()
            .with("web", Some(json!({"x": 2})))
            .with("webEnabled", None)
            .with("dbEnabled", Some(json!(false)));
        change.apply_to_data(&mut data).unwrap();
        assert_eq!(data["global"], "# mine\na: 1\n");
        assert_eq!(data["dbEnabled"], "false");
        assert!(!data.contains_key("webEnabled"));
        assert_eq!(
            addon_core::yaml::parse(&data["web"]).unwrap(),
            json!({"x": 2})
        );
    }
}
