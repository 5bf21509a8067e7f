//! Expands `$ref`s of a schema in place, as the Go operator's loader does: local pointers
//! (`#/definitions/x`) and relative files (`common.yaml#/definitions/x`), looked up beside the
//! referencing file first, then (as the Go operator resolves them) relative to the process's
//! working directory; never remote documents, never cycles, never unbounded.
//!
//! Files are handed in by the caller: those of the scope's `openapi/` directory by path relative
//! to it, those found through the working directory by [`WORKING_DIR`] + their path relative to
//! it (the caller asks [`working_dir_wants`] which ones to read).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::yaml;

/// The key prefix of files found through the process's working directory.
pub const WORKING_DIR: &str = "$cwd/";

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
    #[error(
        "$ref '{reference}' in {doc} points outside the openapi/ directory and the working directory"
    )]
    OutsideDir { doc: String, reference: String },
    #[error("$ref '{reference}' in {doc}: no file '{file}' beside it nor in the working directory")]
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
            self.locate(doc, reference, file)?
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

    /// The document `file` names from `doc`: beside `doc` when that file is known, else the
    /// one relative to the working directory.
    fn locate(&self, doc: &str, reference: &str, file: &str) -> Result<String, RefError> {
        let known = |key: &String| self.files.contains_key(key) || self.parsed.contains_key(key);
        let [beside, from_cwd] = candidates(doc, file).map_err(|remote| {
            let (doc, reference) = (doc.to_string(), reference.to_string());
            if remote {
                RefError::Remote { doc, reference }
            } else {
                RefError::OutsideDir { doc, reference }
            }
        })?;
        if let Some(found) = [&beside, &from_cwd]
            .into_iter()
            .flatten()
            .find(|k| known(k))
        {
            return Ok(found.clone());
        }
        beside.or(from_cwd).ok_or_else(|| RefError::OutsideDir {
            doc: doc.to_string(),
            reference: reference.to_string(),
        })
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

/// Where `file`, named by `doc`, may be: beside `doc` (in its namespace: `openapi/` or the working
/// directory), and relative to the working directory. `None` for a path that leaves its
/// directory; `Err(true)` for a remote reference, `Err(false)` for an absolute path.
fn candidates(doc: &str, file: &str) -> Result<[Option<String>; 2], bool> {
    if file.contains("://") || file.starts_with('/') {
        return Err(file.contains("://"));
    }
    let (prefix, path) = match doc.strip_prefix(WORKING_DIR) {
        Some(path) => (WORKING_DIR, path),
        None => ("", doc),
    };
    let beside = join(path, file).ok().map(|p| format!("{prefix}{p}"));
    let from_cwd = join("", file).ok().map(|p| format!("{WORKING_DIR}{p}"));
    Ok([beside, from_cwd])
}

/// The working-directory files (as [`WORKING_DIR`] keys) that the file references of `doc`
/// (a document named as in [`expand`]) may need, except those `known` already: the caller
/// reads the ones that exist inside the working directory and asks again for them.
pub fn working_dir_wants(doc: &str, value: &Value, known: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut files = Vec::new();
    collect_file_refs(value, &mut files);
    let mut wants = Vec::new();
    for file in files {
        let Ok([beside, from_cwd]) = candidates(doc, &file) else {
            continue;
        };
        if beside.as_deref().is_some_and(known) {
            continue;
        }
        for key in [beside, from_cwd].into_iter().flatten() {
            if key.starts_with(WORKING_DIR) && !known(&key) && !wants.contains(&key) {
                wants.push(key);
            }
        }
    }
    wants
}

/// The file parts of every `$ref` in `value` (outside data keywords).
fn collect_file_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let file = reference
                    .split_once('#')
                    .map_or(reference.as_str(), |(f, _)| f);
                if !file.is_empty() && !out.iter().any(|f| f == file) {
                    out.push(file.to_string());
                }
            }
            for (key, child) in map {
                if !DATA_KEYS.contains(&key.as_str()) {
                    collect_file_refs(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_file_refs(i, out)),
        _ => {}
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
    fn a_file_not_beside_the_referencing_one_is_taken_from_the_working_directory() {
        // upstream's pkg/values/validation/testdata: `$ref: testdata/...` from the test's cwd
        let mut s = json!({"properties": {
            "external": {"$ref": "testdata/project.yaml"},
            "fragment": {"$ref": "testdata/project-2.yaml#/versions/0/schema"}}});
        let main_wants = working_dir_wants("config-values.yaml", &s, &|_| false);
        assert_eq!(
            main_wants,
            ["$cwd/testdata/project.yaml", "$cwd/testdata/project-2.yaml"]
        );
        let f = files(&[
            (
                "$cwd/testdata/project.yaml",
                "type: object\nproperties: {name: {$ref: 'common.yaml#/n'}}\n",
            ),
            ("$cwd/testdata/common.yaml", "n: {type: string}\n"),
            (
                "$cwd/testdata/project-2.yaml",
                "versions:\n- schema:\n    definitions: {v: {type: number}}\n    properties: {version: {$ref: '#/versions/0/schema/definitions/v'}}\n",
            ),
        ]);
        // the working-directory file's own reference is looked up beside it first
        let project = yaml::parse(&f["$cwd/testdata/project.yaml"]).unwrap();
        let wants = working_dir_wants("$cwd/testdata/project.yaml", &project, &|k| {
            f.contains_key(k)
        });
        assert!(wants.is_empty(), "{wants:?}");
        expand(&mut s, "config-values.yaml", &f).unwrap();
        assert_eq!(
            s["properties"]["external"]["properties"]["name"],
            json!({"type": "string"})
        );
        assert_eq!(
            s["properties"]["fragment"]["properties"]["version"],
            json!({"type": "number"})
        );
    }

    #[test]
    fn a_file_beside_the_referencing_one_wins_over_the_working_directory() {
        let mut s = json!({"$ref": "common.yaml#/t"});
        let f = files(&[
            ("common.yaml", "t: {type: string}\n"),
            ("$cwd/common.yaml", "t: {type: integer}\n"),
        ]);
        expand(&mut s, "values.yaml", &f).unwrap();
        assert_eq!(s, json!({"type": "string"}));
        assert!(
            working_dir_wants("values.yaml", &json!({"$ref": "common.yaml"}), &|k| f
                .contains_key(k))
            .is_empty()
        );
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
