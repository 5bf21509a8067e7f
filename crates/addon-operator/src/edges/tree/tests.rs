//! Tests of filesystem discovery on temporary trees.

use super::*;
use addon_core::error::error_chain;
use std::os::unix::fs::symlink;

fn write(path: &Path, text: &str, executable: bool) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    let mode = if executable { 0o755 } else { 0o644 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn config(root: &Path) -> LoaderConfig {
    LoaderConfig {
        modules_dirs: vec![root.join("modules")],
        global_hooks_dir: root.join("global-hooks"),
        unnumbered_order: 1,
    }
}

fn names(hooks: &[HookFile]) -> Vec<&str> {
    hooks.iter().map(|h| h.name.as_str()).collect()
}

#[test]
fn finds_modules_in_order_with_their_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("global-hooks")).unwrap();
    write(&root.join("modules/values.yaml"), "global: {a: 1}\n", false);
    write(
        &root.join("modules/020-web/Chart.yaml"),
        "name: web\n",
        false,
    );
    write(
        &root.join("modules/020-web/values.yaml"),
        "web: {x: 1}\n",
        false,
    );
    write(&root.join("modules/020-web/enabled"), "#!/bin/sh\n", true);
    write(
        &root.join("modules/020-web/hooks/b.sh"),
        "#!/bin/sh\n",
        true,
    );
    write(
        &root.join("modules/020-web/hooks/sub/a.py"),
        "#!/bin/sh\n",
        true,
    );
    write(
        &root.join("modules/020-web/openapi/values.yaml"),
        "type: object\n",
        false,
    );
    write(&root.join("modules/005-db/hooks/h"), "#!/bin/sh\n", true);
    write(&root.join("modules/plain/templates/cm.yaml"), "", false);

    let (found, errors) = load(&config(root));
    assert!(errors.is_empty(), "{errors:?}");
    let modules: Vec<_> = found
        .modules
        .iter()
        .map(|m| (m.name.as_str(), m.order))
        .collect();
    assert_eq!(modules, [("plain", 1), ("db", 5), ("web", 20)]);
    let web = &found.modules[2];
    assert!(web.has_chart && web.enabled_script.is_some());
    assert!(web.values_yaml.as_ref().unwrap().text.contains("x: 1"));
    assert!(web.openapi.values.is_some() && web.openapi.config_values.is_none());
    assert_eq!(names(&web.hooks), ["hooks/b.sh", "hooks/sub/a.py"]);
    assert_eq!(web.hooks[1].working_dir, root.join("modules/020-web/hooks"));
    assert!(
        !found.modules[1].has_chart,
        "db has neither Chart.yaml nor templates/"
    );
    assert!(found.modules[0].has_chart, "templates/ alone makes a chart");
    assert_eq!(found.modules_values.len(), 1);
}

#[test]
fn skips_dot_files_lib_dirs_and_data_files_and_warns_on_non_executables() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("global-hooks/.hidden"), "#!/bin/sh\n", true);
    write(
        &root.join("global-hooks/lib/common.sh"),
        "#!/bin/sh\n",
        true,
    );
    write(&root.join("global-hooks/config.yaml"), "", true);
    write(&root.join("global-hooks/README.md"), "", true);
    write(&root.join("global-hooks/notes"), "", false);
    write(
        &root.join("global-hooks/000-start/hook"),
        "#!/bin/sh\n",
        true,
    );
    fs::create_dir_all(root.join("modules/.git")).unwrap();

    let (found, errors) = load(&config(root));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(names(&found.global.hooks), ["000-start/hook"]);
    assert!(found.modules.is_empty());
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(found.warnings[0].contains("notes"));
}

#[test]
fn global_hooks_in_a_hooks_subdir_are_named_from_hooks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("global-hooks/hooks/startup.sh"),
        "#!/bin/sh\n",
        true,
    );
    write(
        &root.join("global-hooks/openapi/config-values.yaml"),
        "type: object\n",
        false,
    );
    fs::create_dir_all(root.join("modules")).unwrap();

    let (found, errors) = load(&config(root));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(names(&found.global.hooks), ["hooks/startup.sh"]);
    assert!(found.global.openapi.config_values.is_some());
}

#[test]
fn symlinked_module_takes_the_link_name_and_several_dirs_are_scanned() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("global-hooks")).unwrap();
    write(
        &root.join("elsewhere/real-dir/hooks/h"),
        "#!/bin/sh\n",
        true,
    );
    fs::create_dir_all(root.join("modules")).unwrap();
    symlink(
        root.join("elsewhere/real-dir"),
        root.join("modules/030-linked"),
    )
    .unwrap();
    symlink(root.join("nowhere"), root.join("modules/040-dangling")).unwrap();
    fs::create_dir_all(root.join("more/010-extra")).unwrap();
    let mut cfg = config(root);
    cfg.modules_dirs.push(root.join("more"));

    let (found, errors) = load(&cfg);
    assert!(errors.is_empty(), "{errors:?}");
    let modules: Vec<_> = found.modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(modules, ["extra", "linked"]);
    assert_eq!(names(&found.modules[1].hooks), ["hooks/h"]);
    assert!(found.warnings.iter().any(|w| w.contains("040-dangling")));
}

#[test]
fn bad_module_names_and_values_key_collisions_are_reported_a_missing_dir_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("modules/001-Bad_Name")).unwrap();
    fs::create_dir_all(root.join("modules/002-module-1")).unwrap();
    fs::create_dir_all(root.join("modules/003-good")).unwrap();
    fs::create_dir_all(root.join("modules/004-module1")).unwrap();

    let (found, errors) = load(&config(root));
    let text: Vec<String> = errors.iter().map(|e| error_chain(e)).collect();
    assert_eq!(errors.len(), 2, "{text:?}");
    assert!(text.iter().any(|e| e.contains("001-Bad_Name")));
    assert!(
        text.iter()
            .any(|e| e.contains("002-module-1") && e.contains("004-module1"))
    );
    let modules: Vec<_> = found.modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(modules, ["module-1", "good"]);
    assert!(found.global.hooks.is_empty());
}

