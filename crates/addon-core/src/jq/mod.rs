//! jq filters (`jqFilter` of kubernetes bindings, `JQPatch` operations) with gojq's semantics, the engine flant/shell-operator evaluates them with.
//!
//! The engine is the project's own (docs/adr/0002-jq-engine.md): a parser ([`parse`]), name
//! resolution ([`resolve`]), a continuation-passing evaluator ([`eval`]: values, path
//! expressions in `eval/path.rs`, operators in `eval/ops.rs`) and gojq's builtins
//! (`eval/builtins/`, one file per family, and the jq-written [`prelude.jq`](prelude.jq)). A [`JqFilter`] owns its syntax tree behind an `Arc`:
//! the tree holds only `Send + Sync` data, so a filter is shared across tasks; values are
//! `Rc`-based, so a filter runs to completion inside [`JqFilter::apply`] and only `serde_json`
//! values go in and out.
//!
//! Untrusted filters are bounded here as far as a pure library can: [`JqFilter::compile`] rejects
//! text longer than [`MAX_FILTER_BYTES`] or nested deeper than [`MAX_FILTER_NESTING`] before the
//! parser sees it, and compiles on a thread with a [`COMPILE_STACK_BYTES`] stack, so the parser's
//! recursion always fits; [`JqFilter::apply_bounded`] stops after a number of outputs or bytes.
//! A filter can still loop forever, recurse at run time or allocate without end: the operator
//! evaluates filters in a sandbox process (`addon-operator` `jq_sandbox`) where that costs one
//! evaluation, never the process.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

mod ast;
mod encode;
mod eval;
#[cfg(test)]
mod extension_tests;
mod lex;
#[cfg(test)]
mod optional_tests;
mod parse;
mod projection;
#[cfg(test)]
mod projection_tests;
mod resolve;
pub use resolve::ResolveError;
mod value;

use eval::{Ctx, Env, Flow};
use value::Val;

/// A compiled program: the filter's tree, its names resolved against the prelude and the natives.
struct Program {
    main: ast::Ast,
    prelude: Arc<Vec<ast::FuncDef>>,
}

/// The longest filter text accepted, in bytes.
pub const MAX_FILTER_BYTES: usize = 16 * 1024;
/// The deepest nesting accepted: brackets open at once plus every keyword or prefix operator
/// that nests the rest of the filter (`if`, `try`, `reduce`, `foreach`, `label`, `def`, `as`,
/// `elif`, `?`, unary `-`).
pub const MAX_FILTER_NESTING: usize = 256;
/// The stack of the thread that parses and compiles a filter: the worst filter within the limits
/// above needs about 100 MB in a debug build (measured in the tests below), far less in a
/// release build; only the pages touched are ever allocated.
pub const COMPILE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Bounds on one evaluation: how many outputs and how many bytes of JSON text they may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JqLimits {
    pub max_outputs: usize,
    pub max_output_bytes: usize,
}

impl Default for JqLimits {
    fn default() -> Self {
        Self {
            max_outputs: 10_000,
            max_output_bytes: 16 * 1024 * 1024,
        }
    }
}

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
    /// A bound of [`JqLimits`], the sandbox deadline or its memory was exceeded.
    #[error("apply jqFilter '{source_text}': {message}")]
    Limit {
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
            Self::Limit { .. } => "jq_limit",
        }
    }

    /// An evaluation error of `source` reported by another process (the text is shortened).
    pub fn apply_failed(source: &str, message: impl Into<String>) -> Self {
        Self::Apply {
            source_text: quote(source),
            message: message.into(),
        }
    }

    /// The message without the filter text.
    pub fn message(&self) -> &str {
        match self {
            Self::Compile { message, .. }
            | Self::Apply { message, .. }
            | Self::Limit { message, .. } => message,
        }
    }

    /// A limit error for `source` (the text is shortened in the message).
    pub fn limit(source: &str, message: impl Into<String>) -> Self {
        Self::Limit {
            source_text: quote(source),
            message: message.into(),
        }
    }
}

/// The filter as quoted in errors: at most 80 characters, so the reason after it survives the
/// 256-byte quotes of hook problems.
fn quote(source: &str) -> String {
    shorten(source, 80)
}

/// At most `max` characters of `text`, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Why a filter did not compile (shown, shortened, as the message of [`JqError::Compile`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileFailure {
    #[error("the filter is {len} bytes long, more than the limit of {MAX_FILTER_BYTES}")]
    TooLong { len: usize },
    #[error("the filter nests {nesting} levels deep, more than the limit of {MAX_FILTER_NESTING}")]
    TooDeep { nesting: usize },
    #[error("cannot start the compiler thread: {message}")]
    Thread { message: String },
    #[error("the compiler failed")]
    Crashed,
    /// Parse errors, as the parser reports them.
    #[error("{0}")]
    Program(String),
    /// Undefined names.
    #[error(transparent)]
    Resolve(#[from] resolve::ResolveError),
}

