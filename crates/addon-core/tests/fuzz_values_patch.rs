//! Fuzz target: values and config JSON patches parse, stay in scope, apply all-or-nothing within the size limits, and compact, for any generated sequence of operations.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_support;

use addon_core::jq::json_size;
use addon_core::names::{HookName, ModuleName};
use addon_core::values::patch::{
    HookRef, MAX_VALUES_BYTES, PatchKind, ValuesPatch, apply_lenient, apply_strict, check_scope,
    compact_into,
};
use fuzz_support::{Rng, cases, corpus, mutate};
use serde_json::{Value, json};

const PATHS: &[&str] = &[
    "/demo",
    "/demo/a",
    "/demo/a/b",
    "/demo/a/0",
    "/demo/a/-",
    "/demo/list/0",
    "/global/x",
    "/demoEnabled",
    "demo.a",
    "/demo/a~1b",
    "/demo/~0",
    "",
    "/",
];

fn op(rng: &mut Rng) -> Value {
    let path = *rng.pick(PATHS);
    let from = *rng.pick(PATHS);
    let value = rng
        .pick(&[
            json!(1),
            json!({"k": [1, 2]}),
            json!("x"),
            json!(null),
            json!([]),
        ])
        .clone();
    match rng.below(7) {
        0 => json!({"op": "add", "path": path, "value": value}),
        1 => json!({"op": "remove", "path": path}),
        2 => json!({"op": "replace", "path": path, "value": value}),
        3 => json!({"op": "move", "from": from, "path": path}),
        4 => json!({"op": "copy", "from": from, "path": path}),
        5 => json!({"op": "test", "path": path, "value": value}),
        _ => json!({"op": "nope", "path": path}),
    }
}

fn hook() -> HookRef {
    HookRef::module(
        ModuleName::new("demo").unwrap(),
        HookName::new("hooks/h.sh").unwrap(),
    )
}

fn check(text: &str, stored: &mut Vec<json_patch::PatchOperation>) {
    for kind in [PatchKind::Values, PatchKind::Config] {
        let Ok(patch) = ValuesPatch::parse(&hook(), kind, text) else {
            continue;
        };
        let start = json!({"demo": {"a": {"b": 1}, "list": [1, 2]}});
        let mut doc = start.clone();
        let scoped = check_scope(&hook(), kind, &patch.ops).is_ok();
        match apply_strict(&hook(), kind, &mut doc, &patch.ops) {
            Ok(()) => {
                assert!(json_size(&doc) <= MAX_VALUES_BYTES);
                if scoped {
                    compact_into(stored, &patch.ops);
                }
            }
            Err(_) => assert_eq!(doc, start, "a failed patch leaves the document"),
        }
        let mut fresh = start.clone();
        apply_lenient(&mut fresh, stored);
        assert!(json_size(&fresh) <= 4 * MAX_VALUES_BYTES);
    }
}

#[test]
fn generated_patches_apply_within_the_limits_or_fail_whole() {
    let mut rng = Rng::new("values_patch");
    let mut stored = Vec::new();
    for _ in 0..cases(400) {
        let ops: Vec<Value> = (0..rng.below(30)).map(|_| op(&mut rng)).collect();
        check(&Value::Array(ops).to_string(), &mut stored);
    }
}

#[test]
fn mutated_patch_texts_parse_or_fail() {
    let seeds = corpus("values", |n| n.ends_with("patch.json"));
    let mut rng = Rng::new("values_patch_text");
    let mut stored = Vec::new();
    for _ in 0..cases(300) {
        let seed = rng.pick(&seeds).clone();
        check(&mutate(&mut rng, &seed, PATHS), &mut stored);
    }
}

/// The reproducer in a module's scope: 41 copies doubling an object.
#[test]
fn doubling_copies_fail_the_patch() {
    let ops: Vec<Value> = (0..41)
        .map(|i| json!({"op": "copy", "from": "/demo/a", "path": format!("/demo/a/k{i}")}))
        .collect();
    let patch =
        ValuesPatch::parse(&hook(), PatchKind::Values, &Value::Array(ops).to_string()).unwrap();
    let mut doc = json!({"demo": {"a": {"text": "0123456789".repeat(10)}}});
    let err = apply_strict(&hook(), PatchKind::Values, &mut doc, &patch.ops).unwrap_err();
    assert_eq!(err.category(), "patch_limit", "{err}");
}
