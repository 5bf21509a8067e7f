//! The user's config: the `addon-operator` ConfigMap `data` (YAML strings) or the local config
//! file (same keys, plain YAML), parsed into global and per-module sections and enable flags, and
//! rendered back so that a config patch can be written without touching other keys.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::names::{ModuleName, NameError};
use crate::values::patch::{enabled_flag_module, json_kind};
use crate::values::static_values::Section;
use crate::yaml::{self, YamlError};

/// One key of the config that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config key '{key}': cannot parse YAML")]
    ParseSection {
        key: String,
        #[source]
        source: YamlError,
    },
    #[error("config key '{key}' must hold a mapping (or \"false\" for a module), got {got}")]
    SectionNotMapping { key: String, got: &'static str },
    #[error("config key '{key}' must be \"true\" or \"false\", got {got}")]
    EnabledNotBool { key: String, got: String },
    #[error("config key '{key}' is neither 'global' nor the camelCase name of a module")]
    BadKey {
        key: String,
        #[source]
        source: NameError,
    },
    #[error("config file '{file}': cannot parse YAML")]
    ParseFile {
        file: String,
        #[source]
        source: YamlError,
    },
    #[error("config file '{file}' must hold a mapping, got {got}")]
    FileNotMapping { file: String, got: &'static str },
    #[error("config key '{key}' has a value that is not a string, mapping or boolean")]
    FileValueKind { key: String },
    #[error(
        "config key '{key}' can only be 'NoResourceReconciliation', 'noresourcereconciliation' or '', got {got}"
    )]
    MaintenanceValue { key: String, got: String },
    #[error("config key '{key}': cannot render YAML")]
    RenderSection {
        key: String,
        #[source]
        source: YamlError,
    },
}

impl ConfigError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            ConfigError::RenderSection { .. } => "config_render",
            _ => "config_parse",
        }
    }
}

/// All errors found in one config; parsing reports every bad key, not just the first.
#[derive(Debug, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error(s) in config", self.0.len())?;
        for err in &self.0 {
            write!(f, "; {err}")?;
            let mut source = std::error::Error::source(err);
            while let Some(s) = source {
                write!(f, ": {s}")?;
                source = s.source();
            }
        }
        Ok(())
    }
}

impl ConfigErrors {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        "config_parse"
    }
}

/// What the config says about one module.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleConfig {
    /// The `<camelKey>` section: values, or `"false"` (disabled); `None` when absent.
    pub section: Option<Section>,
    /// The `<camelKey>Enabled` flag; `None` when absent.
    pub enabled: Option<bool>,
}

/// The parsed config store contents.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The `global` section; `None` when the key is absent.
    pub global: Option<Value>,
    /// Module sections and flags by module (modules unknown to the operator are kept too).
    pub modules: BTreeMap<ModuleName, ModuleConfig>,
    /// Keys kept verbatim and not interpreted (`<camelKey>Maintenance`).
    pub other: BTreeMap<String, String>,
    /// The text each key had when read, reused on render when the value did not change.
    raw: BTreeMap<String, String>,
}

impl PartialEq for Config {
    fn eq(&self, other: &Self) -> bool {
        self.global == other.global && self.modules == other.modules && self.other == other.other
    }
}

/// How a new config differs from the previous one (LIFECYCLE-STEPS step 16).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigChange {
    /// The `global` section changed: reload all modules.
    pub global_changed: bool,
    /// Modules whose `*Enabled` flag or `"false"` section changed: reload all modules.
    pub enabled_changed: Vec<ModuleName>,
    /// Modules whose section values changed: run those modules.
    pub modules_changed: Vec<ModuleName>,
}

impl ConfigChange {
    pub fn is_empty(&self) -> bool {
        !self.global_changed && self.enabled_changed.is_empty() && self.modules_changed.is_empty()
    }
}

enum KeyKind {
    Global,
    Enabled(ModuleName),
    Other,
    Module(ModuleName),
}

