//! Fuzz target: jq filter compilation (the part that runs in the operator's process) gives a filter or an error for any text, however long or deep; evaluation is fuzzed through the sandbox in `addon-operator/tests/jq_sandbox`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_support;

use addon_core::jq::{JqFilter, MAX_FILTER_BYTES};
use fuzz_support::{Rng, cases};

const PIECES: &[&str] = &[
    ".",
    ".a",
    ".[]",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    "{a: .}",
    "|",
    ",",
    "+",
    "-",
    "*",
    "//",
    "?",
    "if . then ",
    " else ",
    " end",
    "elif ",
    "try ",
    "reduce .[] as $x (0; ",
    "foreach ",
    "def f: ",
    "; ",
    "f",
    "label $out | ",
    "break $out",
    "\"\\(",
    "\"",
    "$__loc__",
    "..",
    "range(",
    "1e9",
    "0",
    "as $x | ",
    "@base64 ",
    "?//",
    "not",
    "and",
    "or",
    "#",
    "\n",
];

#[test]
fn generated_filters_compile_or_fail_with_an_error() {
    let mut rng = Rng::new("jq");
    for _ in 0..cases(300) {
        let len = 1 + rng.below(40);
        let mut text: String = (0..len).map(|_| *rng.pick(PIECES)).collect();
        if rng.chance(10) {
            let depth = rng.below(5000);
            text = format!("{}{text}{}", "(".repeat(depth), ")".repeat(depth));
        }
        if rng.chance(5) {
            text = text.repeat(MAX_FILTER_BYTES / text.len().max(1));
        }
        if let Err(e) = JqFilter::compile(&text) {
            assert!(e.to_string().len() < 2_000, "errors quote a short prefix");
        }
    }
}
