//! `addon-operator hook run`: one hook, one binding, the tree's values; nothing written.

use serde_json::json;

use crate::support::{demo_dir, require_tool, run, run_ok, write};

#[test]
fn hook_run_feeds_objects_to_a_kubernetes_binding_and_prints_the_outcome() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let objects = tmp.path().join("objects.yaml");
    write(
        &objects,
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: d, labels: {demo: 'true'}}, data: {greeting: hi}}\n",
        false,
    );
    let demo = demo_dir();
    let out = run(&[
        "hook",
        "run",
        "hooks/watch-configmaps",
        "--binding",
        "demo-configmaps",
        "--objects",
        objects.to_str().unwrap(),
        "--working-dir",
        demo.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let ctx = &report["bindingContext"][0];
    assert_eq!(ctx["type"], "Synchronization");
    assert_eq!(ctx["objects"][0]["filterResult"], json!("hi"));
    assert_eq!(report["values"]["global"]["clusterName"], "demo");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Synchronization with 1 object(s)"));
}

#[test]
fn hook_run_refuses_a_patch_outside_the_hooks_scope() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    std::fs::create_dir_all(r.join("global-hooks")).unwrap();
    write(&r.join("modules/values.yaml"), "webEnabled: true\n", false);
    write(
        &r.join("modules/010-web/hooks/sneaky"),
        "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\necho '[{\"op\": \"add\", \"path\": \"/global/x\", \"value\": 1}]' > $VALUES_JSON_PATCH_PATH\n",
        true,
    );
    let out = run(&[
        "hook",
        "run",
        "hooks/sneaky",
        "--module",
        "web",
        "--binding",
        "beforeHelm",
        "--working-dir",
        r.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("/global/x") && stderr.contains("sneaky"),
        "{stderr}"
    );
}

#[test]
fn python_hooks_run_with_the_module_venv_interpreter() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    std::fs::create_dir_all(r.join("global-hooks")).unwrap();
    write(&r.join("modules/values.yaml"), "webEnabled: true\n", false);
    write(&r.join("modules/010-web/values.yaml"), "web: {}\n", false);
    // a stand-in interpreter: runs the "python" file with sh and tells it who started it
    write(
        &r.join("modules/010-web/hooks/venv/bin/python3"),
        "#!/bin/sh\nexport STARTED_BY=venv\nexec /bin/sh \"$@\"\n",
        true,
    );
    write(
        &r.join("modules/010-web/hooks/probe.py"),
        "if [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\necho \"[{\\\"op\\\": \\\"add\\\", \\\"path\\\": \\\"/web/by\\\", \\\"value\\\": \\\"$STARTED_BY $PYTHONHOME\\\"}]\" > $VALUES_JSON_PATCH_PATH\n",
        true,
    );
    let stdout = run_ok(&[
        "hook",
        "run",
        "hooks/probe.py",
        "--module",
        "web",
        "--binding",
        "beforeHelm",
        "--working-dir",
        r.to_str().unwrap(),
    ]);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let by = report["values"]["web"]["by"].as_str().unwrap();
    assert!(
        by.starts_with("venv ") && by.ends_with("modules/010-web/hooks/venv"),
        "{by}"
    );
}
