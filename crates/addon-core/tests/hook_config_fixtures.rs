//! Walks `tests/fixtures/hook_config/{pass,fail}/<case>/` and checks every hook config fixture.
//!
//! A case holds `config.yaml` or `config.json` (the hook's `--config` output), `scope` (`global` or
//! `module`) and either `expected.json` (a subset of the parsed config: every key given must match,
//! arrays must have the same length) or `expected_error.txt` (each line must appear in the error).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use addon_core::hook_config::{self, HookScope};
use addon_core::names::HookName;
use serde_json::Value;

fn cases(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hook_config")
        .join(kind);
    let mut out: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn load(case: &Path) -> Result<hook_config::HookConfig, hook_config::HookConfigErrors> {
    let config = ["config.yaml", "config.json"]
        .iter()
        .map(|f| case.join(f))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{}: no config.yaml or config.json", case.display()));
    let text = fs::read_to_string(config).unwrap();
    let scope = match fs::read_to_string(case.join("scope")).unwrap().trim() {
        "global" => HookScope::Global,
        "module" => HookScope::Module,
        other => panic!("{}: bad scope '{other}'", case.display()),
    };
    let hook = HookName::new("hooks/test-hook.sh").unwrap();
    hook_config::parse(&hook, scope, &text)
}

/// Checks that `expected` is contained in `actual`; returns the first mismatch path.
fn subset_mismatch(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().find_map(|(k, ev)| match a.get(k) {
            Some(av) => subset_mismatch(ev, av, &format!("{path}.{k}")),
            None => Some(format!("{path}.{k}: missing")),
        }),
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (ev, av))| subset_mismatch(ev, av, &format!("{path}[{i}]"))),
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => None,
        (e, a) if e == a => None,
        (e, a) => Some(format!("{path}: expected {e}, got {a}")),
    }
}

#[test]
fn every_pass_fixture_parses_to_its_expected_config() {
    let cases = cases("pass");
    assert!(cases.len() >= 30, "too few pass fixtures: {}", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        match load(&case) {
            Err(e) => failures.push(format!("{name}: unexpected error: {e}")),
            Ok(config) => {
                let expected: Value =
                    serde_json::from_str(&fs::read_to_string(case.join("expected.json")).unwrap())
                        .unwrap_or_else(|e| panic!("{name}: expected.json: {e}"));
                let actual = serde_json::to_value(&config).unwrap();
                if let Some(m) = subset_mismatch(&expected, &actual, "") {
                    failures.push(format!("{name}: {m}\n  actual: {actual}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fail_fixture_is_rejected_with_its_expected_message() {
    let cases = cases("fail");
    assert!(cases.len() >= 40, "too few fail fixtures: {}", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let expected = fs::read_to_string(case.join("expected_error.txt")).unwrap();
        match load(&case) {
            Ok(config) => failures.push(format!("{name}: accepted: {config:?}")),
            Err(e) => {
                let text = e.to_string();
                for line in expected.lines().filter(|l| !l.trim().is_empty()) {
                    if !text.contains(line) {
                        failures.push(format!("{name}: error lacks '{line}':\n{text}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
