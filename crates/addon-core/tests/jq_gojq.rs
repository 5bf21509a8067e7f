//! Differential test of the jq engine against gojq, the engine upstream evaluates `jqFilter` and `JQPatch` with (issue 21): a corpus of filters x Kubernetes objects.

// Run: `cargo test -p addon-core --test jq_gojq` (needs `gojq`: `scripts/install-tools`). It fails
// on any result that differs where gojq succeeds, and on any filter gojq fails on for every object
// (a gojq failure accepts any answer, so such a filter would test nothing: make an error a value
// with `try (...) catch "error"`, give the filter its input as a literal, or test an extension in
// the jq module's unit tests). The reference is the gojq command, not the library apply.go runs:
// see jq_gojq_support/gojq.rs for what differs and how the inputs make up for it. The report
// without failing:
// `JQ_DIFF_REPORT=1 cargo test -p addon-core --test jq_gojq -- --nocapture`; `JQ_DIFF_FILTER=<text>`
// keeps only the filters containing that text; `JQ_DIFF_SHOW=<n>` lists n differing filters of
// each class in full (default 8).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod jq_gojq_support;

use std::collections::HashSet;

use jq_gojq_support::corpus::{self, CLASSES};
use jq_gojq_support::report::{FilterRun, Report, verdict};
use jq_gojq_support::{compare, gojq, ours};
use serde_json::json;

#[test]
fn every_filter_gives_gojqs_result_on_every_object_where_gojq_succeeds() {
    let Some(gojq) = gojq::find() else {
        return;
    };
    let overrides = corpus::overrides();
    let objects = corpus::objects();
    let values: Vec<serde_json::Value> = objects.iter().map(|o| o.value.clone()).collect();
    let only = std::env::var("JQ_DIFF_FILTER").ok();
    let filters: Vec<_> = corpus::filters()
        .into_iter()
        .filter(|f| only.as_deref().is_none_or(|text| f.text.contains(text)))
        .collect();
    let runs: Vec<FilterRun> = filters
        .iter()
        .map(|filter| {
            let theirs = match overrides.get(&filter.text) {
                Some(answer) => vec![answer.clone(); objects.len()],
                None => {
                    assert!(
                        !cli_only(&filter.text),
                        "{}: the gojq command defines a function the library apply.go runs \
                         lacks: give upstream's answer in gojq-0.12.17.tsv",
                        filter.text
                    );
                    gojq.outcomes(&filter.text, &objects)
                }
            };
            let mine = ours::outcomes(&filter.text, &values);
            FilterRun {
                class: filter.class,
                filter: filter.text.clone(),
                cases: objects
                    .iter()
                    .zip(mine.into_iter().zip(theirs))
                    .map(|(object, (ours, theirs))| {
                        let verdict = verdict(&ours, &theirs);
                        (object.name.clone(), ours, theirs, verdict)
                    })
                    .collect(),
            }
        })
        .collect();
    let report = Report {
        reference: format!(
            "{} under `env -i` (answers of gojq 0.12.17 for {} filters from gojq-0.12.17.tsv)",
            gojq.version,
            overrides.len()
        ),
        objects: objects.len(),
        runs,
        shown: std::env::var("JQ_DIFF_SHOW")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(8),
    };
    eprintln!("{report}");
    if std::env::var_os("JQ_DIFF_REPORT").is_some() {
        return;
    }
    assert_eq!(
        report.differences(),
        0,
        "{} results differ from gojq's where gojq succeeds, in classes {:?} (report above)",
        report.differences(),
        report.classes_differing()
    );
    let nothing: Vec<&str> = report
        .comparing_nothing()
        .iter()
        .map(|r| r.filter.as_str())
        .collect();
    assert!(
        nothing.is_empty(),
        "{} filters compare nothing: gojq fails on every object, and a gojq failure accepts any \
         answer; give each an object it answers on or change the filter: {nothing:?}",
        nothing.len()
    );
}

/// Whether the filter calls a function the gojq command has and the library apply.go runs lacks
/// (`input`, `inputs`: no input iterator; `debug`, `stderr`, `input_filename`: defined by the
/// command), which the command would answer otherwise than upstream.
fn cli_only(filter: &str) -> bool {
    const NAMES: &[&str] = &["input", "inputs", "debug", "stderr", "input_filename"];
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    NAMES.iter().any(|name| {
        filter.match_indices(name).any(|(at, _)| {
            let before = filter[..at].chars().next_back();
            let after = filter[at + name.len()..].chars().next();
            !before.is_some_and(|c| ident(c) || c == '.' || c == '$' || c == '@')
                && !after.is_some_and(ident)
        })
    })
}

