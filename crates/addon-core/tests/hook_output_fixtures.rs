//! Walks `tests/fixtures/{kube_patch,metrics}/{pass,fail}/<case>/` and checks the hook output parsers.
//!
//! A case holds `input` (what the hook wrote) and either `expected.json` (a one-line summary per
//! operation) or `expected_error.txt` (each line must appear in the error).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use addon_core::hook_output::kube_patch::{self, CreateMode, KubeOperation};
use addon_core::hook_output::metrics::{self, MetricAction};

fn cases(area: &str, kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(area)
        .join(kind);
    let mut out: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

fn kube_summary(op: &KubeOperation) -> String {
    match op {
        KubeOperation::Create { mode, object, .. } => {
            let mode = match mode {
                CreateMode::Create => "Create",
                CreateMode::CreateOrUpdate => "CreateOrUpdate",
                CreateMode::CreateIfNotExists => "CreateIfNotExists",
            };
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            format!("{mode}/{}/{name}", object["kind"].as_str().unwrap())
        }
        KubeOperation::Delete {
            target,
            propagation,
        } => format!("Delete({propagation:?})/{}/{}", target.kind, target.name),
        KubeOperation::JqPatch { target, .. } => format!("JQPatch/{}/{}", target.kind, target.name),
        KubeOperation::MergePatch { target, .. } => {
            format!("MergePatch/{}/{}", target.kind, target.name)
        }
        KubeOperation::JsonPatch { target, .. } => {
            format!("JSONPatch/{}/{}", target.kind, target.name)
        }
    }
}

fn metric_summary(op: &metrics::MetricOperation) -> String {
    let group = op
        .group
        .as_ref()
        .map(|g| format!(" group={g}"))
        .unwrap_or_default();
    match &op.action {
        MetricAction::Set(v) => format!("set {} {v}{group}", op.name),
        MetricAction::Add(v) => format!("add {} {v}{group}", op.name),
        MetricAction::Observe { value, buckets } => {
            let b: Vec<String> = buckets.iter().map(f64::to_string).collect();
            format!("observe {} {value} [{}]{group}", op.name, b.join(","))
        }
        MetricAction::Expire => format!("expire{group}"),
    }
}

fn check(area: &str, run: impl Fn(&str) -> Result<Vec<String>, String>) {
    let mut failures = Vec::new();
    for case in cases(area, "pass") {
        let input = fs::read_to_string(case.join("input")).unwrap();
        let expected: Vec<String> =
            serde_json::from_str(&fs::read_to_string(case.join("expected.json")).unwrap()).unwrap();
        match run(&input) {
            Ok(actual) if actual == expected => {}
            other => failures.push(format!("{}: {other:?}", case.display())),
        }
    }
    let fails = cases(area, "fail");
    assert!(fails.len() >= 7, "too few {area} fail fixtures");
    for case in fails {
        let input = fs::read_to_string(case.join("input")).unwrap();
        let expected = fs::read_to_string(case.join("expected_error.txt")).unwrap();
        match run(&input) {
            Ok(ops) => failures.push(format!("{}: accepted {ops:?}", case.display())),
            Err(e) => {
                for line in expected.lines().filter(|l| !l.is_empty()) {
                    if !e.contains(line) {
                        failures.push(format!("{}: '{e}' lacks '{line}'", case.display()));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn kube_patch_fixtures() {
    check("kube_patch", |text| {
        kube_patch::parse(text)
            .map(|ops| ops.iter().map(kube_summary).collect())
            .map_err(|e| e.to_string())
    });
}

#[test]
fn metrics_fixtures() {
    check("metrics", |text| {
        metrics::parse(text)
            .map(|ops| ops.iter().map(metric_summary).collect())
            .map_err(|e| e.to_string())
    });
}
