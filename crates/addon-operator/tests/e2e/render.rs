//! `addon-operator module render`: the manifests of a module after running its tree locally.

use crate::support::{demo_dir, require_tool, run, run_ok, write};

#[test]
fn render_prints_the_manifest_with_values_computed_by_hooks() {
    if !require_tool("jq") || !require_tool("helm") {
        return;
    }
    let demo = demo_dir();
    let config = demo.join("config.yaml");
    let before = std::fs::read_to_string(&config).unwrap();
    let stdout = run_ok(&[
        "module",
        "render",
        "echo-server",
        "--working-dir",
        demo.to_str().unwrap(),
        "--config-file",
        config.to_str().unwrap(),
    ]);
    assert!(stdout.contains("kind: ConfigMap"), "{stdout}");
    assert!(
        stdout.contains(r#"greeting: "hello from the config file (cluster laptop)""#),
        "the beforeHelm hook's value is rendered: {stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        before,
        "the config is never written"
    );
}

#[test]
fn render_of_a_disabled_module_or_after_a_failing_hook_exits_1_with_the_reason() {
    if !require_tool("helm") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    std::fs::create_dir_all(r.join("global-hooks")).unwrap();
    write(&r.join("modules/values.yaml"), "webEnabled: true\n", false);
    write(
        &r.join("modules/010-web/Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        false,
    );
    write(
        &r.join("modules/020-off/Chart.yaml"),
        "apiVersion: v2\nname: off\nversion: 0.1.0\n",
        false,
    );
    let dir = r.to_str().unwrap();
    let out = run(&["module", "render", "off", "--working-dir", dir]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot render") && stderr.contains("module 'off' is disabled"),
        "{stderr}"
    );

    write(
        &r.join("modules/010-web/hooks/before"),
        "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\necho 'no greeting today' >&2\nexit 3\n",
        true,
    );

    let out = run(&["module", "render", "web", "--working-dir", dir]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("ModuleRun:web") && stderr.contains("no greeting today"),
        "{stderr}"
    );
}

/// Helm reads the values file with YAML 1.1 rules; strings that look like booleans, numbers,
/// null or dates must reach the chart as strings, and real booleans and numbers as such.
#[test]
fn values_keep_their_types_through_the_helm_values_file() {
    if !require_tool("helm") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    std::fs::create_dir_all(r.join("global-hooks")).unwrap();
    write(&r.join("modules/values.yaml"), "tEnabled: true\n", false);
    write(
        &r.join("modules/010-t/Chart.yaml"),
        "apiVersion: v2\nname: t\nversion: 0.1.0\n",
        false,
    );
    write(
        &r.join("modules/010-t/templates/t.yaml"),
        "kinds: |\n{{- range $k, $v := .Values.t }}\n  {{ $k }}={{ kindOf $v }}\n{{- end }}\n",
        false,
    );
    let strings = [
        "yes",
        "on",
        "OFF",
        "y",
        "N",
        "true",
        "null",
        "~",
        "1",
        "1.5",
        "0x10",
        "0755",
        "1e3",
        "",
        "2026-11-21",
        ".inf",
    ];
    let mut values = String::from("t:\n  zbool: true\n  znum: 5\n");
    for (i, s) in strings.iter().enumerate() {
        values.push_str(&format!("  s{i:02}: \"{s}\"\n"));
    }
    write(&r.join("modules/010-t/values.yaml"), &values, false);
    let stdout = run_ok(&[
        "module",
        "render",
        "t",
        "--working-dir",
        r.to_str().unwrap(),
    ]);
    for (i, s) in strings.iter().enumerate() {
        assert!(stdout.contains(&format!("s{i:02}=string")), "{s}: {stdout}");
    }
    assert!(
        stdout.contains("zbool=bool") && stdout.contains("znum=float64"),
        "{stdout}"
    );
}
