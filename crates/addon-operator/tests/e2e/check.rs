//! `addon-operator check` on real trees.

use serde_json::Value;

use crate::support::{demo_dir, require_tool, run, write};

fn json_report(args: &[&str]) -> (i32, Value) {
    let out = run(args);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

#[test]
fn demo_tree_is_valid_and_both_modules_are_enabled() {
    if !require_tool("jq") {
        return;
    }
    let demo = demo_dir();
    let config = demo.join("config.yaml");
    let (code, report) = json_report(&[
        "check",
        "--working-dir",
        demo.to_str().unwrap(),
        "--config-file",
        config.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(report["errors"], serde_json::json!([]), "{report:#}");
    assert_eq!(code, 0);
    let modules = report["modules"].as_array().unwrap();
    let names: Vec<_> = modules
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo-server", "reporter"]);
    assert!(modules.iter().all(|m| m["enabled"] == true), "{report:#}");
    assert_eq!(modules[0]["helm"], true);
    assert_eq!(modules[1]["helm"], false);
    assert_eq!(modules[1]["hooks"][0]["bindings"][0], "onStartup: 5");
    assert_eq!(report["globalHooks"][0]["name"], "hooks/discover-cluster");
    // config wins over modules/values.yaml; schema defaults are applied
    assert_eq!(report["values"]["global"]["clusterName"], "laptop");
    assert_eq!(report["values"]["global"]["logLevel"], "info");
    assert_eq!(
        report["values"]["echoServer"]["message"],
        "hello from the config file"
    );
    assert_eq!(report["values"]["echoServer"]["replicas"], 1);
}

#[test]
fn broken_hook_config_invalid_config_value_and_schema_violation_are_all_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("global-hooks/broken"),
        "#!/bin/sh\necho '{\"configVersion\": \"v1\", \"schedule\": [{\"crontab\": \"not a crontab\"}]}'\n",
        true,
    );
    write(
        &root.join("global-hooks/openapi/config-values.yaml"),
        "type: object\nproperties:\n  replicas: {type: integer}\n",
        false,
    );
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\n",
        false,
    );
    write(
        &root.join("modules/010-web/values.yaml"),
        "web: {}\n",
        false,
    );
    let config = root.join("config.yaml");
    write(
        &config,
        "global: |\n  replicas: three\nweb: |\n  key: [unclosed\n",
        false,
    );
    let out = run(&[
        "check",
        "--working-dir",
        root.to_str().unwrap(),
        "--config-file",
        config.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let errors: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("broken") && e.contains("crontab")),
        "hook config error missing: {stdout}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("web") && e.contains("config.yaml")),
        "config value error missing: {stdout}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("replicas") && e.contains("global")),
        "schema violation missing: {stdout}"
    );
    assert!(stdout.contains("3 error(s)"), "{stdout}");
}

#[test]
fn failing_enabled_script_and_failing_config_run_are_errors_naming_the_module() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
    write(
        &root.join("modules/values.yaml"),
        "aEnabled: true\nbEnabled: true\n",
        false,
    );
    write(
        &root.join("modules/001-a/enabled"),
        "#!/bin/sh\necho oops >&2\nexit 2\n",
        true,
    );
    write(
        &root.join("modules/002-b/hooks/h"),
        "#!/bin/sh\nexit 1\n",
        true,
    );
    write(
        &root.join("modules/003-c/enabled"),
        "#!/bin/sh\necho maybe > $MODULE_ENABLED_RESULT\n",
        true,
    );
    let (code, report) = json_report(&[
        "check",
        "--working-dir",
        root.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(code, 1);
    let errors: Vec<&str> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("module 'a'") && e.contains("oops")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("module 'b'") && e.contains("hooks/h")),
        "{errors:?}"
    );
    assert_eq!(
        errors.len(),
        2,
        "c is disabled by flags, so its script never runs: {errors:?}"
    );
    assert_eq!(report["modules"][1]["enabled"], true);
}

#[test]
fn a_cel_rule_that_does_not_compile_and_config_failing_a_rule_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\ndbEnabled: true\n",
        false,
    );
    write(
        &root.join("modules/010-web/openapi/config-values.yaml"),
        "type: object\nproperties:\n  port:\n    type: integer\n    x-deckhouse-validations:\n      - {expression: 'self >', message: broken}\n",
        false,
    );
    write(
        &root.join("modules/020-db/openapi/config-values.yaml"),
        "type: object\nproperties:\n  size: {type: integer}\nx-deckhouse-validations:\n  - {expression: 'self.size <= 10', message: size must be at most 10}\n",
        false,
    );
    let config = root.join("config.yaml");
    write(&config, "db: |\n  size: 11\n", false);
    let (code, report) = json_report(&[
        "check",
        "--working-dir",
        root.to_str().unwrap(),
        "--config-file",
        config.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(code, 1, "{report:#}");
    let errors: Vec<&str> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("010-web/openapi/config-values.yaml")
                && e.contains("/properties/port/x-deckhouse-validations/0")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("module 'db'") && e.contains("/db: size must be at most 10")),
        "{errors:?}"
    );
}
