//! Tests of `?` and `try` in every form the parser accepts: gojq's scope of a postfix `?` (its last suffix only) and how an error ends a `try` body; each expected answer is gojq 0.12.11's.

use serde_json::{Value, json};

use super::JqFilter;

fn run(src: &str, input: Value) -> Value {
    JqFilter::compile(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .apply(&input)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn fails(src: &str, input: Value) -> String {
    match JqFilter::compile(src).unwrap().apply(&input) {
        Ok(v) => panic!("{src} gave {v} where gojq fails"),
        Err(e) => e.to_string(),
    }
}

/// A Pod whose first container has no `args` (issue 40).
fn pod() -> Value {
    json!({"kind": "Pod", "spec": {
        "initContainers": [{"name": "init", "args": ["--once"]}],
        "containers": [{"name": "a"}, {"name": "b", "args": ["x y", "z"]}, {"name": "c"}]
    }})
}

/// Objects, a number, objects: `.a` fails on the second item only.
fn mixed() -> Value {
    json!([{"a": 1}, 2, {"a": 3}])
}

#[test]
fn an_error_on_the_first_container_skips_only_that_container() {
    assert_eq!(
        run("[.spec.containers[]?.args[]?] | @sh", pod()),
        json!("'x y' 'z'")
    );
    assert_eq!(
        run("[.spec.containers[].args[]?]", pod()),
        json!(["x y", "z"])
    );
    assert_eq!(
        run(
            "[.spec.initContainers[]?, .spec.containers[]? | .args[]?]",
            pod()
        ),
        json!(["--once", "x y", "z"])
    );
    assert_eq!(
        run("[.spec.containers[] | .args[]?]", pod()),
        json!(["x y", "z"])
    );
    assert_eq!(
        run("[.spec.containers[] | try .args[]]", pod()),
        json!(["x y", "z"])
    );
    assert_eq!(
        run("[.spec.containers[].args | .[]?]", pod()),
        json!(["x y", "z"])
    );
}

#[test]
fn question_mark_after_iterate_covers_only_that_iterate() {
    let nested = json!([1, [2], 3, [4]]);
    assert_eq!(run("[.[]?[]?]", nested.clone()), json!([2, 4]));
    assert_eq!(run("[.[][]?]", nested.clone()), json!([2, 4]));
    assert_eq!(run("[.[]?]", json!(1)), json!([]));
    assert_eq!(run("[.[]?]", json!({"a": 1})), json!([1]));
    assert_eq!(run("[..[]?]", json!([[1], 2])), json!([[1], 2, 1]));
    assert_eq!(
        run("[limit(2; .[][]?)]", json!([1, [2], 3, [4], [5]])),
        json!([2, 4])
    );
    assert_eq!(run("first(.[][]?)", json!([1, [2], 3, [4]])), json!(2));
    let values = json!({"x": {"a": [1]}, "y": {"a": 2}, "z": {"a": [3]}});
    assert_eq!(run("[.[].a[]?]", values), json!([1, 3]));
}

#[test]
fn question_mark_after_a_field_covers_only_that_field() {
    assert_eq!(run("[.[].a?]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[]?.a?]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[][\"a\"]?]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[].\"a\"?]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[].\"\\(\"a\")\"?]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[].a??]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[] | .a?]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[].a? // \"d\"]", mixed()), json!([1, 3]));
    assert_eq!(run("[.[] | .a? // \"d\"]", mixed()), json!([1, "d", 3]));
    let deep = json!([{"a": {"b": {"c": 1}}}, {"a": 1}, {"a": {"b": 2}}, {"a": {"b": {"c": 3}}}]);
    assert_eq!(run("[.[].a?.b?.c?]", deep.clone()), json!([1, 3]));
    assert_eq!(run("[.[] | .a?.b?.c?]", deep), json!([1, 3]));
}

#[test]
fn question_mark_after_an_index_or_a_slice_covers_only_that_suffix() {
    assert_eq!(run("[.[][0]?]", json!([[1], {"a": 1}, [2]])), json!([1, 2]));
    assert_eq!(
        run("[.[][1:]?]", json!([[1, 2], {"a": 1}, "xyz"])),
        json!([[2], "yz"])
    );
    assert_eq!(
        run("[.[] | .[1:]?]", json!([[1, 2], 1, "ab"])),
        json!([[2], "b"])
    );
    assert_eq!(
        run("[.spec.containers[].args[0]?]", pod()),
        json!([null, "x y", null])
    );
    assert_eq!(run("[.[\"a\"]?]", json!(1)), json!([]));
    assert_eq!(run("[.[1:]?]", json!(1)), json!([]));
    assert_eq!(run("[.a[1:]?]", json!({"a": 1})), json!([]));
}

/// gojq compiles `t.[k]?` as `t | try .[k]`: the key reads the output of `t`.
#[test]
fn the_key_of_an_optional_index_reads_the_term_before_it() {
    assert_eq!(
        run("[.a[.k]]", json!({"a": {"x": 1}, "k": "x"})),
        json!([1])
    );
    assert_eq!(
        run("[.a[.k]?]", json!({"a": {"x": 1}, "k": "x"})),
        json!([])
    );
    assert_eq!(
        run("[.a[.k]?]", json!({"a": {"x": 1, "k": "x"}, "k": "y"})),
        json!([1])
    );
    assert_eq!(
        run("[.[]?[.k]?]", json!([{"k": "k"}, 3, {"k": "z"}])),
        json!(["k", null])
    );
    assert_eq!(
        run("[.a[.k:]?]", json!({"a": [1, 2, 3], "k": 1})),
        json!([])
    );
}

/// The term before the optional suffix is outside the `try`: its errors stand.
#[test]
fn errors_before_the_optional_suffix_are_not_suppressed() {
    fails("[.a.b?]", json!(1));
    fails("[.a[]?]", json!(1));
    fails("[(.a)[]?]", json!(1));
    fails("[.[]?.a]", mixed());
    fails("[.[] | .a?.b]", json!([{"a": {"b": 1}}, {"a": 2}]));
    let chain = json!([{"a": {"b": {"c": 1}}}, {"a": 1}, {"a": {"b": {"c": 3}}}]);
    fails("[.[].a.b.c?]", chain);
    fails(
        "[.[]?.b[]?]",
        json!({"x": {"b": [1]}, "y": 2, "z": {"b": [3]}}),
    );
    assert_eq!(run("[.a?.b?]", json!(1)), json!([]));
}

/// `?` after a primary term (a field of `.`, parentheses, a call, `..`) covers the whole term;
/// the error ends that term's outputs, the earlier ones stay.
#[test]
fn question_mark_after_a_whole_term_ends_its_outputs_at_the_error() {
    assert_eq!(run("[(.[] | .a)?]", mixed()), json!([1]));
    assert_eq!(
        run("[.[] | (.a, .b)?]", json!([{"a": 1, "b": 2}, 3])),
        json!([1, 2])
    );
    assert_eq!(
        run("[.[] | keys?]", json!([{"b": 1}, 2, {"c": 3}])),
        json!([["b"], ["c"]])
    );
    assert_eq!(
        run("[.[] | tonumber?]", json!(["1", "x", "3"])),
        json!([1, 3])
    );
    assert_eq!(run("[..?]", json!([1])), json!([[1], 1]));
    assert_eq!(run("[-.a?]", json!(1)), json!([]));
    fails("[-.a?]", json!({"a": "s"}));
    assert_eq!(
        run("[.[] | (1, error(\"x\"), 2)?]", json!([1, 2])),
        json!([1, 1])
    );
}

#[test]
fn try_ends_its_body_at_the_first_error_and_catches_once() {
    assert_eq!(run("[try (.[] | .a)]", mixed()), json!([1]));
    assert_eq!(run("[try .[].a catch \"E\"]", mixed()), json!([1, "E"]));
    assert_eq!(
        run("[.[] | try .a catch \"E\"]", mixed()),
        json!([1, "E", 3])
    );
    assert_eq!(
        run("[try (1, error(\"x\"), 2) catch .]", json!(null)),
        json!([1, "x"])
    );
    assert_eq!(run("try error(\"\\(.)\") catch .", json!(1)), json!("1"));
    assert_eq!(run("[try .spec.containers[].args[]]", pod()), json!([]));
}

/// An error after the `try` emitted a value belongs to what follows, not to the `try`.
#[test]
fn errors_after_an_optional_output_are_not_suppressed() {
    let err = fails("[.[]? | error(\"x\")]", json!([1]));
    assert!(err.ends_with(": x"), "{err}");
    fails("[.[]?.a? | error(\"x\")]", json!([{"a": 1}]));
}

#[test]
fn optional_sources_of_reduce_foreach_and_as() {
    assert_eq!(run("reduce .[]?.a? as $x (0; . + $x)", mixed()), json!(4));
    assert_eq!(
        run("[foreach .[].a? as $x (0; . + $x)]", mixed()),
        json!([1, 4])
    );
    assert_eq!(run("[.[].a? as $x | $x]", mixed()), json!([1, 3]));
    assert_eq!(run(". as $x | [$x[].a?]", mixed()), json!([1, 3]));
    assert_eq!(
        run("[.[] as $x | $x[]?]", json!([[1], 2, [3]])),
        json!([1, 3])
    );
    assert_eq!(
        run("[.[] | select(.a?)]", mixed()),
        json!([{"a": 1}, {"a": 3}])
    );
    assert_eq!(run("[{a: .[].a?}]", mixed()), json!([{"a": 1}, {"a": 3}]));
    assert_eq!(run("[\"\\(.[].a?)\"]", mixed()), json!(["1", "3"]));
}

#[test]
fn optional_suffixes_in_path_expressions() {
    let items = json!([{"a": [1]}, {"b": 1}, {"a": [3, 4]}]);
    assert_eq!(
        run("[path(.[]?.a[]?)]", items),
        json!([[0, "a", 0], [2, "a", 0], [2, "a", 1]])
    );
    assert_eq!(run("[path(.[].a?)]", mixed()), json!([[0, "a"], [2, "a"]]));
    assert_eq!(run("[path(..?)]", json!([[1]])), json!([[], [0], [0, 0]]));
    let scalars = json!([{"a": [1]}, {"a": 2}, {"a": [3, 4]}]);
    assert_eq!(
        run("del(.[].a[]?)", scalars.clone()),
        json!([{"a": []}, {"a": 2}, {"a": []}])
    );
    assert_eq!(
        run(".[].a[]? |= . + 1", scalars),
        json!([{"a": [2]}, {"a": 2}, {"a": [4, 5]}])
    );
    assert_eq!(
        run(".[].a? |= . + 1", mixed()),
        json!([{"a": 2}, 2, {"a": 4}])
    );
}