/// A compiled jq program together with its source text.
#[derive(Clone)]
pub struct JqFilter {
    source: Arc<str>,
    program: Arc<Program>,
    /// The filter as a projection, when it is one (`projection.rs`): evaluated in process.
    projection: Option<Arc<projection::Projection>>,
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
    /// Compiles `source` with the jq standard library (core, std and JSON definitions), after
    /// checking it against [`MAX_FILTER_BYTES`] and [`MAX_FILTER_NESTING`]; parsing runs on a
    /// thread with a [`COMPILE_STACK_BYTES`] stack.
    pub fn compile(source: &str) -> Result<Self, JqError> {
        let compile_error = |failure: CompileFailure| JqError::Compile {
            source_text: quote(source),
            message: shorten(&failure.to_string(), 500),
        };
        check_shape(source).map_err(compile_error)?;
        let program = compile_on_big_stack(source).map_err(compile_error)?;
        let projection = projection::Projection::of(&program.main).map(Arc::new);
        Ok(Self {
            source: Arc::from(source),
            program: Arc::new(program),
            projection,
        })
    }
}

/// Runs [`compile_program`] on a scoped thread with a [`COMPILE_STACK_BYTES`] stack.
fn compile_on_big_stack(source: &str) -> Result<Program, CompileFailure> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("jq-compile".to_string())
            .stack_size(COMPILE_STACK_BYTES)
            .spawn_scoped(scope, || compile_program(source))
            .map_err(|e| CompileFailure::Thread {
                message: e.to_string(),
            })?;
        handle.join().map_err(|_| CompileFailure::Crashed)?
    })
}

/// Rejects text that is too long or nested too deep for the parser's recursion.
pub fn check_shape(source: &str) -> Result<(), CompileFailure> {
    if source.len() > MAX_FILTER_BYTES {
        return Err(CompileFailure::TooLong { len: source.len() });
    }
    let nesting = nesting(source);
    if nesting > MAX_FILTER_NESTING {
        return Err(CompileFailure::TooDeep { nesting });
    }
    Ok(())
}

/// An upper bound of how deep the parser recurses: the most brackets open at once plus every
/// nesting keyword and prefix operator (counted even inside strings: over-counting only makes
/// the bound safer).
fn nesting(source: &str) -> usize {
    const KEYWORDS: &[&str] = &[
        "if", "elif", "try", "reduce", "foreach", "label", "def", "as",
    ];
    let (mut open, mut max_open, mut prefixes) = (0usize, 0usize, 0usize);
    let mut word = String::new();
    for c in source.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if KEYWORDS.contains(&word.as_str()) {
            prefixes += 1;
        }
        word.clear();
        match c {
            '(' | '[' | '{' => {
                open += 1;
                max_open = max_open.max(open);
            }
            ')' | ']' | '}' => open = open.saturating_sub(1),
            '-' | '?' => prefixes += 1,
            _ => {}
        }
    }
    max_open + prefixes
}

fn compile_program(source: &str) -> Result<Program, CompileFailure> {
    let prelude = resolve::prelude()?;
    let mut main = parse::parse(source).map_err(|e| CompileFailure::Program(e.0))?;
    resolve::resolve(&mut main, &prelude)?;
    Ok(Program { main, prelude })
}

impl JqFilter {
    /// The filter as written by the user.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs the filter on `input` with the default [`JqLimits`]. No output gives `null`, one
    /// output gives that value, several outputs give an array of them (the rule shell-operator
    /// uses); `halt` ends the outputs. The filter sees `input` as upstream's filters see an
    /// object of the API: an integer outside `i64` is a float (`Val::from_api_object`).
    pub fn apply(&self, input: &Value) -> Result<Value, JqError> {
        self.apply_bounded(input, &JqLimits::default())
    }

    /// Whether the filter is a projection (`.a.b`, `{name: .metadata.name}`, `[.a, .b]`), which
    /// [`JqFilter::apply_projection`] evaluates without the interpreter.
    pub fn is_projection(&self) -> bool {
        self.projection.is_some()
    }

    /// What [`JqFilter::apply`] gives on `input`, computed directly on `input` when the filter
    /// is a projection; `None` when it is not one or this fast path cannot tell the result
    /// exactly (an error, a number that is not an `i64`, an output over the limits). Safe to run
    /// in this process: a projection cannot loop, recurse or build more than copies of its input.
    pub fn apply_projection(&self, input: &Value) -> Option<Value> {
        self.apply_projection_bounded(input, &JqLimits::default())
    }