fn classify(key: &str) -> Result<KeyKind, ConfigError> {
    if key == "global" {
        return Ok(KeyKind::Global);
    }
    if let Some(m) = enabled_flag_module(key) {
        return Ok(KeyKind::Enabled(m));
    }
    if let Some(camel) = key.strip_suffix("Maintenance")
        && ModuleName::from_values_key(camel).is_ok()
    {
        return Ok(KeyKind::Other);
    }
    ModuleName::from_values_key(key)
        .map(KeyKind::Module)
        .map_err(|source| ConfigError::BadKey {
            key: key.to_string(),
            source,
        })
}

/// The Go operator's values of a `<key>Maintenance` key: `Some(true)` for
/// `NoResourceReconciliation` (either spelling), `Some(false)` for the empty string (managed),
/// `None` for anything else.
fn maintenance_state(text: &str) -> Option<bool> {
    match text {
        "NoResourceReconciliation" | "noresourcereconciliation" => Some(true),
        "" => Some(false),
        _ => None,
    }
}

/// The config when there was no error, else every error.
fn strict((config, errors): (Config, Vec<ConfigError>)) -> Result<Config, ConfigErrors> {
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors(errors))
    }
}

impl Config {
    /// An empty config (no ConfigMap, or an empty one).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Parses ConfigMap `data`: every value is a YAML string.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, ConfigErrors> {
        strict(Self::from_data_partial(data))
    }

    /// Like [`Self::from_data`], but keeps every key that parsed and returns the problems of
    /// the others (for `check`, which lists every problem of a config at once).
    pub fn from_data_partial(data: &BTreeMap<String, String>) -> (Self, Vec<ConfigError>) {
        let mut config = Config::default();
        let mut errors = Vec::new();
        for (key, text) in data {
            if let Err(err) = config.add_text(key, text) {
                errors.push(err);
            }
        }
        (config, errors)
    }

    /// Parses the local config file: the same keys as ConfigMap `data`, whose values may be YAML
    /// strings or plain mappings and booleans.
    pub fn from_file(file: &str, text: &str) -> Result<Self, ConfigErrors> {
        strict(Self::from_file_partial(file, text))
    }

    /// Like [`Self::from_file`], but keeps every key that parsed (see [`Self::from_data_partial`]).
    pub fn from_file_partial(file: &str, text: &str) -> (Self, Vec<ConfigError>) {
        let doc = match yaml::parse(text) {
            Ok(doc) => doc,
            Err(source) => {
                let file = file.to_string();
                return (
                    Config::default(),
                    vec![ConfigError::ParseFile { file, source }],
                );
            }
        };
        let map = match doc {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            other => {
                let error = ConfigError::FileNotMapping {
                    file: file.to_string(),
                    got: json_kind(&other),
                };
                return (Config::default(), vec![error]);
            }
        };
        let mut config = Config::default();
        let mut errors = Vec::new();
        for (key, value) in map {
            let result = match value {
                Value::String(text) => config.add_text(&key, &text),
                Value::Object(_) | Value::Bool(_) | Value::Null => config.add_value(&key, value),
                _ => Err(ConfigError::FileValueKind { key: key.clone() }),
            };
            if let Err(err) = result {
                errors.push(err);
            }
        }
        (config, errors)
    }

    fn add_text(&mut self, key: &str, text: &str) -> Result<(), ConfigError> {
        let kind = classify(key)?;
        if let KeyKind::Other = kind {
            maintenance_state(text).ok_or_else(|| ConfigError::MaintenanceValue {
                key: key.to_string(),
                got: format!("{text:?}"),
            })?;
            self.other.insert(key.to_string(), text.to_string());
            return Ok(());
        }
        if let KeyKind::Enabled(_) = kind {
            // As the Go operator: the text itself must be `true` or `false` (not YAML `yes`, `on`).
            let flag = match text {
                "true" => true,
                "false" => false,
                other => {
                    return Err(ConfigError::EnabledNotBool {
                        key: key.to_string(),
                        got: format!("{other:?}"),
                    });
                }
            };
            self.raw.insert(key.to_string(), text.to_string());
            return self.set_key(key, kind, Value::Bool(flag));
        }
        let value = yaml::parse(text).map_err(|source| ConfigError::ParseSection {
            key: key.to_string(),
            source,
        })?;
        self.raw.insert(key.to_string(), text.to_string());
        self.set_key(key, kind, value)
    }

    fn add_value(&mut self, key: &str, value: Value) -> Result<(), ConfigError> {
        let kind = classify(key)?;
        if let (KeyKind::Other, Value::Null) = (&kind, &value) {
            // `webMaintenance:` with nothing after it in the config file: the empty state
            return self.add_text(key, "");
        }
        self.set_key(key, kind, value)
    }

    /// The module is in maintenance mode `NoResourceReconciliation` (its `<key>Maintenance`
    /// config key): its hooks run, its Helm release is left alone.
    pub fn module_in_maintenance(&self, module: &ModuleName) -> bool {
        let key = format!("{}Maintenance", module.values_key());
        (self.other.get(&key)).and_then(|text| maintenance_state(text)) == Some(true)
    }

    fn set_key(&mut self, key: &str, kind: KeyKind, value: Value) -> Result<(), ConfigError> {
        let not_mapping = |got| ConfigError::SectionNotMapping {
            key: key.to_string(),
            got,
        };
        match kind {
            KeyKind::Global => match Section::from_value(value).map_err(not_mapping)? {
                Section::Values(v) => self.global = Some(v),
                Section::Disabled => return Err(not_mapping("false")),
            },
            KeyKind::Module(m) => {
                let section = Section::from_value(value).map_err(not_mapping)?;
                self.modules.entry(m).or_default().section = Some(section);
            }
            KeyKind::Enabled(m) => {
                let flag = match value {
                    Value::Bool(b) => b,
                    other => {
                        return Err(ConfigError::EnabledNotBool {
                            key: key.to_string(),
                            got: other.to_string(),
                        });
                    }
                };
                self.modules.entry(m).or_default().enabled = Some(flag);
            }
            KeyKind::Other => {}
        }
        Ok(())
    }

    /// The `global` section, `{}` when absent.
    pub fn global_values(&self) -> Value {
        self.global.clone().unwrap_or_else(empty_object)
    }

    /// A module's section values, `{}` when absent or `"false"`.
    pub fn module_values(&self, module: &ModuleName) -> Value {
        self.modules
            .get(module)
            .and_then(|c| c.section.as_ref())
            .and_then(Section::values)
            .cloned()
            .unwrap_or_else(empty_object)
    }

    /// A module's `*Enabled` flag in the config.
    pub fn module_enabled(&self, module: &ModuleName) -> Option<bool> {
        self.modules.get(module).and_then(|c| c.enabled)
    }

    /// Replaces the `global` section.
    pub fn set_global(&mut self, values: Value) {
        self.global = Some(values);
    }

    /// Replaces a module's section with values.
    pub fn set_module_values(&mut self, module: &ModuleName, values: Value) {
        self.modules.entry(module.clone()).or_default().section = Some(Section::Values(values));
    }

    /// Sets or clears a module's `*Enabled` flag.
    pub fn set_module_enabled(&mut self, module: &ModuleName, enabled: Option<bool>) {
        let entry = self.modules.entry(module.clone()).or_default();
        entry.enabled = enabled;
        if entry.section.is_none() && entry.enabled.is_none() {
            self.modules.remove(module);
        }
    }

    /// Renders the config as ConfigMap `data`. Keys whose value did not change keep their
    /// original text; changed keys are written as YAML.
    pub fn to_data(&self) -> Result<BTreeMap<String, String>, ConfigError> {
        let mut data = BTreeMap::new();
        if let Some(global) = &self.global {
            data.insert("global".to_string(), self.render("global", global)?);
        }
        for (module, cfg) in &self.modules {
            if let Some(section) = &cfg.section {
                let key = module.values_key();
                let text = match section {
                    Section::Values(v) => self.render(&key, v)?,
                    Section::Disabled => self.render(&key, &Value::Bool(false))?,
                };
                data.insert(key, text);
            }
            if let Some(flag) = cfg.enabled {
                let key = module.enabled_key();
                let text = self.render(&key, &Value::Bool(flag))?;
                data.insert(key, text);
            }
        }
        data.extend(self.other.clone());
        Ok(data)
    }

    /// Renders the config as the local config file: one YAML mapping with plain values.
    pub fn to_file_text(&self) -> Result<String, ConfigError> {
        let mut doc = Map::new();
        if let Some(global) = &self.global {
            doc.insert("global".to_string(), global.clone());
        }
        for (module, cfg) in &self.modules {
            match &cfg.section {
                Some(Section::Values(v)) => {
                    doc.insert(module.values_key(), v.clone());
                }
                Some(Section::Disabled) => {
                    doc.insert(module.values_key(), Value::Bool(false));
                }
                None => {}
            }
            if let Some(flag) = cfg.enabled {
                doc.insert(module.enabled_key(), Value::Bool(flag));
            }
        }
        for (key, text) in &self.other {
            doc.insert(key.clone(), Value::String(text.clone()));
        }
        yaml::to_string(&Value::Object(doc)).map_err(|source| ConfigError::RenderSection {
            key: "<file>".to_string(),
            source,
        })
    }

    fn render(&self, key: &str, value: &Value) -> Result<String, ConfigError> {
        if let Some(raw) = self.raw.get(key)
            && let Ok(parsed) = yaml::parse(raw)
            && raw_matches(&parsed, value)
        {
            return Ok(raw.clone());
        }
        match value {
            Value::Bool(b) => Ok(b.to_string()),
            _ => yaml::to_string(value).map_err(|source| ConfigError::RenderSection {
                key: key.to_string(),
                source,
            }),
        }
    }

    /// Compares two configs for the decisions of step 16.
    pub fn diff(&self, new: &Config) -> ConfigChange {
        let mut change = ConfigChange {
            global_changed: self.global_values() != new.global_values(),
            ..Default::default()
        };
        let in_maintenance = |c: &'_ Config| -> Vec<ModuleName> {
            (c.other.keys())
                .filter_map(|k| ModuleName::from_values_key(k.strip_suffix("Maintenance")?).ok())
                .collect()
        };
        let (old_kept, new_kept) = (in_maintenance(self), in_maintenance(new));
        let modules: std::collections::BTreeSet<&ModuleName> = (self.modules.keys())
            .chain(new.modules.keys())
            .chain(old_kept.iter())
            .chain(new_kept.iter())
            .collect();
        for m in modules {
            let old_disabled = self.section_disabled(m);
            if self.module_enabled(m) != new.module_enabled(m)
                || old_disabled != new.section_disabled(m)
            {
                change.enabled_changed.push(m.clone());
            }
            // entering or leaving maintenance runs the module again, as upstream
            if self.module_values(m) != new.module_values(m)
                || self.module_in_maintenance(m) != new.module_in_maintenance(m)
            {
                change.modules_changed.push(m.clone());
            }
        }
        change
    }

    /// True when the module's section is `"false"`.
    pub fn section_disabled(&self, module: &ModuleName) -> bool {
        matches!(
            self.modules.get(module).and_then(|c| c.section.as_ref()),
            Some(Section::Disabled)
        )
    }
}

