//! Fuzz target: `$KUBERNETES_PATCH_PATH` files give operations or an error; every accepted target has a name and namespace that cannot change a request URL.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_support;

use addon_core::hook_output::kube_patch::{KubeOperation, check_object_meta, check_target, parse};
use fuzz_support::{Rng, cases, corpus, deep, mutate};
use serde_json::json;

const WORDS: &[&str] = &[
    "../",
    "/",
    "?",
    "&",
    "#",
    "%2F",
    "..",
    "UPPER",
    "-",
    ".",
    " ",
    "ns",
    "system:x",
    r#""operation":"Delete""#,
    r#""kind":"ClusterRole""#,
    r#""jqFilter":"def f: [f]; f""#,
    r#""generateName":"a-""#,
    r#""subresource":"status""#,
];

fn check(text: &str) {
    let Ok(ops) = parse(text) else {
        return;
    };
    for op in ops {
        match op {
            KubeOperation::Create { object, .. } => check_object_meta(&object).unwrap(),
            KubeOperation::Delete { target, .. }
            | KubeOperation::JqPatch { target, .. }
            | KubeOperation::MergePatch { target, .. }
            | KubeOperation::JsonPatch { target, .. } => {
                check_target(&target).unwrap();
                assert!(!target.name.contains(['/', '?', '#', '%']), "{target:?}");
            }
        }
    }
}

#[test]
fn mutated_patch_files_give_safe_operations_or_an_error() {
    let seeds = corpus("kube_patch", |n| n == "input");
    let mut rng = Rng::new("kube_patch");
    for _ in 0..cases(400) {
        let seed = rng.pick(&seeds).clone();
        check(&mutate(&mut rng, &seed, WORDS));
    }
}

#[test]
fn generated_targets_are_accepted_only_with_valid_names() {
    let mut rng = Rng::new("kube_patch_names");
    for _ in 0..cases(400) {
        let name: String = (0..1 + rng.below(12)).map(|_| *rng.pick(WORDS)).collect();
        let ns: String = (0..rng.below(3)).map(|_| *rng.pick(WORDS)).collect();
        let kind = *rng.pick(&["Pod", "ClusterRole", "ConfigMap"]);
        let ops = json!([
            {"operation": "Delete", "kind": kind, "namespace": ns, "name": name},
            {"operation": "Create", "object": {"apiVersion": "v1", "kind": kind,
                "metadata": {"generateName": name, "namespace": ns}}}
        ]);
        check(&ops.to_string());
    }
    for text in deep(100_000) {
        check(&text);
    }
}
