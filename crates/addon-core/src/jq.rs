//! jq filters (`jqFilter` of kubernetes bindings, `JQPatch` operations): compiled once with jaq, applied with jq-compatible output.
//!
//! A [`JqFilter`] owns its compiled jaq program behind an `Arc`. The program is a table of terms and
//! native function pointers, so it is `Send + Sync` and can be shared across tasks; jaq's *values*
//! are `Rc`-based, so a filter is always run to completion inside [`JqFilter::apply`] and only
//! `serde_json` values go in and out.

use std::fmt;
use std::sync::Arc;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::{Num, Val};
use serde_json::Value;
use sha2::{Digest, Sha256};

type Program = jaq_core::Filter<data::JustLut<Val>>;

/// A jq program that could not be compiled or failed on an input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JqError {
    #[error("compile jqFilter '{source_text}': {message}")]
    Compile {
        source_text: String,
        message: String,
    },
    #[error("apply jqFilter '{source_text}': {message}")]
    Apply {
        source_text: String,
        message: String,
    },
}

impl JqError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Compile { .. } => "jq_compile",
            Self::Apply { .. } => "jq_apply",
        }
    }
}

/// A compiled jq program together with its source text.
#[derive(Clone)]
pub struct JqFilter {
    source: Arc<str>,
    program: Arc<Program>,
}

impl fmt::Debug for JqFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JqFilter").field(&self.source).finish()
    }
}

impl PartialEq for JqFilter {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl serde::Serialize for JqFilter {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

impl JqFilter {
    /// Compiles `source` with the jq standard library (core, std and JSON definitions).
    pub fn compile(source: &str) -> Result<Self, JqError> {
        let compile_error = |message: String| JqError::Compile {
            source_text: source.to_string(),
            message,
        };
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(
                &arena,
                File {
                    code: source,
                    path: (),
                },
            )
            .map_err(|errs| compile_error(describe_load_errors(errs)))?;
        let program = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errs| compile_error(describe_compile_errors(errs)))?;
        Ok(Self {
            source: Arc::from(source),
            program: Arc::new(program),
        })
    }

    /// The filter as written by the user.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs the filter on `input`. No output gives `null`, one output gives that value, several
    /// outputs give an array of them (the rule shell-operator uses); `halt` ends the outputs.
    pub fn apply(&self, input: &Value) -> Result<Value, JqError> {
        let apply_error = |message: String| JqError::Apply {
            source_text: self.source.to_string(),
            message,
        };
        let input: Val = serde::Deserialize::deserialize(input)
            .map_err(|e: serde_json::Error| apply_error(format!("cannot convert input: {e}")))?;
        let ctx = Ctx::<data::JustLut<Val>>::new(&self.program.lut, Vars::new([]));
        let mut outputs = Vec::new();
        for item in self.program.id.run((ctx, input)) {
            match item {
                Ok(val) => outputs.push(val_to_json(&val)),
                Err(exn) => match exn.get_err() {
                    Ok(err) => return Err(apply_error(err.to_string())),
                    Err(_halt) => break,
                },
            }
        }
        Ok(match outputs.len() {
            0 => Value::Null,
            1 => outputs.pop().unwrap_or(Value::Null),
            _ => Value::Array(outputs),
        })
    }
}

/// The checksum that decides whether an object changed for a binding: of the filter result when
/// the binding has a jqFilter, else of the whole object. Object keys are sorted first, so the
/// checksum does not depend on key order.
pub fn checksum(value: &Value) -> String {
    let mut hasher = Sha256::new();
    write_canonical(value, &mut hasher);
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn write_canonical(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hasher.update(b"{");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    hasher.update(b",");
                }
                hasher.update(Value::String(key.clone()).to_string().as_bytes());
                hasher.update(b":");
                if let Some(v) = map.get(key) {
                    write_canonical(v, hasher);
                }
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    hasher.update(b",");
                }
                write_canonical(item, hasher);
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}

/// Converts a jaq value to JSON the way jq prints it: integral floats become integers, NaN becomes
/// `null`, byte strings and non-string object keys become strings.
fn val_to_json(val: &Val) -> Value {
    match val {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Num(n) => num_to_json(n),
        Val::BStr(b) | Val::TStr(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        Val::Arr(items) => Value::Array(items.iter().map(val_to_json).collect()),
        Val::Obj(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (key_to_string(k), val_to_json(v)))
                .collect(),
        ),
    }
}

fn key_to_string(key: &Val) -> String {
    match key {
        Val::BStr(b) | Val::TStr(b) => String::from_utf8_lossy(b).into_owned(),
        other => val_to_json(other).to_string(),
    }
}

fn num_to_json(n: &Num) -> Value {
    match n {
        Num::Int(i) => Value::from(*i as i64),
        Num::Float(f) => float_to_json(*f),
        Num::BigInt(_) | Num::Dec(_) => {
            let text = n.to_string();
            if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else if let Ok(u) = text.parse::<u64>() {
                Value::from(u)
            } else {
                float_to_json(text.parse::<f64>().unwrap_or(f64::NAN))
            }
        }
    }
}

fn float_to_json(f: f64) -> Value {
    const I64_LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return Value::Null;
    }
    let f = f.clamp(f64::MIN, f64::MAX);
    if f.fract() == 0.0 && f.abs() < I64_LIMIT {
        return Value::from(f as i64);
    }
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn describe_load_errors<P>(errs: jaq_core::load::Errors<&str, P>) -> String {
    use jaq_core::load::Error;
    let mut parts = Vec::new();
    for (_file, err) in errs {
        match err {
            Error::Io(items) => {
                parts.extend(items.into_iter().map(|(path, e)| format!("{path}: {e}")))
            }
            Error::Lex(items) => parts.extend(items.into_iter().map(|(expect, at)| {
                format!("expected {} near '{}'", expect.as_str(), snippet(at))
            })),
            Error::Parse(items) => parts.extend(items.into_iter().map(|(expect, at)| {
                format!("expected {} near '{}'", expect.as_str(), snippet(at))
            })),
        }
    }
    parts.join("; ")
}

