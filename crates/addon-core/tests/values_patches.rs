//! Hook patches through the values store: config vs values patches, enable flags from global
//! hooks, change detection, and every kind of refused patch leaving the store unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::collections::BTreeMap;

use addon_core::config::Config;
use addon_core::names::{HookName, ModuleName};
use addon_core::schema::{SchemaFile, ScopeSchemas};
use addon_core::values::{
    HookRef, PatchError, PatchKind, Scope, ValuesError, ValuesPatch, ValuesStore,
};
use serde_json::json;

fn m(name: &str) -> ModuleName {
    ModuleName::new(name).unwrap()
}

fn store() -> ValuesStore {
    let mut store = ValuesStore::new();
    store
        .add_common_values("modules/values.yaml", "global:\n  a: 1\necho:\n  x: 1\n")
        .unwrap();
    let schemas = ScopeSchemas::load(
        &Scope::Module(m("echo")),
        None,
        Some(SchemaFile {
            file: "modules/010-echo/openapi/values.yaml",
            text: "type: object\nproperties:\n  x: {type: integer}\n  y: {type: string, nullable: true}\n  list: {type: array}\n",
        }),
    )
    .unwrap();
    store
        .add_module(
            m("echo"),
            Some(("modules/010-echo/values.yaml", "echo: {}\n")),
            schemas,
        )
        .unwrap();
    store
}

fn module_hook() -> HookRef {
    HookRef::module(m("echo"), HookName::new("hooks/echo.sh").unwrap())
}

fn global_hook() -> HookRef {
    HookRef::global(HookName::new("hooks/global.sh").unwrap())
}

fn values(store: &mut ValuesStore, hook: &HookRef, text: &str) -> Result<bool, ValuesError> {
    let patch = ValuesPatch::parse(hook, PatchKind::Values, text).unwrap();
    store
        .apply_values_patch(hook, &patch)
        .map(|o| o.values_changed)
}

fn config(store: &mut ValuesStore, hook: &HookRef, text: &str) -> Result<bool, ValuesError> {
    let patch = ValuesPatch::parse(hook, PatchKind::Config, text).unwrap();
    store
        .apply_config_patch(hook, &patch)
        .map(|o| o.values_changed)
}

/// Checks that a refused patch left values, config and remembered patches as they were.
fn assert_refused(store: &mut ValuesStore, hook: &HookRef, text: &str) -> ValuesError {
    let scope = Scope::Module(m("echo"));
    let before = (
        store.module_values(&m("echo")).unwrap(),
        store.global_values(),
        store.config().clone(),
        store.values_patches(&scope).unwrap().to_vec(),
    );
    let err = values(store, hook, text).unwrap_err();
    let after = (
        store.module_values(&m("echo")).unwrap(),
        store.global_values(),
        store.config().clone(),
        store.values_patches(&scope).unwrap().to_vec(),
    );
    assert_eq!(before, after, "store changed by a refused patch");
    err
}

#[test]
fn all_six_operations_work_in_a_values_patch() {
    let mut s = store();
    let changed = values(
        &mut s,
        &module_hook(),
        r#"[{"op":"add","path":"/echo/list","value":[1]},
            {"op":"add","path":"/echo/list/-","value":2},
            {"op":"replace","path":"/echo/x","value":5},
            {"op":"copy","from":"/echo/x","path":"/echo/z"},
            {"op":"move","from":"/echo/z","path":"/echo/w"},
            {"op":"remove","path":"/echo/w"},
            {"op":"test","path":"/echo/x","value":5}]"#,
    )
    .unwrap();
    assert!(changed);
    assert_eq!(
        s.module_values(&m("echo")).unwrap(),
        json!({"x": 5, "list": [1, 2]})
    );
}

#[test]
fn a_patch_that_changes_nothing_reports_no_change() {
    let mut s = store();
    let changed = values(
        &mut s,
        &module_hook(),
        r#"[{"op":"replace","path":"/echo/x","value":1}]"#,
    )
    .unwrap();
    assert!(!changed);
    assert!(!values(&mut s, &module_hook(), "").unwrap());
}

#[test]
fn nullable_value_is_accepted() {
    let mut s = store();
    values(
        &mut s,
        &module_hook(),
        r#"[{"op":"add","path":"/echo/y","value":null}]"#,
    )
    .unwrap();
    assert_eq!(s.module_values(&m("echo")).unwrap()["y"], json!(null));
}

#[test]
fn module_hook_patching_global_is_refused_naming_hook_and_path() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &module_hook(),
        r#"[{"op":"add","path":"/global/b","value":1}]"#,
    );
    assert_eq!(err.category(), "patch_scope");
    let ValuesError::ApplyPatch { source } = &err else {
        panic!("{err}")
    };
    let msg = source.to_string();
    assert!(
        msg.contains("hooks/echo.sh") && msg.contains("/global/b"),
        "{msg}"
    );
}

