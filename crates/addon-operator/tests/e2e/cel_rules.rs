//! CEL rules (`x-deckhouse-validations`) on a running operator: a config edit that breaks a rule
//! is refused (the module keeps its values), and an `oldSelf` rule lets a field be set once but
//! never changed.

use std::process::Stdio;

use crate::support::{Running, require_tool, start_command, wait_for, write};

const CONFIG_SCHEMA: &str = r#"type: object
properties:
  replicas:
    type: integer
  mode:
    type: string
    x-deckhouse-validations:
      - expression: self == oldSelf
        message: mode is immutable
x-deckhouse-validations:
  - expression: self.replicas >= 1
    message: replicas must be at least 1
"#;

const RECORDING_HOOK: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","beforeHelm":1}'
  exit 0
fi
jq -c '.echo' "$VALUES_PATH" >> "$RUNS_LOG"
"#;

fn config(section: &str) -> String {
    format!("echoEnabled: true\necho: |\n{section}")
}

#[test]
fn cel_rules_refuse_a_broken_edit_and_a_changed_immutable_field() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let module = root.join("modules/010-echo");
    write(
        &module.join("openapi/config-values.yaml"),
        CONFIG_SCHEMA,
        false,
    );
    write(&module.join("hooks/record"), RECORDING_HOOK, true);
    let config_file = root.join("config.yaml");
    write(&config_file, &config("  replicas: 1\n"), false);
    let (log, runs) = (root.join("operator.log"), root.join("runs.log"));
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--config-file")
        .arg(&config_file)
        .env("RUNS_LOG", &runs)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let runs_text = || std::fs::read_to_string(&runs).unwrap_or_default();
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("the first module run", &log, || {
        runs_text().contains(r#"{"replicas":1}"#)
    });

    std::fs::write(&config_file, config("  replicas: 0\n")).unwrap();
    wait_for("the edit breaking a rule refused", &log, || {
        let l = log_text();
        l.contains("module 'echo'") && l.contains("/echo: replicas must be at least 1")
    });

    std::fs::write(&config_file, config("  replicas: 1\n  mode: Direct\n")).unwrap();
    wait_for("the immutable field set the first time", &log, || {
        runs_text().contains(r#""mode":"Direct""#)
    });

    std::fs::write(&config_file, config("  replicas: 1\n  mode: Proxy\n")).unwrap();
    wait_for("the change of the immutable field refused", &log, || {
        log_text().contains("/echo/mode: mode is immutable")
    });

    std::fs::write(&config_file, config("  replicas: 2\n  mode: Direct\n")).unwrap();
    wait_for("a later valid edit", &log, || {
        runs_text().contains(r#"{"replicas":2,"mode":"Direct"}"#)
    });
    let seen = runs_text();
    assert!(
        !seen.contains("Proxy"),
        "a refused value reached a hook:\n{seen}"
    );
    assert!(
        !seen.contains(r#""replicas":0"#),
        "a refused value reached a hook:\n{seen}"
    );
}
