//! `module new` and `hook new` write trees that pass `check` and `test` as written, in bash and
//! in python, and whose chart renders with the value the generated hook computed.

use std::path::Path;

use crate::support::{require_tool, run, run_ok};

fn tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("modules")).unwrap();
    std::fs::create_dir_all(tmp.path().join("global-hooks")).unwrap();
    tmp
}

fn wd(root: &Path) -> &str {
    root.to_str().unwrap()
}

/// `test` on the tree: every case passes, and there are `cases` of them.
fn passes_check_and_test(root: &Path, cases: usize) {
    run_ok(&["check", "--working-dir", wd(root)]);
    let out = run_ok(&["test", "--working-dir", wd(root)]);
    assert!(out.contains(&format!("{cases} passed, 0 failed")), "{out}");
}

#[test]
fn module_new_with_a_bash_hook_and_an_enabled_script_passes_check_test_and_renders() {
    if !(require_tool("jq") && require_tool("helm")) {
        return;
    }
    let tmp = tree();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("modules/040-existing")).unwrap();
    let out = run_ok(&[
        "module",
        "new",
        "my-module",
        "--working-dir",
        wd(root),
        "--enabled",
    ]);
    let dir = root.join("modules/050-my-module");
    assert!(out.contains(&format!("created {}", dir.display())), "{out}");
    for file in [
        "Chart.yaml",
        "values.yaml",
        "openapi/config-values.yaml",
        "openapi/values.yaml",
        "templates/configmap.yaml",
        "hooks/compute-greeting",
        "hooks/compute-greeting.test.yaml",
        "enabled",
        "tests/enabled.test.yaml",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    passes_check_and_test(root, 4);
    let rendered = run_ok(&["module", "render", "my-module", "--working-dir", wd(root)]);
    assert!(
        rendered.contains(r#"greeting: "hello from my-module!""#),
        "{rendered}"
    );

    // a second time: refused, nothing changed
    let again = run(&["module", "new", "my-module", "--working-dir", wd(root)]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("module my-module already exists"),
        "{stderr}"
    );
}

#[test]
fn module_new_with_a_python_hook_passes_check_and_test() {
    if !(require_tool("python3") && require_tool("helm")) {
        return;
    }
    let tmp = tree();
    let root = tmp.path();
    run_ok(&[
        "module",
        "new",
        "py-mod",
        "--working-dir",
        wd(root),
        "--lang",
        "python",
        "--order",
        "7",
    ]);
    let hook =
        std::fs::read_to_string(root.join("modules/007-py-mod/hooks/compute-greeting")).unwrap();
    assert!(hook.starts_with("#!/usr/bin/env python3"), "{hook}");
    assert!(!root.join("modules/007-py-mod/enabled").exists());
    passes_check_and_test(root, 2);
}

#[test]
fn hook_new_adds_module_and_global_hooks_that_pass_check_and_test() {
    if !(require_tool("jq") && require_tool("python3")) {
        return;
    }
    let tmp = tree();
    let root = tmp.path();
    run_ok(&["module", "new", "my-module", "--working-dir", wd(root)]);
    run_ok(&[
        "hook",
        "new",
        "watch",
        "--module",
        "my-module",
        "--working-dir",
        wd(root),
    ]);
    run_ok(&[
        "hook",
        "new",
        "startup",
        "--working-dir",
        wd(root),
        "--lang",
        "python",
    ]);
    assert!(
        root.join("modules/010-my-module/hooks/watch.test.yaml")
            .is_file()
    );
    assert!(root.join("global-hooks/startup.test.yaml").is_file());
    let listed = run_ok(&["check", "--working-dir", wd(root)]);
    assert!(listed.contains("hooks/watch: beforeHelm: 20"), "{listed}");
    assert!(listed.contains("startup: onStartup: 10"), "{listed}");
    passes_check_and_test(root, 4);

    let missing = run(&[
        "hook",
        "new",
        "x",
        "--module",
        "nope",
        "--working-dir",
        wd(root),
    ]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no module nope"));
}