    /// [`JqFilter::apply_projection`] that gives `None` once the output exceeds `limits`.
    pub fn apply_projection_bounded(&self, input: &Value, limits: &JqLimits) -> Option<Value> {
        self.projection.as_ref()?.apply(input, limits)
    }

    /// [`JqFilter::apply`] that fails once the outputs exceed `limits`.
    pub fn apply_bounded(&self, input: &Value, limits: &JqLimits) -> Result<Value, JqError> {
        let apply_error = |message: String| JqError::Apply {
            source_text: quote(&self.source),
            message,
        };
        let input = Val::from_api_object(input);
        let ctx = Ctx::new(&self.program.prelude);
        let mut outputs = Vec::new();
        let mut bytes = 0usize;
        let mut limit_error = None;
        let result = ctx.eval(&self.program.main, &Env::default(), input, &mut |val| {
            let value = val.to_json();
            bytes = bytes.saturating_add(json_size(&value));
            outputs.push(value);
            if let Err(e) = self.check_outputs(outputs.len(), bytes, limits) {
                limit_error = Some(e);
                return Err(Flow::Halt);
            }
            Ok(())
        });
        if let Some(e) = limit_error {
            return Err(e);
        }
        match result {
            Ok(()) | Err(Flow::Halt) => {}
            Err(Flow::Limit(message)) => return Err(JqError::limit(&self.source, message)),
            Err(Flow::Error(v)) | Err(Flow::HaltError(v)) => {
                return Err(apply_error(error_message(&v)));
            }
            Err(Flow::Break(_)) => return Err(apply_error("break without a label".into())),
            Err(Flow::Pass(..)) => return Err(apply_error("internal control flow escaped".into())),
        }
        Ok(match outputs.len() {
            0 => Value::Null,
            1 => outputs.pop().unwrap_or(Value::Null),
            _ => Value::Array(outputs),
        })
    }
}

/// The text of a jq error value: a string as it is, anything else as JSON with its type.
fn error_message(v: &Val) -> String {
    match v {
        Val::Str(s) => s.to_string(),
        Val::Null => "null (null)".to_string(),
        other => format!("{} (not a string)", encode::to_json_text(other)),
    }
}

impl JqFilter {
    fn check_outputs(&self, count: usize, bytes: usize, limits: &JqLimits) -> Result<(), JqError> {
        if count > limits.max_outputs {
            return Err(JqError::limit(
                &self.source,
                format!("more than {} outputs", limits.max_outputs),
            ));
        }
        if bytes > limits.max_output_bytes {
            return Err(JqError::limit(
                &self.source,
                format!("outputs larger than {} bytes", limits.max_output_bytes),
            ));
        }
        Ok(())
    }
}

