//! Tests of what the differential test cannot compare, since gojq answers them on no input: this engine's extensions (docs/hooks.md, "accepted as well"), names neither engine defines, and `halt_error`.

use serde_json::{Value, json};

use super::JqFilter;

fn run(src: &str, input: Value) -> Value {
    JqFilter::compile(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .apply(&input)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn config_map() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "labels": {"z": "1", "a": "2"}}})
}

#[test]
fn jq_functions_gojq_lacks_answer_as_in_jq() {
    let cm = config_map();
    assert_eq!(
        run("{b: 1, a: 2} | keys_unsorted", json!(null)),
        json!(["a", "b"])
    );
    assert_eq!(
        run(".metadata.labels | keys_unsorted", cm.clone()),
        json!(["a", "z"])
    );
    assert_eq!(
        run(
            "[leaf_paths | map(tostring) | join(\".\")]",
            json!({"a": {"b": 1}, "c": [2]})
        ),
        json!(["a.b", "c.0"])
    );
    assert_eq!(run("65 | ascii", json!(null)), json!("A"));
    assert_eq!(
        run("$__loc__", json!(null)),
        json!({"file": "<stdin>", "line": 1})
    );
    assert_eq!(run("isvalid(.kind)?", cm.clone()), json!(true));
    assert_eq!(run("toarray", json!({"a": 1})), json!([{"a": 1}]));
    assert_eq!(
        run("[{k: \"a\", v: 1}] | from_entries", json!(null)),
        json!({"a": 1})
    );
    assert_eq!(run("\"abc\" | reverse", json!(null)), json!("cba"));
}

#[test]
fn base32_formats_round_trip() {
    let cm = config_map();
    assert_eq!(
        run(".metadata.name | @base32", cm.clone()),
        json!("O5SWELLDN5XGM2LH")
    );
    assert_eq!(
        run(".metadata.name | @base32 | @base32d", cm.clone()),
        json!("web-config")
    );
    assert_eq!(
        run("@base32 \"x\\(.kind)\"", cm),
        json!("xINXW4ZTJM5GWC4A=")
    );
}

/// The gojq command defines these; the library shell-operator runs does not, and apply.go gives
/// it no inputs: here they compile, with no input and no output to stderr.
#[test]
fn the_commands_input_and_debug_functions_read_nothing() {
    let cm = config_map();
    assert_eq!(run("[inputs]", cm.clone()), json!([]));
    assert_eq!(
        run("try input catch \"no input\"", cm.clone()),
        json!("no input")
    );
    assert_eq!(run("input_filename", cm.clone()), Value::Null);
    assert_eq!(run("debug | .kind", cm), json!("ConfigMap"));
}

#[test]
fn names_no_engine_defines_are_compile_errors() {
    for src in [
        "floor(3.7)",
        "ascii(65)",
        "splits",
        "input_line_number",
        "have_decnum",
        "[repeat(1; . * 2)]",
        "sort_by(.status; .type)",
        "1709633730 | date",
        "1709633730 | dateadd(\"seconds\"; 3600)",
    ] {
        let err = JqFilter::compile(src).expect_err(src);
        assert_eq!(err.category(), "jq_compile", "{src}: {err}");
    }
}

/// apply.go fails the whole application on `halt_error`, which `try` does not catch.
#[test]
fn halt_error_fails_the_filter_whatever_surrounds_it() {
    for (src, message) in [
        ("\"x\" | halt_error", "x"),
        ("{} | halt_error", "{}"),
        ("try (\"x\" | halt_error) catch \"caught\"", "x"),
    ] {
        let err = JqFilter::compile(src)
            .unwrap()
            .apply(&json!(null))
            .expect_err(src);
        assert!(err.message().starts_with(message), "{src}: {err}");
    }
    let err = JqFilter::compile("\"x\" | ascii")
        .unwrap()
        .apply(&json!(null))
        .expect_err("ascii of a string");
    assert_eq!(err.category(), "jq_apply");
}