#[test]
fn symlink_loops_under_hooks_are_reported_and_hooks_are_found_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("global-hooks/hooks/a.sh"), "#!/bin/sh\n", true);
    write(
        &root.join("global-hooks/hooks/sub/b.sh"),
        "#!/bin/sh\n",
        true,
    );
    symlink("..", root.join("global-hooks/hooks/sub/loop")).unwrap();
    symlink("..", root.join("global-hooks/hooks/sub/loop2")).unwrap();
    fs::create_dir_all(root.join("modules")).unwrap();

    let (found, errors) = load(&config(root));
    assert_eq!(names(&found.global.hooks), ["hooks/a.sh", "hooks/sub/b.sh"]);
    let text: Vec<String> = errors.iter().map(|e| error_chain(e)).collect();
    assert_eq!(text.len(), 2, "{text:?}");
    assert!(text[0].contains("hooks/sub/loop leads back to"), "{text:?}");
    assert!(
        text[1].contains("hooks/sub/loop2 leads back to"),
        "{text:?}"
    );
    assert!(text[0].contains("symlink loop"), "{text:?}");
    assert_eq!(errors[0].category(), "directory_loop");
}

#[test]
fn many_links_to_ancestors_and_siblings_cost_one_scan_of_each_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let hooks = root.join("modules/010-m/hooks");
    write(&hooks.join("h.sh"), "#!/bin/sh\n", true);
    let mut dir = hooks.clone();
    for level in 0..20 {
        dir = dir.join(format!("d{level}"));
        write(&dir.join("x.sh"), "#!/bin/sh\n", true);
        symlink("..", dir.join("up1")).unwrap();
        symlink("../..", dir.join("up2")).unwrap();
    }
    symlink(hooks.join("d0/d1"), hooks.join("again")).unwrap();
    fs::create_dir_all(root.join("global-hooks")).unwrap();

    let started = std::time::Instant::now();
    let (found, errors) = load(&config(root));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(found.modules[0].hooks.len(), 21);
    assert_eq!(errors.len(), 40, "one loop per link");
    assert!(errors.iter().all(|e| e.category() == "directory_loop"));
    assert!(
        found
            .warnings
            .iter()
            .any(|w| w.contains("hooks/again") && w.contains("already scanned")),
        "{:?}",
        found.warnings
    );
    let names = names(&found.modules[0].hooks);
    assert!(
        names.contains(&"hooks/d0/d1/x.sh"),
        "real paths win: {names:?}"
    );
}

#[test]
fn a_symlinked_hooks_subdirectory_outside_the_tree_is_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("shared/common.sh"), "#!/bin/sh\n", true);
    fs::create_dir_all(root.join("global-hooks/hooks")).unwrap();
    symlink(root.join("shared"), root.join("global-hooks/hooks/shared")).unwrap();
    fs::create_dir_all(root.join("modules")).unwrap();

    let (found, errors) = load(&config(root));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(names(&found.global.hooks), ["hooks/shared/common.sh"]);
}

#[test]
fn module_yaml_weight_and_name_win_over_the_directory_and_unused_keys_are_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("modules/010-web/module.yaml"),
        "name: frontend\nweight: 30\nstage: Preview\nrequirements:\n  deckhouse: '>= 1.61'\n  modules:\n    db: '>= 1.0'\n",
        false,
    );
    write(
        &root.join("modules/010-web/Chart.yaml"),
        "name: web\nversion: 0.3.1\n",
        false,
    );
    write(&root.join("modules/020-db/templates/a.yaml"), "", false);
    let (found, errors) = load(&config(root));
    assert!(errors.is_empty(), "{errors:?}");
    let modules: Vec<_> = found
        .modules
        .iter()
        .map(|m| (m.name.as_str(), m.order))
        .collect();
    assert_eq!(modules, [("db", 20), ("frontend", 30)]);
    let web = &found.modules[1].definition;
    assert_eq!(web.requires[0].module.as_str(), "db");
    assert_eq!(web.version.as_ref().unwrap().to_string(), "0.3.1");
    let note = found.warnings.iter().find(|w| w.contains("module.yaml"));
    assert!(
        note.is_some_and(|n| n.contains("stage, requirements.deckhouse not used")),
        "{:?}",
        found.warnings
    );
}

#[test]
fn modules_requiring_each_other_in_a_cycle_are_a_tree_error_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let requires = |other: &str| format!("requirements:\n  modules:\n    {other}: '>= 0.0.0'\n");
    write(
        &root.join("modules/001-a/module.yaml"),
        &requires("b"),
        false,
    );
    write(
        &root.join("modules/002-b/module.yaml"),
        &requires("a"),
        false,
    );
    let (_, errors) = load(&config(root));
    let text: Vec<String> = errors.iter().map(|e| error_chain(e)).collect();
    assert_eq!(text, ["modules require each other in a cycle: a -> b -> a"]);
    assert_eq!(errors[0].category(), "module_cycle");
}

#[test]
fn a_module_yaml_that_cannot_be_read_is_a_tree_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("modules/001-a/module.yaml"),
        "weight: heavy\n",
        false,
    );
    let (_, errors) = load(&config(root));
    let text = error_chain(&errors[0]);
    assert!(text.contains("001-a/module.yaml"), "{text}");
    assert!(
        text.contains("key 'weight' must be a whole number"),
        "{text}"
    );
}