/// The length of `value` as compact JSON text, without building the text.
pub fn json_size(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The checksum that decides whether an object changed for a binding: of the filter result when
/// the binding has a jqFilter, else of the whole object. Object keys are sorted first, so the
/// checksum does not depend on key order. It is the first 128 bits of a SHA-256: a number, not
/// text, since a binding keeps one per watched object only to compare it.
pub fn checksum(value: &Value) -> u128 {
    let mut hasher = Sha256::new();
    write_canonical(value, &mut hasher);
    let digest = hasher.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(first)
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

    /// shell-operator (1.16.5 and later) hands gojq the object as apimachinery decoded it: an
    /// integer within int64 exact, any other a float64 (docs/hooks.md, "Numbers in the input").
    #[test]
    fn input_integers_are_exact_within_int64_and_floats_beyond_as_upstream_decodes_them() {
        assert_eq!(
            run(". + 0 | tostring", json!(9007199254740993u64)),
            json!("9007199254740993")
        );
        assert_eq!(
            run("tostring", json!(i64::MAX)),
            json!("9223372036854775807")
        );
        let wide = json!(12345678901234567890u64);
        assert_eq!(run("tostring", wide.clone()), json!("12345678901234567000"));
        assert_eq!(run(". + 1 == .", wide.clone()), json!(true));
        // The filter's own integers stay exact beyond 64 bits, as in gojq.
        assert_eq!(
            run("12345678901234567890 + 1 | tostring", wide),
            json!("12345678901234567891")
        );
    }

    #[test]
    fn checksum_ignores_key_order_and_sees_value_changes() {
        assert_eq!(
            checksum(&json!({"a": 1, "b": 2})),
            checksum(&json!({"b": 2, "a": 1}))
        );
        assert_ne!(checksum(&json!({"a": 1})), checksum(&json!({"a": 2})));
        // the first half of sha256("null")
        assert_eq!(checksum(&json!(null)), 0x74234e98afe7498fb5daf1f36ac2d78a);
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

    /// gojq (and jq) create missing parents on assignment and read missing paths as null.
    #[test]
    fn assignment_through_a_missing_path_creates_the_parents() {
        let run = |src: &str, input: Value| JqFilter::compile(src).unwrap().apply(&input).unwrap();
        assert_eq!(
            run(r#".metadata.labels.x = "y""#, json!({"metadata": {}})),
            json!({"metadata": {"labels": {"x": "y"}}})
        );
        assert_eq!(
            run(".spec.replicas = 1", json!({"data": {}})),
            json!({"data": {}, "spec": {"replicas": 1}})
        );
        assert_eq!(run(".a.b |= . + 1", json!({})), json!({"a": {"b": 1}}));
        assert_eq!(
            run("del(.metadata.labels.foo)", json!({"metadata": {}})),
            json!({"metadata": {}})
        );
        assert_eq!(run(".spec.x[1:3]", json!({})), Value::Null);
        assert_eq!(run("null | .[2] = 1", json!(null)), json!([null, null, 1]));
    }
}

#[cfg(test)]
mod gojq_semantics_tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, input: Value) -> Value {
        JqFilter::compile(src).unwrap().apply(&input).unwrap()
    }

    #[test]
    fn objects_iterate_in_sorted_key_order() {
        let labels = json!({"metadata": {"labels": {"zz": "1", "app": "p", "tier": "w"}}});
        assert_eq!(
            run(
                r#".metadata.labels | to_entries | map("\(.key)=\(.value)") | join(",")"#,
                labels.clone()
            ),
            json!("app=p,tier=w,zz=1")
        );
        assert_eq!(
            run("[.metadata.labels[]]", labels.clone()),
            json!(["p", "w", "1"])
        );
        assert_eq!(
            run(".metadata.labels | tojson", labels),
            json!(r#"{"app":"p","tier":"w","zz":"1"}"#)
        );
    }

    #[test]
    fn numbers_follow_gojq() {
        assert_eq!(run("1.0 | tostring", json!(null)), json!("1"));
        assert_eq!(run("pow(2;10) | tostring", json!(null)), json!("1024"));
        assert_eq!(run("1.5e300 | tostring", json!(null)), json!("1.5e+300"));
        assert_eq!(run("5.5 % 2", json!(null)), json!(1));
        assert_eq!(
            run(". + 1", json!(9007199254740993u64)),
            json!(9007199254740994u64)
        );
        let err = JqFilter::compile("1 / 0")
            .unwrap()
            .apply(&json!(null))
            .unwrap_err();
        assert!(err.to_string().contains("divide"), "{err}");
    }

    #[test]
    fn builtins_of_gojq_exist() {
        assert_eq!(
            run(r#"["a,b", 1, null] | @csv"#, json!(null)),
            json!(r#""a,b",1,"#)
        );
        assert_eq!(run(r#"["a", "b"] | @tsv"#, json!(null)), json!("a\tb"));
        assert_eq!(run("IN(1, 2)", json!(2)), json!(true));
        assert_eq!(
            run("[tostream] | fromstream(.[])", json!({"a": [1]})),
            json!({"a": [1]})
        );
        assert_eq!(run("$ENV", json!(null)), json!({}));
        assert_eq!(run("env", json!(null)), json!({}));
        assert_eq!(
            run(". as [$a] ?// $a | $a", json!({"x": 1})),
            json!({"x": 1})
        );
        assert_eq!(run(r#"test("\\p{L}")"#, json!("é")), json!(true));
        assert_eq!(run("@base64d", json!("YWI")), json!("ab"));
        assert_eq!(run(".[1]", json!("abc")), json!("b"));
    }

    /// gojq's `//` does not catch an error of its left side (jq's does): the filter fails.
    #[test]
    fn an_error_left_of_the_alternative_operator_stands() {
        let apply = |src: &str, input: Value| JqFilter::compile(src).unwrap().apply(&input);
        let mixed = json!([{"a": 1}, 2, {"a": 3}]);
        for src in [
            r#"[.[] | .a // "d"]"#,
            r#"[(1, error("x")) // "y"]"#,
            r#"error(null) // "x""#,
            "[path(.[1].a // .[0].b)]",
        ] {
            assert!(apply(src, mixed.clone()).is_err(), "{src}");
        }
        assert_eq!(
            run(r#"try ((1 | .a) // "y") catch "failed""#, json!(null)),
            json!("failed")
        );
        assert_eq!(
            run(r#"[.[] | .a? // "d"]"#, mixed.clone()),
            json!([1, "d", 3])
        );
        assert_eq!(
            run("[path(.[0].a // .[0].b)]", mixed.clone()),
            json!([[0, "a"]])
        );
        assert_eq!(run(r#"[.[0].a // error("no")]"#, mixed), json!([1]));
    }

    #[test]
    fn other_semantics_follow_gojq() {
        assert_eq!(run(r#"join("-")"#, json!([null, "a", 1])), json!("-a-1"));
        assert_eq!(
            run("from_entries", json!([{"name": "a", "value": 1}])),
            json!({"a": 1})
        );
        assert_eq!(
            run(r#"capture("(?<x>a)(?<y>z)?")"#, json!("ab")),
            json!({"x": "a", "y": null})
        );
        assert_eq!(run("pick(.[1][0])", json!([1, [2]])), json!([null, [2]]));
        assert!(
            JqFilter::compile("halt_error")
                .unwrap()
                .apply(&json!("x"))
                .is_err()
        );
        assert_eq!(run("halt", json!(1)), Value::Null);
        assert_eq!(run("1, 2", json!(null)), json!([1, 2]));
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;
    use serde_json::json;

    fn compile_error(src: &str) -> String {
        JqFilter::compile(src).unwrap_err().to_string()
    }

    #[test]
    fn ten_thousand_nested_parens_are_rejected_before_parsing() {
        let src = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        let err = compile_error(&src);
        assert!(err.contains("bytes long"), "{err}");
        assert!(err.len() < 400, "the error quotes a short prefix: {err}");
        let src = format!("{}1{}", "(".repeat(8_000), ")".repeat(8_000));
        assert!(compile_error(&src).contains("nests 8000 levels"));
    }

    #[test]
    fn filters_longer_than_the_limit_are_rejected() {
        let src = vec![".a"; MAX_FILTER_BYTES].join("|");
        assert!(compile_error(&src).contains("bytes long"));
    }

    #[test]
    fn prefix_operators_and_keywords_count_as_nesting() {
        assert!(compile_error(&format!("{}1", "-".repeat(300))).contains("nests"));
        assert!(compile_error(&format!("{}1", "try ".repeat(300))).contains("nests"));
        assert!(compile_error(&format!("1{}", "?".repeat(300))).contains("nests"));
    }

    /// The worst filters within the limits compile on the compiler thread (in a debug build too).
    #[test]
    fn the_deepest_filters_within_the_limits_compile() {
        let depth = MAX_FILTER_NESTING / 2;
        let parens = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
        let ifs = format!(
            "{}1{}",
            "if . then ".repeat(depth),
            " else 0 end".repeat(depth)
        );
        let negs = format!("{}1", "-".repeat(MAX_FILTER_NESTING));
        let nested_chain = format!(
            "{}{}{}",
            "[".repeat(MAX_FILTER_NESTING - 1),
            vec!["1"; (MAX_FILTER_BYTES - 2 * MAX_FILTER_NESTING) / 3].join("//"),
            "]".repeat(MAX_FILTER_NESTING - 1)
        );
        for src in [parens, ifs, negs, nested_chain] {
            assert!(src.len() <= MAX_FILTER_BYTES);
            JqFilter::compile(&src).unwrap();
        }
        for op in ["|", ",", "+", "//", " and "] {
            let chain = vec!["1"; MAX_FILTER_BYTES / (op.len() + 1)].join(op);
            JqFilter::compile(&chain).unwrap();
        }
    }

    #[test]
    fn endless_outputs_stop_at_the_output_limit() {
        for src in [
            "repeat(1)",
            "range(0; infinite)",
            "[limit(3; repeat(1))], repeat(2)",
        ] {
            let err = JqFilter::compile(src)
                .unwrap()
                .apply(&json!(null))
                .unwrap_err();
            assert_eq!(err.category(), "jq_limit", "{src}: {err}");
            assert!(err.to_string().contains("outputs"), "{err}");
        }
    }

    #[test]
    fn large_outputs_stop_at_the_byte_limit() {
        let limits = JqLimits {
            max_outputs: 100,
            max_output_bytes: 1000,
        };
        let f = JqFilter::compile("[range(1000)]").unwrap();
        let err = f.apply_bounded(&json!(null), &limits).unwrap_err();
        assert!(err.to_string().contains("1000 bytes"), "{err}");
        assert_eq!(json_size(&json!({"a": [1, 2]})), r#"{"a":[1,2]}"#.len());
    }
}
