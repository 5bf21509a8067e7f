//! Generated filters through the sandbox: every one gives a value or an error, within the deadline; the operator process never dies.

use std::time::Duration;

use addon_core::jq::JqFilter;
use addon_operator::edges::jq::JqRunner;
use serde_json::json;

use crate::{runtime, settings};

const PIECES: &[&str] = &[
    ".",
    ".a",
    ".[]",
    "[",
    "]",
    "(",
    ")",
    "{a: .}",
    "|",
    ",",
    "+",
    "-",
    "*",
    "/",
    "//",
    "?",
    "if . then 1 else 2 end",
    "reduce .[] as $x (0; . + $x)",
    "def f: f; ",
    "def g: [g]; ",
    "f",
    "g",
    "range(",
    ";",
    "1e9",
    "0",
    "1",
    "repeat(",
    "last(",
    "tojson",
    "fromjson",
    "keys",
    "\"s\"",
    "$__loc__",
    "limit(3; ",
    "until(false; .)",
    "recurse",
    "env",
    "input",
    "@base64",
    "splits(\"a\")",
    "getpath([\"a\"])",
    "paths",
    "..",
    "error",
    "not",
    "and",
    "or",
];

/// The number of generated filters (`JQ_FUZZ_CASES`, default 60).
fn cases() -> usize {
    std::env::var("JQ_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
}

#[test]
fn generated_filters_give_a_value_or_an_error() {
    let runner = JqRunner::sandbox(settings(Duration::from_millis(500)));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    runtime().block_on(async {
        for _ in 0..cases() {
            let len = 1 + next() % 8;
            let text: String = (0..len)
                .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                .collect();
            let Ok(filter) = JqFilter::compile(&text) else {
                continue;
            };
            let input = json!({"a": [1, 2, {"b": "x"}]});
            let _ = runner.apply(&filter, &input).await;
        }
        let filter = JqFilter::compile(".a[0]").unwrap();
        let input = json!({"a": [1]});
        assert_eq!(runner.apply(&filter, &input).await.unwrap(), json!(1));
    });
}
