//! A change of some top-level keys of the config (`global`, module sections, `<module>Enabled`):
//! computed between two configs, applied key by key to a store's data so that every other key
//! stays exactly as it was.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::values::config::{Config, ConfigError};
use crate::values::static_values::Section;

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
    pub fn apply_to_data(&self, data: &mut BTreeMap<String, String>) -> Result<(), ConfigError> {
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
fn data_text(key: &str, value: &Value) -> Result<String, ConfigError> {
    match value {
        Value::Bool(b) => Ok(b.to_string()),
        _ => crate::yaml::to_string(value).map_err(|source| ConfigError::RenderSection {
            key: key.to_string(),
            source,
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
        assert_eq!(crate::yaml::parse(&data["web"]).unwrap(), json!({"x": 2}));
    }
}
