//! `module.yaml`, Deckhouse's module definition file: the module's name, weight (its ORDER),
//! `critical`, and `requirements` (other modules with version constraints, the Kubernetes
//! version). Keys this operator does not act on are accepted and listed in a note.

pub mod constraint;

use serde_json::{Map, Value};

use crate::names::ModuleName;
pub use constraint::{Constraint, ConstraintError, Version};

/// The file's name in a module directory.
pub const FILE_NAME: &str = "module.yaml";

/// The largest `module.yaml` read.
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// The most modules one module may require.
const MAX_REQUIREMENTS: usize = 256;

/// The suffix of an optional module requirement (`">= 1.2 !optional"`).
const OPTIONAL: &str = "!optional";

/// What a `module.yaml` says (all empty when the module has none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleDefinition {
    /// `name`: wins over the directory's name, as in Deckhouse.
    pub name: Option<ModuleName>,
    /// `weight`: wins over the directory's number prefix, as in Deckhouse.
    pub weight: Option<u32>,
    /// `critical`.
    pub critical: Option<bool>,
    /// `requirements.modules`, in the file's order.
    pub requires: Vec<ModuleRequirement>,
    /// `requirements.kubernetes`.
    pub kubernetes: Option<Constraint>,
    /// Keys that were read but are not acted on (`stage`, `requirements.deckhouse`, ...).
    pub ignored_keys: Vec<String>,
    /// The module's version, checked against other modules' requirements: the `version` of
    /// its `Chart.yaml` (not a `module.yaml` key; `None`: unknown, constraints on the module
    /// are not checked).
    pub version: Option<Version>,
}

/// A module another module needs, and the versions it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRequirement {
    pub module: ModuleName,
    pub constraint: Constraint,
    /// `!optional`: the module may be absent or disabled; when it is enabled, its version must
    /// match and it runs first.
    pub optional: bool,
}

/// A `module.yaml` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    #[error("is not valid YAML: {message}")]
    ParseYaml { message: String },
    #[error("must be a mapping of keys")]
    NotAMapping,
    #[error("key '{key}' must be {expected}")]
    FieldType { key: String, expected: &'static str },
    #[error("requirements.modules names '{name}', which is not a module name")]
    RequiredName { name: String },
    #[error("requirements.modules lists more than {MAX_REQUIREMENTS} modules")]
    TooManyRequirements,
    #[error("requirements.{key}")]
    Constraint {
        key: String,
        #[source]
        source: ConstraintError,
    },
}

/// Reads a `module.yaml`.
pub fn parse(text: &str) -> Result<ModuleDefinition, DefinitionError> {
    let doc =
        crate::yaml::parse(text).map_err(|e| DefinitionError::ParseYaml { message: e.message })?;
    let map = match doc {
        Value::Null => return Ok(ModuleDefinition::default()),
        Value::Object(map) => map,
        _ => return Err(DefinitionError::NotAMapping),
    };
    let mut def = ModuleDefinition::default();
    for (key, value) in &map {
        match key.as_str() {
            "name" => def.name = Some(name_field(value)?),
            "weight" => def.weight = Some(weight_field(value)?),
            "critical" => def.critical = Some(bool_field("critical", value)?),
            "requirements" => read_requirements(value, &mut def)?,
            other => def.ignored_keys.push(other.to_string()),
        }
    }
    Ok(def)
}

fn name_field(value: &Value) -> Result<ModuleName, DefinitionError> {
    let bad = || DefinitionError::FieldType {
        key: "name".into(),
        expected: "a module name (kebab-case)",
    };
    let text = value.as_str().ok_or_else(bad)?;
    ModuleName::new(text).map_err(|_| bad())
}

fn weight_field(value: &Value) -> Result<u32, DefinitionError> {
    value
        .as_u64()
        .and_then(|w| u32::try_from(w).ok())
        .ok_or(DefinitionError::FieldType {
            key: "weight".into(),
            expected: "a whole number from 0 to 4294967295",
        })
}

fn bool_field(key: &str, value: &Value) -> Result<bool, DefinitionError> {
    value.as_bool().ok_or_else(|| DefinitionError::FieldType {
        key: key.into(),
        expected: "true or false",
    })
}

