//! Fuzz target: `$METRICS_PATH` files give operations or an error naming the operation and line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_support;

use addon_core::hook_output::metrics::{MetricsError, parse};
use fuzz_support::{Rng, cases, corpus, deep, mutate};

const WORDS: &[&str] = &[
    r#"{"name":"m","action":"set","value":1}"#,
    r#""action":"observe","buckets":[1e308,-1]"#,
    r#""group":"g","action":"expire""#,
    r#""labels":{"a":1}"#,
    r#""add":1e400"#,
];

fn check(text: &str) {
    match parse(text) {
        Ok(ops) => assert!(ops.len() <= text.len()),
        Err(
            MetricsError::ReadOperation { line, .. } | MetricsError::ValidateOperation { line, .. },
        ) => {
            assert!(line >= 1 && line <= text.lines().count() + 1, "line {line}");
        }
    }
}

#[test]
fn mutated_metrics_files_give_operations_or_an_error() {
    let seeds = corpus("metrics", |n| n == "input");
    let mut rng = Rng::new("metrics");
    for _ in 0..cases(500) {
        let seed = rng.pick(&seeds).clone();
        check(&mutate(&mut rng, &seed, WORDS));
    }
    for text in deep(100_000) {
        check(&text);
    }
}
