//! The corpus as data: the steps of `corpus.yaml`, the known differences of
//! `known_differences.yaml`, and the `${var}` substitution that makes a step concrete for a server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// One request (or, with `action`, one thing done to the server) and what to compare of its answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// A unique name, used in reports and in the known differences.
    pub id: String,
    /// Which client sends this request and why it matters (documentation only).
    #[serde(default)]
    pub sent_by: Option<String>,
    #[serde(default = "get")]
    pub method: String,
    /// The path with its query, URL-encoded, with `${var}` placeholders.
    #[serde(default)]
    pub path: String,
    /// `Content-Type` of the body (default `application/json`).
    #[serde(default)]
    pub content_type: Option<String>,
    /// `Accept` header (Table and metadata-only views).
    #[serde(default)]
    pub accept: Option<String>,
    /// The body, sent as JSON; strings may hold `${var}` placeholders.
    #[serde(default)]
    pub body: Option<Value>,
    /// Compare only the status code.
    #[serde(default)]
    pub status_only: bool,
    /// Compare the status code and only these selections of the normalised body (see
    /// `normalise::select`); without them the whole normalised body is compared.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// Variables taken from the answer: name → selection of the raw body.
    #[serde(default)]
    pub save: BTreeMap<String, String>,
    /// Repeat the request (up to 60 s) until a selection of the answer has this value.
    #[serde(default)]
    pub until: Option<Until>,
    /// Instead of a request, act on the server.
    #[serde(default)]
    pub action: Option<Action>,
}

fn get() -> String {
    "GET".to_string()
}

/// A condition to poll for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Until {
    pub field: String,
    pub equals: Value,
}

/// What a step can do instead of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Make every resourceVersion handed out so far too old to watch from: etcd compaction on the
    /// real server, the event history forgotten on the emulator.
    Compact,
}

/// A step whose answers differ, and why.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownDifference {
    pub step: String,
    pub reason: String,
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// The steps of `corpus.yaml`, in order.
pub fn steps() -> Vec<Step> {
    let path = here().join("corpus.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let steps: Vec<Step> =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut ids = std::collections::BTreeSet::new();
    for step in &steps {
        assert!(ids.insert(step.id.clone()), "duplicate step id {}", step.id);
    }
    steps
}

/// The differences `docs/kube-emulator.md` lists, from `known_differences.yaml`.
pub fn known_differences() -> Vec<KnownDifference> {
    let path = here().join("known_differences.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str::<Option<Vec<KnownDifference>>>(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .unwrap_or_default()
}

/// `text` with every `${name}` replaced by its value (percent-encoded when `encode`).
pub fn substitute(text: &str, vars: &BTreeMap<String, String>, encode: bool) -> String {
    let mut out = text.to_string();
    for (name, value) in vars {
        let value = if encode {
            percent_encode(value)
        } else {
            value.clone()
        };
        out = out.replace(&format!("${{{name}}}"), &value);
    }
    assert!(!out.contains("${"), "an unknown variable in {text:?}");
    out
}

/// A JSON body with every string substituted.
pub fn substitute_value(value: &Value, vars: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(s) => Value::String(substitute(s, vars, false)),
        Value::Array(items) => items.iter().map(|v| substitute_value(v, vars)).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (substitute(k, vars, false), substitute_value(v, vars)))
            .collect(),
        other => other.clone(),
    }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