fn mapping<'a>(
    key: &str,
    value: &'a Value,
) -> Result<Option<&'a Map<String, Value>>, DefinitionError> {
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        _ => Err(DefinitionError::FieldType {
            key: key.into(),
            expected: "a mapping",
        }),
    }
}

fn read_requirements(value: &Value, def: &mut ModuleDefinition) -> Result<(), DefinitionError> {
    let Some(map) = mapping("requirements", value)? else {
        return Ok(());
    };
    for (key, value) in map {
        match key.as_str() {
            "kubernetes" => {
                let text = string_field("requirements.kubernetes", value)?;
                def.kubernetes = Some(constraint("kubernetes", text)?);
            }
            "modules" => def.requires = read_modules(value)?,
            other => def.ignored_keys.push(format!("requirements.{other}")),
        }
    }
    Ok(())
}

fn read_modules(value: &Value) -> Result<Vec<ModuleRequirement>, DefinitionError> {
    let Some(map) = mapping("requirements.modules", value)? else {
        return Ok(Vec::new());
    };
    if map.len() > MAX_REQUIREMENTS {
        return Err(DefinitionError::TooManyRequirements);
    }
    let mut requires = Vec::with_capacity(map.len());
    for (name, value) in map {
        let module = ModuleName::new(name).map_err(|_| DefinitionError::RequiredName {
            name: crate::quote::prefix(name),
        })?;
        let key = format!("modules.{name}");
        let text = string_field(&format!("requirements.{key}"), value)?;
        let (text, optional) = match text.trim_end().strip_suffix(OPTIONAL) {
            Some(rest) => (rest, true),
            None => (text, false),
        };
        requires.push(ModuleRequirement {
            module,
            constraint: constraint(&key, text)?,
            optional,
        });
    }
    Ok(requires)
}

fn string_field<'a>(key: &str, value: &'a Value) -> Result<&'a str, DefinitionError> {
    value.as_str().ok_or_else(|| DefinitionError::FieldType {
        key: key.into(),
        expected: "a version constraint string",
    })
}

fn constraint(key: &str, text: &str) -> Result<Constraint, DefinitionError> {
    Constraint::parse(text).map_err(|source| DefinitionError::Constraint {
        key: key.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deckhouse_module_yaml_gives_name_weight_critical_and_requirements() {
        let def = parse(
            "name: hello-world\nweight: 901\ncritical: true\nstage: General Availability\n\
             descriptions:\n  en: Hello\nrequirements:\n  deckhouse: '>= 1.61'\n  \
             kubernetes: '>= 1.27'\n  bootstrapped: true\n  modules:\n    \
             ingress-nginx: '> 1.67.0'\n    test: '>v0.22.1 !optional'\n",
        )
        .unwrap();
        assert_eq!(def.name.unwrap().as_str(), "hello-world");
        assert_eq!(def.weight, Some(901));
        assert_eq!(def.critical, Some(true));
        let names: Vec<_> = def.requires.iter().map(|r| r.module.as_str()).collect();
        assert_eq!(names, ["ingress-nginx", "test"]);
        assert!(!def.requires[0].optional);
        assert!(def.requires[1].optional);
        assert_eq!(def.requires[1].constraint.to_string(), ">v0.22.1");
        assert_eq!(def.kubernetes.unwrap().to_string(), ">= 1.27");
        assert_eq!(
            def.ignored_keys,
            [
                "stage",
                "descriptions",
                "requirements.deckhouse",
                "requirements.bootstrapped"
            ]
        );
    }

    #[test]
    fn an_empty_file_says_nothing() {
        assert_eq!(parse("").unwrap(), ModuleDefinition::default());
        assert_eq!(
            parse("requirements:\n").unwrap(),
            ModuleDefinition::default()
        );
    }

    #[test]
    fn wrong_types_and_bad_constraints_name_the_key() {
        let e = parse("weight: -1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "key 'weight' must be a whole number from 0 to 4294967295"
        );
        let e = parse("requirements:\n  modules:\n    web: '>= 1.y'").unwrap_err();
        assert_eq!(e.to_string(), "requirements.modules.web");
        assert!(matches!(parse("- a"), Err(DefinitionError::NotAMapping)));
        assert!(matches!(
            parse("requirements:\n  modules:\n    Web_1: '1'"),
            Err(DefinitionError::RequiredName { .. })
        ));
    }
}
