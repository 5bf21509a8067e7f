//! Expands `$ref`s of a schema in place, as the Go operator's loader does: local pointers
//! (`#/definitions/x`) and relative files inside the scope's `openapi/` directory
//! (`common.yaml#/definitions/x`); never remote documents, never cycles, never unbounded.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::yaml;

/// The most `$ref`s one schema may expand (a guard against exponential fan-out).
pub const MAX_REF_EXPANSIONS: usize = 10_000;

/// Keys whose values are data, not schemas: a `$ref` inside them is not a reference.
const DATA_KEYS: [&str; 4] = ["default", "enum", "const", "example"];

/// A `$ref` that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error(
        "$ref '{reference}' in {doc}: remote references are not supported, only files inside openapi/"
    )]
    Remote { doc: String, reference: String },
    #[error("$ref '{reference}' in {doc} points outside the openapi/ directory")]
    OutsideDir { doc: String, reference: String },
    #[error("$ref '{reference}' in {doc}: no file '{file}' in the openapi/ directory")]
    MissingFile {
        doc: String,
        reference: String,
        file: String,
    },
    #[error("$ref '{reference}' in {doc}: cannot parse '{file}': {message}")]
    ParseFile {
        doc: String,
        reference: String,
        file: String,
        message: String,
    },
    #[error("$ref '{reference}' in {doc}: nothing at that location")]
    MissingTarget { doc: String, reference: String },
    #[error("recursive $ref: {}", chain.join(" -> "))]
    Recursive { chain: Vec<String> },
    #[error("more than {MAX_REF_EXPANSIONS} $ref expansions")]
    TooMany,
}

/// Expands every `$ref` in `schema`, the document `main` (its file name inside `openapi/`).
/// `files` holds the other files of `openapi/` by path relative to it (`common/types.yaml`).
pub fn expand(
    schema: &mut Value,
    main: &str,
    files: &BTreeMap<String, String>,
) -> Result<(), RefError> {
    let mut resolver = Resolver {
        files,
        parsed: BTreeMap::new(),
        stack: Vec::new(),
        budget: MAX_REF_EXPANSIONS,
    };
    resolver.parsed.insert(main.to_string(), schema.clone());
    resolver.walk(main, schema)
}

struct Resolver<'a> {
    files: &'a BTreeMap<String, String>,
    parsed: BTreeMap<String, Value>,
    /// `doc#pointer` of the references being expanded, outermost first.
    stack: Vec<String>,
    budget: usize,
}

impl Resolver<'_> {
    fn walk(&mut self, doc: &str, node: &mut Value) -> Result<(), RefError> {
        match node {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref") {
                    let reference = reference.clone();
                    *node = self.resolve(doc, &reference)?;
                    return Ok(());
                }
                for (key, child) in map.iter_mut() {
                    if !DATA_KEYS.contains(&key.as_str()) {
                        self.walk(doc, child)?;
                    }
                }
                Ok(())
            }
            Value::Array(items) => items.iter_mut().try_for_each(|i| self.walk(doc, i)),
            _ => Ok(()),
        }
    }

    fn resolve(&mut self, doc: &str, reference: &str) -> Result<Value, RefError> {
        let (file, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let target_doc = if file.is_empty() {
            doc.to_string()
        } else {
            join(doc, file).map_err(|remote| {
                let (doc, reference) = (doc.to_string(), reference.to_string());
                if remote {
                    RefError::Remote { doc, reference }
                } else {
                    RefError::OutsideDir { doc, reference }
                }
            })?
        };
        let key = format!("{target_doc}#{pointer}");
        if let Some(start) = self.stack.iter().position(|k| k == &key) {
            let mut chain = self.stack[start..].to_vec();
            chain.push(key);
            return Err(RefError::Recursive { chain });
        }
        self.budget = self.budget.checked_sub(1).ok_or(RefError::TooMany)?;
        let mut target = self
            .load(doc, reference, &target_doc)?
            .pointer(pointer)
            .cloned()
            .ok_or_else(|| RefError::MissingTarget {
                doc: doc.to_string(),
                reference: reference.to_string(),
            })?;
        self.stack.push(key);
        let walked = self.walk(&target_doc, &mut target);
        self.stack.pop();
        walked.map(|()| target)
    }

    fn load(&mut self, doc: &str, reference: &str, file: &str) -> Result<&Value, RefError> {
        if !self.parsed.contains_key(file) {
            let text = self.files.get(file).ok_or_else(|| RefError::MissingFile {
                doc: doc.to_string(),
                reference: reference.to_string(),
                file: file.to_string(),
            })?;
            let value = yaml::parse(text).map_err(|e| RefError::ParseFile {
                doc: doc.to_string(),
                reference: reference.to_string(),
                file: file.to_string(),
                message: e.to_string(),
            })?;
            self.parsed.insert(file.to_string(), value);
        }
        self.parsed.get(file).ok_or(RefError::TooMany)
    }
}

