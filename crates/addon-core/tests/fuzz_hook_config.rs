//! Fuzz target: hook `--config` output (v0 and v1, YAML and JSON) parses to a config or an error, never a panic or an abort.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_support;

use addon_core::hook_config::{HookScope, parse};
use addon_core::names::HookName;
use fuzz_support::{Rng, cases, corpus, deep, mutate};

const WORDS: &[&str] = &[
    "configVersion: v1\n",
    "configVersion: v0\n",
    "kubernetes:\n- ",
    "onKubernetesEvent:\n- ",
    "schedule:\n- crontab: ",
    "\"*/5 * * * *\"",
    "@every 0s",
    "jqFilter: ",
    "'def f: [f]; f'",
    "kind: Pod\n",
    "name: x\n",
    "executeHookOnEvent: []\n",
    "nameSelector: {matchNames: [a]}\n",
    "labelSelector: {matchExpressions: [{key: a, operator: In, values: [b]}]}\n",
    "namespace: {nameSelector: {matchNames: [ns]}}\n",
    "group: g\n",
    "queue: q\n",
    "onStartup: 1\n",
    "beforeHelm: -1e308\n",
    "afterDeleteHelm: 1\n",
    "beforeAll: 5\n",
    "includeSnapshotsFrom: [x]\n",
    "settings: {executionMinInterval: 1s}\n",
];

fn check(text: &str) {
    let hook = HookName::new("hooks/fuzz.sh").unwrap();
    for scope in [HookScope::Global, HookScope::Module] {
        let _ = parse(&hook, scope, text);
    }
}

#[test]
fn mutated_hook_configs_give_a_config_or_an_error() {
    let seeds = corpus("hook_config", |n| n.starts_with("config."));
    let mut rng = Rng::new("hook_config");
    for _ in 0..cases(300) {
        let seed = rng.pick(&seeds).clone();
        let text = mutate(&mut rng, &seed, WORDS);
        check(&text);
    }
}

#[test]
fn deep_documents_and_hostile_filters_are_errors() {
    for text in deep(100_000) {
        check(&text);
    }
    let parens = format!("{}.{}", "(".repeat(10_000), ")".repeat(10_000));
    for filter in [
        "def f: [f]; f",
        "def f: f; f",
        "last(range(1e12))",
        parens.as_str(),
    ] {
        let text = serde_json::json!({"configVersion": "v1", "kubernetes": [
            {"name": "pods", "kind": "Pod", "jqFilter": filter}]})
        .to_string();
        check(&text);
    }
    let hook = HookName::new("hooks/fuzz.sh").unwrap();
    let text = format!(
        r#"{{"configVersion":"v1","kubernetes":[{{"kind":"Pod","jqFilter":"{parens}"}}]}}"#
    );
    let err = parse(&hook, HookScope::Global, &text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bytes long"), "{err}");
}
