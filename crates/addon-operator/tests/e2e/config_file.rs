//! `--config-file` written by a hook's config patch: the text of every untouched section, comments
//! included, stays byte for byte; the operator ignores its own write and reloads on a later edit.

use std::process::Stdio;
use std::time::Duration;

use crate::support::{Running, require_tool, start_command, wait_for, write};

const CONFIG: &str = "\
# Config of the laptop cluster.
# Owned by a person: keep these comments.

global: |
  clusterName: laptop   # shown in every greeting

# The web module, kept small on laptops.
web:
  replicas: 1 # one is enough
  ports: [80, 443]
webEnabled: false
";

const PATCHING_HOOK: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","onStartup":1}'
  exit 0
fi
echo '[{"op":"add","path":"/global/password","value":"s3cret"}]' > "$CONFIG_VALUES_JSON_PATCH_PATH"
echo run >> "$RUNS_LOG"
"#;

#[test]
fn a_config_patch_rewrites_only_its_section_of_the_file() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("global-hooks/password"), PATCHING_HOOK, true);
    std::fs::create_dir_all(root.join("modules")).unwrap();
    let config = root.join("config.yaml");
    write(&config, CONFIG, false);
    let log = root.join("operator.log");
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--config-file")
        .arg(&config)
        .env("RUNS_LOG", root.join("runs.log"))
        .env("LOG_LEVEL", "debug")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let text = || std::fs::read_to_string(&config).unwrap_or_default();
    wait_for("the hook's patch in the file", &log, || {
        text().contains("s3cret")
    });
    let patched = text();
    let untouched = &CONFIG[CONFIG.find("\n# The web module").unwrap()..];
    assert!(
        patched.starts_with(
            "# Config of the laptop cluster.\n# Owned by a person: keep these comments.\n\nglobal:"
        ),
        "{patched}"
    );
    assert!(patched.ends_with(untouched), "{patched}");
    assert!(patched.contains("clusterName: laptop"), "{patched}");

    // Our write is an echo: after a while nothing was reloaded because of it.
    std::thread::sleep(Duration::from_secs(1));
    let operator_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !operator_log.contains("config changed the global section"),
        "{operator_log}"
    );
    // A person's later edit is seen.
    std::fs::write(
        &config,
        patched.replace("webEnabled: false", "webEnabled: true"),
    )
    .unwrap();
    wait_for("the reload after the edit", &log, || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("config changed the global section or enable flags")
    });
}