#[test]
fn global_hook_patching_a_module_is_refused() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &global_hook(),
        r#"[{"op":"add","path":"/echo/b","value":1}]"#,
    );
    assert_eq!(err.category(), "patch_scope");
}

#[test]
fn add_into_a_missing_parent_is_refused() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &module_hook(),
        r#"[{"op":"add","path":"/echo/no/such","value":1}]"#,
    );
    assert_eq!(err.category(), "patch_apply");
}

#[test]
fn remove_of_a_missing_key_is_refused() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &module_hook(),
        r#"[{"op":"remove","path":"/echo/nope"}]"#,
    );
    assert_eq!(err.category(), "patch_apply");
}

#[test]
fn failing_test_operation_refuses_the_whole_patch() {
    let mut s = store();
    assert_refused(
        &mut s,
        &module_hook(),
        r#"[{"op":"replace","path":"/echo/x","value":2},{"op":"test","path":"/echo/x","value":3}]"#,
    );
}

#[test]
fn schema_violation_refuses_the_patch_naming_module_file_and_path() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &module_hook(),
        r#"[{"op":"replace","path":"/echo/x","value":"not a number"}]"#,
    );
    let msg = err.to_string();
    assert!(msg.contains("module 'echo'"), "{msg}");
    assert!(
        msg.contains("modules/010-echo/openapi/values.yaml"),
        "{msg}"
    );
    assert!(msg.contains("/echo/x"), "{msg}");
}

#[test]
fn unknown_key_is_refused_by_the_default_additional_properties() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &module_hook(),
        r#"[{"op":"add","path":"/echo/unknown","value":1}]"#,
    );
    assert_eq!(err.category(), "values_invalid");
}

#[test]
fn replacing_the_whole_section_with_a_scalar_is_refused() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &module_hook(),
        r#"[{"op":"replace","path":"/echo","value":7}]"#,
    );
    assert!(matches!(
        err,
        ValuesError::ApplyPatch {
            source: PatchError::SectionNotObject { .. }
        }
    ));
}

#[test]
fn invalid_json_and_bad_ops_are_refused_at_parse_time() {
    let hook = module_hook();
    for text in [
        "[{",
        r#"[{"op":"frobnicate","path":"/echo/x"}]"#,
        r#"[{"op":"add","path":"/echo/x"}]"#,
        "\"add\"",
    ] {
        let err = ValuesPatch::parse(&hook, PatchKind::Values, text).unwrap_err();
        assert_eq!(err.category(), "patch_parse", "{text}");
        assert!(err.to_string().contains("hooks/echo.sh"), "{err}");
    }
}

#[test]
fn global_hook_values_patch_sets_dynamic_enable_flags() {
    let mut s = store();
    let patch = ValuesPatch::parse(
        &global_hook(),
        PatchKind::Values,
        r#"[{"op":"add","path":"/echoEnabled","value":true},{"op":"add","path":"/global/b","value":2}]"#,
    )
    .unwrap();
    let outcome = s.apply_values_patch(&global_hook(), &patch).unwrap();
    assert!(outcome.values_changed);
    assert_eq!(outcome.enabled_changed, vec![m("echo")]);
    assert_eq!(s.dynamic_enabled().get(&m("echo")), Some(&true));
    assert_eq!(s.flag_layers(&m("echo")).unwrap().dynamic, Some(true));
    assert!(s.flag_layers(&m("echo")).unwrap().enabled());
    // The flag is state, not a remembered patch of the global values.
    assert_eq!(s.values_patches(&Scope::Global).unwrap().len(), 1);

    let patch = ValuesPatch::parse(
        &global_hook(),
        PatchKind::Values,
        r#"[{"op":"remove","path":"/echoEnabled"}]"#,
    )
    .unwrap();
    let outcome = s.apply_values_patch(&global_hook(), &patch).unwrap();
    assert!(!outcome.values_changed);
    assert_eq!(outcome.enabled_changed, vec![m("echo")]);
    assert!(s.dynamic_enabled().is_empty());
}

#[test]
fn enable_flag_must_be_a_boolean() {
    let mut s = store();
    let err = assert_refused(
        &mut s,
        &global_hook(),
        r#"[{"op":"add","path":"/echoEnabled","value":"yes"}]"#,
    );
    assert!(err.to_string().contains("patch refused"), "{err}");
}