#[test]
fn the_corpus_holds_at_least_300_distinct_filters_of_every_class_over_at_least_8_objects() {
    let filters = corpus::filters();
    assert!(filters.len() >= 300, "{} filters", filters.len());
    let distinct: HashSet<&str> = filters.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(distinct.len(), filters.len(), "a filter is listed twice");
    for class in CLASSES {
        let n = filters.iter().filter(|f| f.class == *class).count();
        assert!(n >= 30, "class {class} has {n} filters");
    }
    let objects = corpus::objects();
    assert!(objects.len() >= 8, "{} objects", objects.len());
    for kind in [
        "Pod",
        "Deployment",
        "ConfigMap",
        "Secret",
        "Node",
        "Service",
    ] {
        assert!(
            objects.iter().any(|o| o.value["kind"] == kind),
            "no {kind} among the objects"
        );
    }
}

/// Issue 40: `.items[]?.x[]?` went wrong only when the first item lacked `x`, and no object had
/// such a list. Some object must have one (containers, init containers, endpoint subsets).
#[test]
fn some_object_has_a_list_whose_first_item_lacks_a_field_a_later_item_has() {
    fn lists_with_a_sparse_first_item(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Array(items) => {
                if let Some(serde_json::Value::Object(first)) = items.first() {
                    for later in items[1..].iter().filter_map(|v| v.as_object()) {
                        found.extend(later.keys().filter(|k| !first.contains_key(*k)).cloned());
                    }
                }
                items
                    .iter()
                    .for_each(|v| lists_with_a_sparse_first_item(v, found));
            }
            serde_json::Value::Object(map) => map
                .values()
                .for_each(|v| lists_with_a_sparse_first_item(v, found)),
            _ => {}
        }
    }
    let objects = corpus::objects();
    let sparse: Vec<&str> = objects
        .iter()
        .filter(|o| {
            let mut found = Vec::new();
            lists_with_a_sparse_first_item(&o.value, &mut found);
            found.iter().any(|k| k == "args")
        })
        .map(|o| o.name.as_str())
        .collect();
    assert!(
        !sparse.is_empty(),
        "no object has a list whose first item lacks `args` and a later one has it"
    );
    assert!(
        objects
            .iter()
            .any(|o| o.value["spec"]["initContainers"].is_array()),
        "no object has init containers"
    );
}

#[test]
fn every_gojq_0_12_17_answer_is_for_a_filter_of_the_corpus() {
    let texts: HashSet<String> = corpus::filters().into_iter().map(|f| f.text).collect();
    for filter in corpus::overrides().keys() {
        assert!(texts.contains(filter), "{filter} is not in the corpus");
    }
}

#[test]
fn results_compare_numbers_by_value_big_integers_exactly_and_strings_as_text() {
    assert!(compare::same(&json!(1), &json!(1.0)));
    assert!(compare::same(
        &json!([1, {"a": 2.0}]),
        &json!([1.0, {"a": 2}])
    ));
    assert!(compare::same(
        &json!({"a": 1, "b": 2}),
        &json!({"b": 2, "a": 1})
    ));
    assert!(!compare::same(
        &json!(9_007_199_254_740_993_u64),
        &json!(9_007_199_254_740_992.0)
    ));
    assert!(!compare::same(
        &json!(12_345_678_901_234_567_890_u64),
        &json!(12_345_678_901_234_567_890.0)
    ));
    // Go prints the float 1.2345678901234567e19 as 12345678901234567000.
    assert!(compare::same(
        &json!(12_345_678_901_234_567_890.0),
        &json!(12_345_678_901_234_567_000_u64)
    ));
    assert!(!compare::same(&json!(1.5), &json!(1)));
    assert!(!compare::same(
        &json!("{\"a\":1,\"b\":2}"),
        &json!("{\"b\":2,\"a\":1}")
    ));
    assert!(!compare::same(&json!([1, 2]), &json!([2, 1])));
    assert!(!compare::same(&json!(null), &json!(false)));
}

#[test]
fn a_filter_is_cli_only_when_it_calls_a_function_only_the_gojq_command_defines() {
    assert!(cli_only("input"));
    assert!(cli_only("[inputs]"));
    assert!(cli_only("try input catch 1"));
    assert!(cli_only("debug | .kind"));
    assert!(cli_only("input_filename"));
    assert!(!cli_only(".input"));
    assert!(!cli_only("$input"));
    assert!(!cli_only(".debug.stderr"));
    assert!(!cli_only("input_line_number"));
}
