//! Reads a module's `module.yaml` (bounded in size) and its version (the `version` of its
//! `Chart.yaml`) into `addon_core::module_definition` data.

use std::io::Read;
use std::path::Path;

use addon_core::module_definition::{self, DefinitionError, ModuleDefinition, Version};

use super::LoadError;

/// The module definition of the module directory `dir`: empty without a `module.yaml`; a file
/// that cannot be used is an error of the tree; keys that are not acted on are a note.
pub fn load(
    dir: &Path,
    errors: &mut Vec<LoadError>,
    warnings: &mut Vec<String>,
) -> ModuleDefinition {
    let path = dir.join(module_definition::FILE_NAME);
    let mut definition = match read_bounded(&path) {
        Ok(None) => ModuleDefinition::default(),
        Ok(Some(text)) => match module_definition::parse(&text) {
            Ok(definition) => definition,
            Err(source) => {
                errors.push(LoadError::ModuleDefinition {
                    path: path.clone(),
                    source,
                });
                ModuleDefinition::default()
            }
        },
        Err(error) => {
            errors.push(error);
            ModuleDefinition::default()
        }
    };
    if !definition.ignored_keys.is_empty() {
        warnings.push(format!(
            "{}: {} not used by addon-operator and ignored",
            path.display(),
            definition.ignored_keys.join(", ")
        ));
    }
    definition.version = chart_version(dir);
    definition
}

/// The file's text, `None` when it does not exist; a file over the size bound is an error.
fn read_bounded(path: &Path) -> Result<Option<String>, LoadError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LoadError::ReadFile {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let limit = module_definition::MAX_FILE_BYTES;
    let mut text = String::new();
    let read = file
        .take(limit as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|source| LoadError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
    if read > limit {
        return Err(LoadError::ModuleDefinition {
            path: path.to_path_buf(),
            source: DefinitionError::ParseYaml {
                message: format!("the file is larger than {limit} bytes"),
            },
        });
    }
    Ok(Some(text))
}

/// The `version` of the module's `Chart.yaml`, when it has one that reads as a version.
fn chart_version(dir: &Path) -> Option<Version> {
    let text = read_bounded(&dir.join("Chart.yaml")).ok()??;
    let doc = addon_core::yaml::parse(&text).ok()?;
    let version = doc.get("version")?;
    let text = match version {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Version::parse(&text)
}
