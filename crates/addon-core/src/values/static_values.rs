//! The static layers: `values.yaml` of a modules directory (global section, module sections,
//! `*Enabled` flags) and a module's own `values.yaml` (only its camelCase key and enable flag).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::names::ModuleName;
use crate::values::merge::deep_merge;
use crate::values::patch::{enabled_flag_module, json_kind};
use crate::yaml::{self, YamlError};

/// A static values file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StaticError {
    #[error("{file}: cannot parse YAML")]
    ParseFile {
        file: String,
        #[source]
        source: YamlError,
    },
    #[error("{file}: the document must be a mapping, got {got}")]
    DocumentNotMapping { file: String, got: &'static str },
    #[error("{file}: '{key}' must be a mapping (or false to disable the module), got {got}")]
    SectionNotMapping {
        file: String,
        key: String,
        got: &'static str,
    },
    #[error("{file}: '{key}' must be true or false, got {got}")]
    EnabledNotBool {
        file: String,
        key: String,
        got: String,
    },
}

impl StaticError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        "static_values"
    }
}

/// A module section in one layer: values, or `false` ("the module is disabled").
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    Values(Value),
    Disabled,
}

impl Section {
    /// Reads a section value: a mapping (null ⇒ empty), or `false` / `"false"`.
    pub fn from_value(value: Value) -> Result<Self, &'static str> {
        match value {
            Value::Null => Ok(Section::Values(Value::Object(Map::new()))),
            Value::Object(_) => Ok(Section::Values(value)),
            Value::Bool(false) => Ok(Section::Disabled),
            Value::String(s) if s.trim() == "false" => Ok(Section::Disabled),
            other => Err(json_kind(&other)),
        }
    }

    pub fn values(&self) -> Option<&Value> {
        match self {
            Section::Values(v) => Some(v),
            Section::Disabled => None,
        }
    }
}

/// The contents of `<modules dir>/values.yaml` (several dirs merge into one layer, in order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StaticLayer {
    /// The `global` section.
    pub global: Value,
    /// Module sections by camelCase key (not checked against known modules).
    pub sections: BTreeMap<String, Section>,
    /// `<camelKey>Enabled` flags by module.
    pub enabled: BTreeMap<ModuleName, bool>,
}

impl StaticLayer {
    /// Parses one `<modules dir>/values.yaml`. `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self, StaticError> {
        let mut layer = StaticLayer {
            global: Value::Object(Map::new()),
            ..Default::default()
        };
        for (key, value) in parse_mapping(file, text)? {
            if key == "global" {
                match Section::from_value(value) {
                    Ok(Section::Values(v)) => layer.global = v,
                    Ok(Section::Disabled) | Err(_) => {
                        return Err(StaticError::SectionNotMapping {
                            file: file.to_string(),
                            key,
                            got: "a non-mapping value",
                        });
                    }
                }
            } else if let Some(module) = enabled_flag_module(&key) {
                let flag = parse_flag(file, &key, &value)?;
                layer.enabled.insert(module, flag);
            } else {
                let section = section(file, &key, value)?;
                layer.sections.insert(key, section);
            }
        }
        Ok(layer)
    }

    /// Merges a later layer (another modules directory) over this one.
    pub fn merge(&mut self, later: StaticLayer) {
        deep_merge(&mut self.global, &later.global);
        for (key, section) in later.sections {
            let merged = match (self.sections.remove(&key), section) {
                (Some(Section::Values(mut a)), Section::Values(b)) => {
                    deep_merge(&mut a, &b);
                    Section::Values(a)
                }
                (_, later) => later,
            };
            self.sections.insert(key, merged);
        }
        self.enabled.extend(later.enabled);
    }
}

/// What a module's own `values.yaml` contributes: its section and its enable flag.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleStatic {
    pub section: Option<Section>,
    pub enabled: Option<bool>,
}

impl ModuleStatic {
    /// Parses `<module dir>/values.yaml`; keys other than `<camelKey>` and `<camelKey>Enabled` are
    /// ignored, as in the Go operator.
    pub fn parse(file: &str, text: &str, module: &ModuleName) -> Result<Self, StaticError> {
        let mut doc = parse_mapping(file, text)?;
        let key = module.values_key();
        let enabled_key = module.enabled_key();
        let section = match doc.remove(&key) {
            Some(value) => Some(section(file, &key, value)?),
            None => None,
        };
        let enabled = match doc.remove(&enabled_key) {
            Some(value) => Some(parse_flag(file, &enabled_key, &value)?),
            None => None,
        };
        Ok(Self { section, enabled })
    }
}