/// `file` relative to the directory of `doc`, normalised; `Err(true)` for a remote reference,
/// `Err(false)` for a path that leaves the `openapi/` directory.
fn join(doc: &str, file: &str) -> Result<String, bool> {
    if file.contains("://") || file.starts_with('/') || file.starts_with("//") {
        return Err(file.contains("://"));
    }
    let mut parts: Vec<&str> = doc.split('/').collect();
    parts.pop();
    for part in file.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or(false)?;
            }
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn local_and_file_references_are_inlined() {
        let mut s = json!({"definitions": {"port": {"type": "integer"}},
            "properties": {"a": {"$ref": "#/definitions/port"},
                           "b": {"$ref": "common/types.yaml#/name"}}});
        let f = files(&[(
            "common/types.yaml",
            "name: {$ref: '#/base'}\nbase: {type: string}\n",
        )]);
        expand(&mut s, "config-values.yaml", &f).unwrap();
        assert_eq!(s["properties"]["a"], json!({"type": "integer"}));
        assert_eq!(s["properties"]["b"], json!({"type": "string"}));
    }

    #[test]
    fn recursive_references_are_reported_with_their_chain() {
        let mut s = json!({"definitions": {"node": {"properties": {"child": {"$ref": "#/definitions/node"}}}},
            "properties": {"root": {"$ref": "#/definitions/node"}}});
        let err = expand(&mut s, "values.yaml", &BTreeMap::new()).unwrap_err();
        assert!(matches!(err, RefError::Recursive { .. }), "{err}");
        assert!(
            err.to_string().contains("values.yaml#/definitions/node"),
            "{err}"
        );
        let mut s = json!({"$ref": "#"});
        assert!(matches!(
            expand(&mut s, "values.yaml", &BTreeMap::new()),
            Err(RefError::Recursive { .. })
        ));
    }

    #[test]
    fn remote_and_escaping_references_are_refused() {
        for (reference, remote) in [
            ("https://example.com/s.json", true),
            ("../../etc/passwd", false),
            ("/etc/passwd", false),
        ] {
            let mut s = json!({"properties": {"a": {"$ref": reference}}});
            let err = expand(&mut s, "values.yaml", &BTreeMap::new()).unwrap_err();
            if remote {
                assert!(matches!(err, RefError::Remote { .. }), "{err}");
            } else {
                assert!(matches!(err, RefError::OutsideDir { .. }), "{err}");
            }
        }
    }

    #[test]
    fn fan_out_is_bounded() {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for i in 1..30 {
            let prev = format!("#/definitions/d{}", i - 1);
            defs.insert(
                format!("d{i}"),
                json!({"properties": {"a": {"$ref": prev}, "b": {"$ref": prev}}}),
            );
        }
        let mut s =
            json!({"definitions": defs, "properties": {"x": {"$ref": "#/definitions/d29"}}});
        let err = expand(&mut s, "values.yaml", &BTreeMap::new()).unwrap_err();
        assert_eq!(err, RefError::TooMany);
    }

    #[test]
    fn a_ref_inside_a_default_is_data() {
        let mut s = json!({"properties": {"a": {"default": {"$ref": "nowhere"}}}});
        expand(&mut s, "values.yaml", &BTreeMap::new()).unwrap();
        assert_eq!(s["properties"]["a"]["default"], json!({"$ref": "nowhere"}));
    }
}