fn describe_compile_errors<P>(errs: jaq_core::compile::Errors<&str, P>) -> String {
    errs.into_iter()
        .flat_map(|(_file, items)| items)
        .map(|(name, undefined)| format!("undefined {} '{}'", undefined.as_str(), name))
        .collect::<Vec<_>>()
        .join("; ")
}

fn snippet(at: &str) -> String {
    let s: String = at.chars().take(20).collect();
    if s.is_empty() {
        "end of input".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, input: Value) -> Value {
        JqFilter::compile(src).unwrap().apply(&input).unwrap()
    }

    #[test]
    fn filter_is_shareable_between_threads() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<JqFilter>();
    }

    #[test]
    fn labels_are_selected() {
        let pod = json!({"metadata": {"name": "p", "labels": {"app": "proxy"}}});
        assert_eq!(run(".metadata.labels", pod), json!({"app": "proxy"}));
    }

    #[test]
    fn integral_floats_print_as_integers() {
        assert_eq!(run(".a * 1.0", json!({"a": 5})), json!(5));
        assert_eq!(run(".a / 2", json!({"a": 5})), json!(2.5));
        assert_eq!(run("1.5 + 1.5", json!(null)), json!(3));
    }

    #[test]
    fn no_output_is_null() {
        assert_eq!(run("empty", json!({})), Value::Null);
    }

    #[test]
    fn several_outputs_become_an_array() {
        assert_eq!(
            run(".[]", json!([1, "a", {"b": 2}])),
            json!([1, "a", {"b": 2}])
        );
    }

    #[test]
    fn object_construction_and_arrays_work_like_the_reference_examples() {
        let pod =
            json!({"spec": {"nodeName": "node-01"}, "metadata": {"labels": {"app": "proxy"}}});
        assert_eq!(
            run(
                "{nodeName: .spec.nodeName, name: .metadata.labels}",
                pod.clone()
            ),
            json!({"nodeName": "node-01", "name": {"app": "proxy"}})
        );
        assert_eq!(
            run("[.spec.nodeName, .metadata.labels]", pod),
            json!(["node-01", {"app": "proxy"}])
        );
    }

    #[test]
    fn std_functions_are_available() {
        assert_eq!(run("keys", json!({"b": 1, "a": 2})), json!(["a", "b"]));
        assert_eq!(run("map(. + 1)", json!([1, 2])), json!([2, 3]));
        assert_eq!(run(".a | test(\"^x\")", json!({"a": "xy"})), json!(true));
        assert_eq!(run("tojson", json!({"a": 1})), json!("{\"a\":1}"));
    }

    #[test]
    fn update_assignment_patches_the_object() {
        assert_eq!(
            run(".spec.replicas = 1", json!({"spec": {"replicas": 3}})),
            json!({"spec": {"replicas": 1}})
        );
    }

    #[test]
    fn syntax_error_is_a_compile_error() {
        let err = JqFilter::compile(".metadata.[").unwrap_err();
        assert_eq!(err.category(), "jq_compile");
        assert!(err.to_string().contains(".metadata.["), "{err}");
    }

    #[test]
    fn unknown_function_is_a_compile_error() {
        let err = JqFilter::compile("nosuchfn(1)").unwrap_err();
        assert!(err.to_string().contains("nosuchfn"), "{err}");
    }

    #[test]
    fn runtime_error_is_an_apply_error() {
        let err = JqFilter::compile(".a + 1")
            .unwrap()
            .apply(&json!({"a": "x"}))
            .unwrap_err();
        assert_eq!(err.category(), "jq_apply");
    }

    #[test]
    fn big_integers_survive() {
        assert_eq!(
            run(".", json!(9007199254740993u64)),
            json!(9007199254740993u64)
        );
    }

    #[test]
    fn checksum_ignores_key_order_and_sees_value_changes() {
        assert_eq!(
            checksum(&json!({"a": 1, "b": 2})),
            checksum(&json!({"b": 2, "a": 1}))
        );
        assert_ne!(checksum(&json!({"a": 1})), checksum(&json!({"a": 2})));
        assert_eq!(checksum(&json!(null)).len(), 64);
    }
}

#[cfg(test)]
mod assign_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assignment_into_an_existing_object_works() {
        let f = JqFilter::compile(r#".metadata.labels.x = "y""#).unwrap();
        assert_eq!(
            f.apply(&json!({"metadata": {"labels": {}}})).unwrap(),
            json!({"metadata": {"labels": {"x": "y"}}})
        );
    }

    /// jq 1.6 creates missing objects on assignment; jaq does not (see docs/compatibility.md).
    #[test]
    fn assignment_through_a_missing_path_fails_and_the_documented_workaround_works() {
        let direct = JqFilter::compile(r#".metadata.labels.x = "y""#).unwrap();
        let err = direct
            .apply(&json!({"metadata": {}}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("null"), "{err}");
        let workaround = JqFilter::compile(
            r#".metadata.labels = (.metadata.labels // {}) | .metadata.labels.x = "y""#,
        )
        .unwrap();
        assert_eq!(
            workaround.apply(&json!({"metadata": {}})).unwrap(),
            json!({"metadata": {"labels": {"x": "y"}}})
        );
    }
}