fn raw_matches(parsed: &Value, value: &Value) -> bool {
    match (parsed, value) {
        (Value::Null, Value::Object(m)) => m.is_empty(),
        (Value::String(s), Value::Bool(false)) => s.trim() == "false",
        _ => parsed == value,
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn m(name: &str) -> ModuleName {
        ModuleName::new(name).unwrap()
    }

    #[test]
    fn configmap_data_from_values_doc_is_parsed() {
        let cfg = Config::from_data(&data(&[
            ("global", "param1: newValue\nparam3: valu3\n"),
            ("simpleModule", "modParam2: newValue2\n"),
            ("anotherModule", "false"),
        ]))
        .unwrap();
        assert_eq!(
            cfg.global_values(),
            json!({"param1": "newValue", "param3": "valu3"})
        );
        assert_eq!(
            cfg.module_values(&m("simple-module")),
            json!({"modParam2": "newValue2"})
        );
        assert!(cfg.section_disabled(&m("another-module")));
        assert_eq!(cfg.module_values(&m("another-module")), json!({}));
    }

    #[test]
    fn enabled_flags_must_be_true_or_false() {
        let cfg = Config::from_data(&data(&[("someModuleEnabled", "true")])).unwrap();
        assert_eq!(cfg.module_enabled(&m("some-module")), Some(true));
        let err = Config::from_data(&data(&[("someModuleEnabled", "sure")])).unwrap_err();
        assert!(err.to_string().contains("someModuleEnabled"), "{err}");
        for text in ["yes", "on", "y", "TRUE", "True", " true", "true\n"] {
            let err = Config::from_data(&data(&[("someModuleEnabled", text)]));
            assert!(
                err.is_err(),
                "{text:?} accepted: the Go operator takes only true/false"
            );
        }
        let file = Config::from_file("c.yaml", "someModuleEnabled: yes\n").unwrap();
        assert_eq!(
            file.module_enabled(&m("some-module")),
            Some(true),
            "a plain YAML boolean in the file, as in values.yaml"
        );
        assert!(Config::from_file("c.yaml", "someModuleEnabled: \"yes\"\n").is_err());
    }

    #[test]
    fn all_bad_keys_are_reported_not_just_the_first() {
        let err = Config::from_data(&data(&[
            ("global", "a: [1"),
            ("bad_key", "x: 1"),
            ("someModule", "42"),
            ("goodModule", "x: 1"),
        ]))
        .unwrap_err();
        assert_eq!(err.0.len(), 3, "{err}");
        let msg = err.to_string();
        for key in ["'global'", "'bad_key'", "'someModule'"] {
            assert!(msg.contains(key), "{key} missing in {msg}");
        }
    }

    #[test]
    fn empty_module_section_is_an_empty_object() {
        let cfg = Config::from_data(&data(&[("someModule", "")])).unwrap();
        assert_eq!(cfg.module_values(&m("some-module")), json!({}));
        assert!(!cfg.section_disabled(&m("some-module")));
    }

    #[test]
    fn unknown_but_valid_module_keys_are_kept() {
        let cfg = Config::from_data(&data(&[("neverHeardOf", "a: 1")])).unwrap();
        assert!(cfg.modules.contains_key(&m("never-heard-of")));
    }

    #[test]
    fn maintenance_keys_are_kept_verbatim() {
        let d = data(&[("someModuleMaintenance", "NoResourceReconciliation")]);
        let cfg = Config::from_data(&d).unwrap();
        assert_eq!(cfg.to_data().unwrap(), d);
    }

    #[test]
    fn maintenance_takes_upstreams_values_only_and_its_change_reruns_the_module() {
        let on =
            Config::from_data(&data(&[("webMaintenance", "NoResourceReconciliation")])).unwrap();
        assert!(on.module_in_maintenance(&m("web")));
        let lower = Config::from_data(&data(&[("webMaintenance", "noresourcereconciliation")]));
        assert!(lower.unwrap().module_in_maintenance(&m("web")));
        let empty = Config::from_data(&data(&[("webMaintenance", "")])).unwrap();
        assert!(!empty.module_in_maintenance(&m("web")));
        let bad = Config::from_data(&data(&[("webMaintenance", "Off")])).unwrap_err();
        assert!(
            bad.to_string()
                .contains("can only be 'NoResourceReconciliation'"),
            "{bad}"
        );
        let file = Config::from_file(
            "c.yaml",
            "webMaintenance: NoResourceReconciliation
",
        );
        assert!(file.unwrap().module_in_maintenance(&m("web")));
        assert_eq!(Config::empty().diff(&on).modules_changed, [m("web")]);
        assert_eq!(on.diff(&Config::empty()).modules_changed, [m("web")]);
        assert!(on.diff(&on.clone()).is_empty());
    }

    #[test]
    fn local_file_accepts_strings_mappings_and_booleans() {
        let text = "global:\n  globParam1: globalValue1\nsimpleOneModule: |\n  param3: value_3\nsimpleOneModuleEnabled: true\notherModule: false\n";
        let cfg = Config::from_file("config.yaml", text).unwrap();
        assert_eq!(cfg.global_values(), json!({"globParam1": "globalValue1"}));
        assert_eq!(
            cfg.module_values(&m("simple-one-module")),
            json!({"param3": "value_3"})
        );
        assert_eq!(cfg.module_enabled(&m("simple-one-module")), Some(true));
        assert!(cfg.section_disabled(&m("other-module")));
    }

    #[test]
    fn local_file_errors_name_the_file() {
        let err = Config::from_file("/etc/ao/config.yaml", "- a\n- b\n").unwrap_err();
        assert!(err.to_string().contains("/etc/ao/config.yaml"), "{err}");
    }

    #[test]
    fn rendering_keeps_untouched_keys_verbatim() {
        let d = data(&[
            ("global", "# comment\nparam1: 200\n"),
            ("someModule", "param1: \"Long string\"\n"),
            ("someModuleEnabled", "true"),
            ("otherModule", "false"),
        ]);
        let mut cfg = Config::from_data(&d).unwrap();
        assert_eq!(cfg.to_data().unwrap(), d);
        cfg.set_module_values(&m("some-module"), json!({"param1": "x"}));
        let out = cfg.to_data().unwrap();
        assert_eq!(out["global"], d["global"]);
        assert_eq!(out["someModuleEnabled"], "true");
        assert_eq!(out["otherModule"], "false");
        assert_eq!(
            yaml::parse(&out["someModule"]).unwrap(),
            json!({"param1": "x"})
        );
    }

    #[test]
    fn rendered_data_parses_back_to_the_same_config() {
        let mut cfg = Config::empty();
        cfg.set_global(json!({"a": {"b": [1, 2]}, "c": "yes"}));
        cfg.set_module_enabled(&m("x-y"), Some(false));
        let back = Config::from_data(&cfg.to_data().unwrap()).unwrap();
        assert_eq!(back, cfg);
        let back = Config::from_file("f", &cfg.to_file_text().unwrap()).unwrap();
        assert_eq!(back, cfg);
    }

    #[test]
    fn diff_separates_global_flags_and_module_sections() {
        let old = Config::from_data(&data(&[("global", "a: 1"), ("xModule", "k: 1")])).unwrap();
        let new = Config::from_data(&data(&[
            ("global", "a: 1"),
            ("xModule", "k: 2"),
            ("yModuleEnabled", "true"),
        ]))
        .unwrap();
        let change = old.diff(&new);
        assert!(!change.global_changed);
        assert_eq!(change.modules_changed, vec![m("x-module")]);
        assert_eq!(change.enabled_changed, vec![m("y-module")]);
    }
}
#[cfg(test)]
mod partial_tests {
    use super::*;

    #[test]
    fn partial_file_parse_keeps_good_keys_and_reports_bad_ones() {
        let text = "global: |\n  replicas: three\nweb: |\n  key: [unclosed\nother: |\n  a: 1\n";
        let (config, errors) = Config::from_file_partial("c.yaml", text);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].to_string().contains("'web'"));
        assert_eq!(
            config.global_values(),
            serde_json::json!({"replicas": "three"})
        );
        assert!(Config::from_file("c.yaml", text).is_err());
    }
}
