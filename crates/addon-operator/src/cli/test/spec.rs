//! The test file format of `addon-operator test`: a YAML file of cases, each naming a hook (or a
//! module's `enabled` script), a binding, a starting state and what is expected.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name a test file ends with.
pub const SUFFIX: &str = ".test.yaml";

/// The most bytes of one test file.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A test file could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{file}: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { file: String },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}:{line}: {message}")]
    Invalid {
        file: String,
        line: usize,
        message: String,
    },
}

/// One test file as written.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestFile {
    /// The hook of every case that names none (default: the hook beside the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// The module of every case that names none (default: the module holding the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    pub cases: Vec<Case>,
}

/// One case.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Run the module's `enabled` script instead of a hook.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enabled_script: bool,
    /// `onStartup`, a lifecycle binding, or the name of a schedule or kubernetes binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<String>,
    /// For a kubernetes binding: `Synchronization` (default), `Added`, `Modified`, `Deleted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventKind>,
    /// The object of an `Added`, `Modified` or `Deleted` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// Objects per kubernetes binding name, as the cluster holds them (before the event).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub snapshots: BTreeMap<String, Vec<Value>>,
    /// Merged over the tree's values (`{"global": ..., "<moduleKey>": ...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Value>,
    /// Replaces the config sections it names (`global`, `<moduleKey>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_values: Option<Value>,
    /// `global.enabledModules` (default: the modules the tree enables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_modules: Option<Vec<String>>,
    /// More environment variables for the run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub expect: Expect,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The event of a kubernetes binding's case.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
pub enum EventKind {
    Synchronization,
    Added,
    Modified,
    Deleted,
}

/// What a case expects; what it leaves out is not checked.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// Compare `values` and `configValues` exactly (default: the expected tree is a subset).
    #[serde(default, skip_serializing_if = "is_false")]
    pub exact: bool,
    /// The values after the hook's patches (`{"global": ..., "<moduleKey>": ...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_values: Option<Value>,
    /// The JSON patch operations the hook wrote, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_patch: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_values_patch: Option<Vec<Value>>,
    /// The Kubernetes operations, in order; each is matched by the fields it states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_operations: Option<Vec<Value>>,
    /// The metric operations, in order; each is matched by the fields it states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<Value>>,
    /// The answer of an `enabled` script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The run fails and its error contains this text (e.g. `exit status 2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// No patch, no Kubernetes operation, no metric.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unchanged: bool,
}

/// A parsed test file and where it is.
#[derive(Debug, Clone)]
pub struct LoadedFile {
    pub path: PathBuf,
    /// The path as shown to the user.
    pub shown: String,
    pub text: String,
    pub file: TestFile,
}

impl LoadedFile {
    /// The 1-based line of case `index`: the line of its `name:` (1 when not found).
    pub fn case_line(&self, index: usize) -> usize {
        let Some(case) = self.file.cases.get(index) else {
            return 1;
        };
        for (n, line) in self.text.lines().enumerate() {
            let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
            if let Some(rest) = trimmed.strip_prefix("name:") {
                let rest = rest.trim().trim_matches(['"', '\'']);
                if rest == case.name {
                    return n + 1;
                }
            }
        }
        1
    }

    /// An error about case `index`, with the file and line.
    pub fn invalid(&self, index: usize, message: impl Into<String>) -> SpecError {
        SpecError::Invalid {
            file: self.shown.clone(),
            line: self.case_line(index),
            message: message.into(),
        }
    }
}

/// Reads and parses a test file; `shown` is its path as printed.
pub fn load(path: &Path, shown: &str) -> Result<LoadedFile, SpecError> {
    let file = shown.to_string();
    let meta = std::fs::metadata(path).map_err(|source| SpecError::Read {
        file: file.clone(),
        source,
    })?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(SpecError::TooLarge { file });
    }
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        file: file.clone(),
        source,
    })?;
    let parsed = parse(&text).map_err(|message| parse_error(&file, &message))?;
    let loaded = LoadedFile {
        path: path.to_path_buf(),
        shown: file,
        text,
        file: parsed,
    };
    check_names(&loaded)?;
    Ok(loaded)
}

/// Parses the text of a test file (the message has the line and column of a mistake).
pub fn parse(text: &str) -> Result<TestFile, String> {
    serde_saphyr::from_str::<TestFile>(text).map_err(|e| e.to_string())
}

/// The parser's message as `file:line: what` when it names a line (its first line only: the
/// rest is a drawing of the text around it).
fn parse_error(file: &str, message: &str) -> SpecError {
    let first = message.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let located = first.strip_prefix("line ").and_then(|rest| {
        let (line, rest) = rest.split_once(" column ")?;
        let (column, what) = rest.split_once(": ")?;
        Some((line.parse().ok()?, column, what))
    });
    match located {
        Some((line, column, what)) => SpecError::Invalid {
            file: file.to_string(),
            line,
            message: format!("{what} (column {column})"),
        },
        None => SpecError::Parse {
            file: file.to_string(),
            message: first.to_string(),
        },
    }
}