#[test]
fn global_hook_config_patch_writes_global_and_enable_flags_to_config() {
    let mut s = store();
    let data = BTreeMap::from([
        ("global".to_string(), "a: 1\n".to_string()),
        ("echo".to_string(), "x: 3\n".to_string()),
    ]);
    s.set_config(Config::from_data(&data).unwrap());
    let patch = ValuesPatch::parse(
        &global_hook(),
        PatchKind::Config,
        r#"[{"op":"add","path":"/global/b","value":"two"},{"op":"add","path":"/echoEnabled","value":false}]"#,
    )
    .unwrap();
    let outcome = s.apply_config_patch(&global_hook(), &patch).unwrap();
    assert!(outcome.values_changed);
    assert!(outcome.config_change.global_changed);
    assert_eq!(outcome.config_change.enabled_changed, vec![m("echo")]);
    let out = s.config().to_data().unwrap();
    assert_eq!(out["echo"], "x: 3\n");
    assert_eq!(out["echoEnabled"], "false");
    assert_eq!(
        addon_core::yaml::parse(&out["global"]).unwrap(),
        json!({"a": 1, "b": "two"})
    );
    assert_eq!(s.global_config_values(), json!({"a": 1, "b": "two"}));
}

/// As in the Go operator, a config patch is checked against `config-values.yaml` only: values
/// (and their `required`) are checked after values patches and before Helm.
#[test]
fn module_config_patch_is_validated_against_the_config_schema_only() {
    let mut s = store();
    config(
        &mut s,
        &module_hook(),
        r#"[{"op":"add","path":"/echo/x","value":"nan"}]"#,
    )
    .unwrap();
    let schemas = ScopeSchemas::load(
        &Scope::Module(m("echo")),
        Some(SchemaFile {
            file: "modules/010-echo/openapi/config-values.yaml",
            text: "type: object\nproperties:\n  x: {type: integer}\n",
        }),
        None,
    )
    .unwrap();
    let mut s = store();
    s.add_module(m("echo"), None, schemas).unwrap();
    let err = config(
        &mut s,
        &module_hook(),
        r#"[{"op":"add","path":"/echo/x","value":"nan"}]"#,
    )
    .unwrap_err();
    assert_eq!(err.category(), "values_invalid");
    assert!(err.to_string().contains("expected type integer"), "{err}");
    assert!(s.config().modules.is_empty());
}

#[test]
fn config_patch_on_a_missing_section_starts_from_an_empty_object() {
    let mut s = store();
    assert!(
        config(
            &mut s,
            &module_hook(),
            r#"[{"op":"add","path":"/echo/x","value":9}]"#
        )
        .unwrap()
    );
    assert_eq!(s.module_config_values(&m("echo")).unwrap(), json!({"x": 9}));
    assert_eq!(s.module_values(&m("echo")).unwrap(), json!({"x": 9}));
}

#[test]
fn reset_module_patches_forgets_remembered_values_patches() {
    let mut s = store();
    values(
        &mut s,
        &module_hook(),
        r#"[{"op":"replace","path":"/echo/x","value":4}]"#,
    )
    .unwrap();
    s.reset_module_patches(&m("echo")).unwrap();
    assert_eq!(s.module_values(&m("echo")).unwrap(), json!({"x": 1}));
}

#[test]
fn a_store_built_for_a_reloaded_tree_takes_the_running_config_patches_and_gone_modules() {
    let mut running = store();
    running
        .add_module(
            m("gone"),
            Some(("modules/020-gone/values.yaml", "gone: {g: 1}\n")),
            ScopeSchemas::none(&Scope::Module(m("gone"))),
        )
        .unwrap();
    running.set_config(Config::from_file("config.yaml", "echo: {x: 5}\n").unwrap());
    values(
        &mut running,
        &module_hook(),
        r#"[{"op": "add", "path": "/echo/y", "value": "patched"}]"#,
    )
    .unwrap();
    let mut reloaded = ValuesStore::new();
    reloaded
        .add_common_values("modules/values.yaml", "global:\n  a: 2\n")
        .unwrap();
    reloaded
        .add_module(
            m("echo"),
            None,
            ScopeSchemas::none(&Scope::Module(m("echo"))),
        )
        .unwrap();
    reloaded.carry_over(running, &[m("gone")]);
    assert_eq!(reloaded.global_values(), json!({"a": 2}));
    assert_eq!(
        reloaded.module_values(&m("echo")).unwrap(),
        json!({"x": 5, "y": "patched"})
    );
    assert_eq!(reloaded.modules(), [m("echo"), m("gone")]);
    assert_eq!(reloaded.module_values(&m("gone")).unwrap(), json!({"g": 1}));
    reloaded.remove_module(&m("gone"));
    assert_eq!(reloaded.modules(), [m("echo")]);
}
