//! `check` on trees copied from flant/addon-operator's tests and examples (see
//! `tests/fixtures/upstream/NOTICE`): each is accepted, and gives what the Go tests expect.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{require_tool, run, wait_for};

fn upstream(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream")
        .join(rel)
}

/// Writes the `data` of an upstream `config_map.yaml` as a config file.
fn config_file(cm: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(cm).unwrap();
    let doc = addon_core::yaml::parse(&text).unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, serde_json::to_string(&doc["data"]).unwrap()).unwrap();
    path
}

/// Runs `check -o json` with the given modules and global hooks directories.
fn check(modules: &str, global_hooks: &Path, config: Option<&Path>) -> Value {
    let mut args = vec![
        "check".to_string(),
        "--modules-dir".into(),
        modules.into(),
        "--global-hooks-dir".into(),
        global_hooks.display().to_string(),
        "-o".into(),
        "json".into(),
    ];
    if let Some(config) = config {
        args.extend(["--config-file".into(), config.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn module_tree(tree: &str, with_config: bool) -> Value {
    let root = upstream(&format!("module_manager/{tree}"));
    let tmp = tempfile::tempdir().unwrap();
    let config = with_config.then(|| config_file(&root.join("config_map.yaml"), tmp.path()));
    let modules = root.join("modules").display().to_string();
    check(&modules, &root.join("global-hooks"), config.as_deref())
}

fn enabled(report: &Value) -> Vec<(String, String, bool)> {
    report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["valuesKey"].as_str().unwrap().to_string(),
                m["enabled"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn own(list: &[(&str, &str, bool)]) -> Vec<(String, String, bool)> {
    list.iter()
        .map(|(n, k, e)| (n.to_string(), k.to_string(), *e))
        .collect()
}

/// Go's `load_values__common_and_module_and_kube`: module names with digit words
/// (`with-values-1` → `withValues1`) load, and config keys find their modules.
#[test]
fn module_names_with_digit_words_load_with_go_values_keys() {
    let report = module_tree("load_values__common_and_module_and_kube", true);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(
        enabled(&report),
        own(&[
            ("with-values-1", "withValues1", false),
            ("with-values-2", "withValues2", false),
            ("without-values", "withoutValues", false),
            ("with-kube-values", "withKubeValues", true),
        ])
    );
    let values = &report["values"];
    assert_eq!(values["withValues1"], json!({"a": 1, "b": 2, "c": 3}));
    assert_eq!(values["withValues2"]["foo"], "barbaz");
    assert_eq!(values["withKubeValues"], json!({"bar": "foobaz"}));
    assert_eq!(values["global"]["param1"], "qwe");
    assert_eq!(values["global"]["d"], json!(["a", "b", "c"]));
}

/// Go's `modules_state__no_cm__simple`: `module-1` … `module-9`, enabled by `values.yaml`.
#[test]
fn numbered_word_module_names_are_enabled_by_their_flags() {
    let report = module_tree("modules_state__no_cm__simple", false);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    let on: Vec<_> = enabled(&report)
        .into_iter()
        .filter(|(_, _, e)| *e)
        .map(|(n, _, _)| n)
        .collect();
    assert_eq!(on, ["module-1", "module-4", "module-8"]);
    assert_eq!(report["modules"].as_array().unwrap().len(), 6);
}

/// Go's `load_values__module_apply_defaults`: `required: [param2]` under `internal` in
/// `openapi/values.yaml` is for a hook to fill; the config schema ignores `values.yaml` keys.
#[test]
fn values_schema_required_waits_for_hooks_and_config_schema_sees_only_config() {
    let report = module_tree("load_values__module_apply_defaults", true);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    let values = &report["values"];
    assert_eq!(values["moduleOne"]["internal"]["param1"], "unknown");
    assert_eq!(values["moduleOne"]["logLevel"], "Debug");
    assert_eq!(values["global"]["grafana"], "grafana");
    assert_eq!(values["global"]["init"]["param1"], "zzz");
    assert_eq!(values["global"]["discovery"], json!({}));
    assert_eq!(values["global"]["prometheus"], "qwe");
}

/// Go's `TestLoadModules` tree: the same directory as modules and global hooks dir, holding only
/// a `values.yaml`.
#[test]
fn a_directory_with_only_values_yaml_gives_global_values() {
    let dir = upstream("module_manager/loader");
    let report = check(&dir.display().to_string(), &dir, None);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(
        report["values"]["global"]["modules"]["ingressClass"],
        "nginx"
    );
    assert_eq!(report["modules"], json!([]));
}

/// Go's `TestDirWithSymlinks` and `TestLoadMultiDir`: symlinked modules, and several modules
/// directories where each directory's `values.yaml` serves its own modules only.
#[test]
fn each_modules_directory_values_serve_its_own_modules() {
    let hooks = upstream("module_loader/no-global-hooks");
    let dir1 = upstream("module_loader/dir1").display().to_string();
    let report = check(&dir1, &hooks, None);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(report["modules"].as_array().unwrap().len(), 2);
    assert_eq!(
        report["values"]["moduleOne"],
        json!({"param1": "val1", "param2": "val2"})
    );

    let dirs = format!(
        "{}:{}",
        upstream("module_loader/dir2").display(),
        upstream("module_loader/dir3").display()
    );
    let report = check(&dirs, &hooks, None);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    let names: Vec<_> = enabled(&report).into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(names, ["mod-two", "mod-one"]);
    assert_eq!(
        report["values"]["modOne"],
        json!({"param1": "val2", "param2": "val2"})
    );
    assert!(report["values"].get("moduleThree").is_none(), "{report:#}");
}

/// `examples/101-module-sysctl-tuner` has no `global-hooks/` directory.
#[test]
fn a_tree_without_global_hooks_is_valid() {
    if !require_tool("jq") {
        return;
    }
    let root = upstream("examples/101-module-sysctl-tuner");
    let tmp = tempfile::tempdir().unwrap();
    let config = config_file(&root.join("addon-operator-cm.yaml"), tmp.path());
    let modules = root.join("modules").display().to_string();
    let report = check(&modules, &root.join("global-hooks"), Some(&config));
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(
        enabled(&report),
        own(&[("sysctl-tuner", "sysctlTuner", true)])
    );
    assert_eq!(
        report["modules"][0]["hooks"][0]["name"],
        "hooks/module-hooks.sh"
    );
}

/// `examples/001-startup-global` has global hooks only; a missing modules directory is fine too.
#[test]
fn a_tree_with_global_hooks_only_is_valid() {
    let root = upstream("examples/001-startup-global");
    let missing = root.join("no-modules-here").display().to_string();
    let report = check(&missing, &root.join("global-hooks"), None);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(report["globalHooks"][0]["name"], "hook.sh");
    let nothing = check(&missing, &root.join("no-global-hooks"), None);
    let errors = nothing["errors"].to_string();
    assert!(
        errors.contains("none of the directories exists"),
        "{errors}"
    );
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    Some(body)
}

/// Images built for shell-operator set `SHELL_OPERATOR_*`; the Go operator honours them (its own
/// `ADDON_OPERATOR_*` variables win). `HELM_TIMEOUT` / `--helm-history-max` reach helm.
#[test]
fn shell_operator_variables_and_helm_flags_are_honoured() {
    use crate::support::{Running, binary, path_with_tools, write};
    use std::process::{Command, Stdio};
    if !require_tool("helm") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\n",
        false,
    );
    write(
        &root.join("modules/010-web/Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        false,
    );
    write(
        &root.join("modules/010-web/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n",
        false,
    );
    let argv_log = root.join("helm-argv.log");
    write(
        &root.join("helm-wrapper"),
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec helm \"$@\"\n",
            argv_log.display()
        ),
        true,
    );
    let port = free_port();
    let log = root.join("operator.log");
    let child = Command::new(binary())
        .arg("--working-dir")
        .arg(root)
        .arg("--embedded-cluster")
        .arg("--helm-binary")
        .arg(root.join("helm-wrapper"))
        .args(["--helm-history-max", "3"])
        .arg("--debug-unix-socket")
        .arg(root.join("debug.socket"))
        .env("PATH", path_with_tools())
        .env("HELM_TIMEOUT", "90s")
        .env("SHELL_OPERATOR_TMP_DIR", root.join("shell-tmp"))
        .env("SHELL_OPERATOR_LISTEN_ADDRESS", "127.0.0.1")
        .env("SHELL_OPERATOR_LISTEN_PORT", port.to_string())
        .env("SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX", "shellop_")
        .env("SHELL_OPERATOR_NAMESPACE", "shellns")
        .env_remove("ADDON_OPERATOR_NAMESPACE")
        .env_remove("ADDON_OPERATOR_TMP_DIR")
        .env_remove("ADDON_OPERATOR_LISTEN_PORT")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let upgrade = || {
        let argv = std::fs::read_to_string(&argv_log).unwrap_or_default();
        argv.lines()
            .find(|l| l.starts_with("upgrade"))
            .map(str::to_string)
    };
    wait_for("a helm upgrade", &log, || upgrade().is_some());
    let upgrade = upgrade().unwrap_or_default();
    assert!(upgrade.contains("-n shellns"), "{upgrade}");
    assert!(
        upgrade.contains("--history-max 3 --timeout 90s"),
        "{upgrade}"
    );
    assert!(
        root.join("shell-tmp").is_dir(),
        "SHELL_OPERATOR_TMP_DIR is the tmp dir"
    );
    let metrics = http_get(port, "/metrics").unwrap_or_default();
    assert!(metrics.contains("shellop_"), "{metrics}");
}

/// Upstream's `pkg/values/validation/testdata`: `test-schema-ok.yaml` names its other files as
/// `$ref: testdata/...`, relative to the working directory of the Go test. As the global
/// schema, with the operator started in the directory above `testdata/`, it loads and its
/// referenced schemas (a whole file, and a fragment with local references) validate the config.
#[test]
fn upstream_validation_testdata_loads_with_refs_relative_to_the_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let testdata = upstream("values_validation/testdata");
    for name in [
        "test-schema-ok-project.yaml",
        "test-schema-ok-project-2.yaml",
    ] {
        std::fs::create_dir_all(root.join("testdata")).unwrap();
        std::fs::copy(testdata.join(name), root.join("testdata").join(name)).unwrap();
    }
    let openapi = root.join("global-hooks/openapi");
    std::fs::create_dir_all(&openapi).unwrap();
    std::fs::create_dir_all(root.join("modules")).unwrap();
    std::fs::copy(
        testdata.join("test-schema-ok.yaml"),
        openapi.join("config-values.yaml"),
    )
    .unwrap();
    let check = |config: &str| -> Value {
        std::fs::write(root.join("config.yaml"), config).unwrap();
        let out = std::process::Command::new(crate::support::binary())
            .args([
                "check",
                "--working-dir",
                ".",
                "--config-file",
                "config.yaml",
            ])
            .args(["-o", "json"])
            .current_dir(root)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    let good = "global:\n  clusterName: laptop\n  externalProjects:\n    project: {name: a, version: 1}\n  fragmentedProjects:\n    archive:\n    - {name: b, version: 2, description: old}\n";
    let report = check(good);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(
        report["values"]["global"]["externalProjects"]["project"]["version"],
        1
    );
    // the referenced schemas are in force: a string where the fragment says number
    let bad = good.replace("version: 2", "version: two");
    let report = check(&bad);
    let errors = report["errors"].to_string();
    assert!(errors.contains("fragmentedProjects"), "{report:#}");
}