fn parse_mapping(file: &str, text: &str) -> Result<Map<String, Value>, StaticError> {
    let doc = yaml::parse(text).map_err(|source| StaticError::ParseFile {
        file: file.to_string(),
        source,
    })?;
    match doc {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        other => Err(StaticError::DocumentNotMapping {
            file: file.to_string(),
            got: json_kind(&other),
        }),
    }
}

fn section(file: &str, key: &str, value: Value) -> Result<Section, StaticError> {
    Section::from_value(value).map_err(|got| StaticError::SectionNotMapping {
        file: file.to_string(),
        key: key.to_string(),
        got,
    })
}

fn parse_flag(file: &str, key: &str, value: &Value) -> Result<bool, StaticError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(StaticError::EnabledNotBool {
            file: file.to_string(),
            key: key.to_string(),
            got: other.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(name: &str) -> ModuleName {
        ModuleName::new(name).unwrap()
    }

    #[test]
    fn common_values_file_splits_global_sections_and_flags() {
        let text = "global:\n  param1: value1\nsimpleModule:\n  modParam1: value3\nsimpleModuleEnabled: true\nother: false\n";
        let layer = StaticLayer::parse("modules/values.yaml", text).unwrap();
        assert_eq!(layer.global, json!({"param1": "value1"}));
        assert_eq!(
            layer.sections["simpleModule"],
            Section::Values(json!({"modParam1": "value3"}))
        );
        assert_eq!(layer.sections["other"], Section::Disabled);
        assert!(layer.enabled[&m("simple-module")]);
    }

    #[test]
    fn module_values_file_reads_only_its_own_key_and_flag() {
        let text = "simpleModule:\n  modParam1: value1\nglobal:\n  x: 1\notherModule:\n  y: 2\nsimpleModuleEnabled: false\n";
        let s = ModuleStatic::parse("001-simple-module/values.yaml", text, &m("simple-module"))
            .unwrap();
        assert_eq!(
            s.section,
            Some(Section::Values(json!({"modParam1": "value1"})))
        );
        assert_eq!(s.enabled, Some(false));
    }

    #[test]
    fn string_false_section_disables_the_module() {
        let s = ModuleStatic::parse("v.yaml", "simpleModule: \"false\"\n", &m("simple-module"))
            .unwrap();
        assert_eq!(s.section, Some(Section::Disabled));
    }

    #[test]
    fn non_boolean_flag_is_an_error_naming_file_and_key() {
        let err = StaticLayer::parse("modules/values.yaml", "fooEnabled: maybe\n").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("modules/values.yaml") && msg.contains("fooEnabled"),
            "{msg}"
        );
    }

    #[test]
    fn scalar_section_is_an_error() {
        let err = StaticLayer::parse("modules/values.yaml", "foo: 42\n").unwrap_err();
        assert!(
            matches!(err, StaticError::SectionNotMapping { .. }),
            "{err}"
        );
    }

    #[test]
    fn broken_yaml_is_an_error_naming_the_file() {
        let err = StaticLayer::parse("modules/values.yaml", "a: [1\n").unwrap_err();
        assert!(err.to_string().contains("modules/values.yaml"));
    }

    #[test]
    fn later_modules_dir_merges_over_earlier() {
        let mut a = StaticLayer::parse(
            "d1/values.yaml",
            "global:\n  a: 1\n  b: 1\nxEnabled: true\nx:\n  k: 1\n",
        )
        .unwrap();
        let b = StaticLayer::parse(
            "d2/values.yaml",
            "global:\n  b: 2\nxEnabled: false\nx:\n  j: 2\n",
        )
        .unwrap();
        a.merge(b);
        assert_eq!(a.global, json!({"a": 1, "b": 2}));
        assert!(!a.enabled[&m("x")]);
        assert_eq!(a.sections["x"], Section::Values(json!({"k": 1, "j": 2})));
    }
}
