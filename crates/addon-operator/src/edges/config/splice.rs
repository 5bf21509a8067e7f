//! Patches the text of the config file key by key: only the lines of the keys whose value changed
//! are rewritten (at any depth, [`addon_core::yaml_splice`]), so comments, key order, quoting and
//! blank lines everywhere else stay byte for byte. A result that does not parse back to the
//! intended config (an unusual layout, such as a flow mapping `{...}` at the top) is replaced by a
//! full rendering of the config.

use addon_core::yaml::{self, YamlError};
use addon_core::yaml_splice;
use serde_json::{Map, Value};

use addon_core::config_change::ConfigKeyChange;

/// Why a patch could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SpliceError {
    #[error("the config file does not parse as YAML; fix it before the operator can save to it")]
    Parse(#[source] YamlError),
    #[error("the config file must hold a mapping")]
    NotMapping,
    #[error("cannot render config key '{key}'")]
    Render {
        key: String,
        #[source]
        source: YamlError,
    },
}

/// `text` with `change` applied. Untouched keys keep their exact bytes.
pub fn patch_text(text: &str, change: &ConfigKeyChange) -> Result<String, SpliceError> {
    let old = yaml::parse(text).map_err(SpliceError::Parse)?;
    let mut expected = match &old {
        Value::Null => Map::new(),
        Value::Object(map) => map.clone(),
        _ => return Err(SpliceError::NotMapping),
    };
    for (key, value) in change.iter() {
        match value {
            Some(v) => expected.insert(key.to_string(), v.clone()),
            None => expected.remove(key),
        };
    }
    let expected = Value::Object(expected);
    if let Some(spliced) = yaml_splice::splice(text, &old, &expected) {
        return Ok(spliced);
    }
    tracing::info!("the config file's layout cannot be patched in place; rewriting it whole");
    yaml::to_string(&expected).map_err(|source| SpliceError::Render {
        key: "<file>".to_string(),
        source,
    })
}

#[cfg(test)]
mod tests;