/// Case names are non-empty and unique in their file.
fn check_names(loaded: &LoadedFile) -> Result<(), SpecError> {
    let mut seen = std::collections::BTreeSet::new();
    for (index, case) in loaded.file.cases.iter().enumerate() {
        if case.name.trim().is_empty() {
            return Err(loaded.invalid(index, format!("case {} has an empty name", index + 1)));
        }
        if !seen.insert(case.name.as_str()) {
            return Err(loaded.invalid(index, format!("two cases are named '{}'", case.name)));
        }
    }
    Ok(())
}

/// The test files below `paths` (a file is taken as it is), sorted, at most `limit`.
pub fn find(paths: &[PathBuf], limit: usize) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_file() {
            out.push(path.clone());
        } else if path.is_dir() {
            walk(path, &mut out, limit, 0)?;
        } else {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The deepest directory level searched for test files.
const MAX_DEPTH: usize = 16;

fn walk(dir: &Path, out: &mut Vec<PathBuf>, limit: usize, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for entry in entries {
        let is_link = std::fs::symlink_metadata(&entry).is_ok_and(|m| m.is_symlink());
        let name = entry.file_name().map(|n| n.to_string_lossy().into_owned());
        if entry.is_dir() && !is_link {
            walk(&entry, out, limit, depth + 1)?;
        } else if entry.is_file() && name.is_some_and(|n| n.ends_with(SUFFIX)) {
            if out.len() >= limit {
                return Err(format!("more than {limit} test files"));
            }
            out.push(entry);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_case_with_everything_parses() {
        let file = parse(
            r#"
hook: hooks/h
cases:
- name: added
  binding: pods
  event: Added
  object: {kind: Pod, metadata: {name: a}}
  snapshots: {pods: [{kind: Pod, metadata: {name: b}}]}
  values: {web: {a: 1}}
  configValues: {web: {b: 2}}
  enabledModules: [web]
  env: {X: "1"}
  expect:
    exact: true
    values: {web: {a: 1}}
    valuesPatch: [{op: add, path: /web/a, value: 1}]
    kubernetesOperations: [{operation: Delete}]
    metrics: [{name: m}]
    error: exit status 2
"#,
        )
        .unwrap();
        let case = &file.cases[0];
        assert_eq!(case.event, Some(EventKind::Added));
        assert_eq!(case.snapshots["pods"].len(), 1);
        assert_eq!(case.env["X"], "1");
        assert!(case.expect.exact);
        assert_eq!(case.expect.values_patch.as_ref().unwrap()[0]["op"], "add");
        assert_eq!(case.expect.error.as_deref(), Some("exit status 2"));
        assert_eq!(case.values, Some(json!({"web": {"a": 1}})));
    }

    #[test]
    fn an_unknown_field_is_reported_with_its_line() {
        let err = parse("cases:\n- name: a\n  binding: onStartup\n  expekt: {}\n").unwrap_err();
        assert!(err.contains("expekt"), "{err}");
        assert!(err.contains('4'), "the line is named: {err}");
    }

    #[test]
    fn a_parse_error_names_the_file_and_line_on_one_line() {
        let message = parse("cases:\n- name: a\n  bindin: x\n").unwrap_err();
        let err = parse_error("h.test.yaml", &message).to_string();
        assert!(
            err.starts_with("h.test.yaml:3: unknown field `bindin`"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn a_case_line_is_the_line_of_its_name() {
        let text = "cases:\n- name: first\n  binding: a\n- name: 'second'\n  binding: b\n";
        let loaded = LoadedFile {
            path: PathBuf::from("t.test.yaml"),
            shown: "t.test.yaml".into(),
            text: text.into(),
            file: parse(text).unwrap(),
        };
        assert_eq!(loaded.case_line(0), 2);
        assert_eq!(loaded.case_line(1), 4);
        let err = loaded.invalid(1, "no binding 'b'").to_string();
        assert_eq!(err, "t.test.yaml:4: no binding 'b'");
    }

    #[test]
    fn duplicate_case_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.test.yaml");
        std::fs::write(&path, "cases:\n- name: a\n- name: a\n").unwrap();
        let err = load(&path, "h.test.yaml").unwrap_err().to_string();
        assert_eq!(err, "h.test.yaml:2: two cases are named 'a'");
    }

    #[test]
    fn test_files_are_found_below_directories_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("m/tests")).unwrap();
        std::fs::write(d.join("m/tests/b.test.yaml"), "cases: []").unwrap();
        std::fs::write(d.join("m/a.test.yaml"), "cases: []").unwrap();
        std::fs::write(d.join("m/a.yaml"), "cases: []").unwrap();
        let found = find(&[d.to_path_buf()], 10).unwrap();
        assert_eq!(
            found,
            vec![d.join("m/a.test.yaml"), d.join("m/tests/b.test.yaml")]
        );
        assert!(find(&[d.to_path_buf()], 1).is_err());
        assert!(find(&[d.join("nope")], 10).is_err());
    }
}
