//! Every values layer and its precedence: modules dirs' `values.yaml`, a module's own
//! `values.yaml`, config, schema defaults and values patches.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::collections::BTreeMap;

use addon_core::config::Config;
use addon_core::names::{HookName, ModuleName};
use addon_core::schema::{SchemaFile, ScopeSchemas};
use addon_core::values::{HookRef, PatchKind, Scope, ValuesError, ValuesPatch, ValuesStore};
use serde_json::json;

fn m(name: &str) -> ModuleName {
    ModuleName::new(name).unwrap()
}

fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn module_schemas(name: &str, config: Option<&str>, values: Option<&str>) -> ScopeSchemas {
    ScopeSchemas::load(
        &Scope::Module(m(name)),
        config.map(|text| SchemaFile {
            file: "openapi/config-values.yaml",
            text,
        }),
        values.map(|text| SchemaFile {
            file: "openapi/values.yaml",
            text,
        }),
    )
    .unwrap()
}

fn store_with_echo(values_file: &str, schemas: ScopeSchemas) -> ValuesStore {
    let mut store = ValuesStore::new();
    store
        .add_common_values(
            "modules/values.yaml",
            "global:\n  a: common\n  b: common\necho:\n  layer: common\n  common: 1\n",
        )
        .unwrap();
    store
        .add_module(
            m("echo"),
            Some(("modules/010-echo/values.yaml", values_file)),
            schemas,
        )
        .unwrap();
    store
}

fn values_patch(store: &mut ValuesStore, hook: &HookRef, text: &str) {
    let patch = ValuesPatch::parse(hook, PatchKind::Values, text).unwrap();
    store.apply_values_patch(hook, &patch).unwrap();
}

fn echo_hook() -> HookRef {
    HookRef::module(m("echo"), HookName::new("hooks/h").unwrap())
}

#[test]
fn module_values_yaml_beats_modules_dir_values_yaml() {
    let store = store_with_echo(
        "echo:\n  layer: module\n  own: 2\n",
        ScopeSchemas::none(&Scope::Module(m("echo"))),
    );
    assert_eq!(
        store.module_values(&m("echo")).unwrap(),
        json!({"layer": "module", "common": 1, "own": 2})
    );
}

#[test]
fn module_values_yaml_contributes_only_its_own_key() {
    let store = store_with_echo(
        "echo:\n  own: 2\nglobal:\n  a: from-module-file\nother:\n  x: 1\n",
        ScopeSchemas::none(&Scope::Module(m("echo"))),
    );
    assert_eq!(store.global_values(), json!({"a": "common", "b": "common"}));
}

#[test]
fn config_beats_static_values_and_defaults_fill_only_missing_keys() {
    let values_schema = "type: object\nproperties:\n  layer: {type: string, default: from-default}\n  fromDefault: {type: string, default: d}\n  common: {type: integer}\n  own: {type: integer}\n";
    let mut store = store_with_echo(
        "echo:\n  layer: module\n  own: 2\n",
        module_schemas("echo", None, Some(values_schema)),
    );
    store.set_config(Config::from_data(&data(&[("echo", "layer: config\n")])).unwrap());
    assert_eq!(
        store.module_values(&m("echo")).unwrap(),
        json!({"layer": "config", "common": 1, "own": 2, "fromDefault": "d"})
    );
}

#[test]
fn values_patches_beat_config_and_survive_a_config_change() {
    let mut store = store_with_echo("echo: {}\n", ScopeSchemas::none(&Scope::Module(m("echo"))));
    store.set_config(Config::from_data(&data(&[("echo", "layer: config\n")])).unwrap());
    values_patch(
        &mut store,
        &echo_hook(),
        r#"[{"op":"replace","path":"/echo/layer","value":"patch"}]"#,
    );
    assert_eq!(store.module_values(&m("echo")).unwrap()["layer"], "patch");
    let change =
        store.set_config(Config::from_data(&data(&[("echo", "layer: config2\nx: 1\n")])).unwrap());
    assert_eq!(change.modules_changed, vec![m("echo")]);
    let v = store.module_values(&m("echo")).unwrap();
    assert_eq!(v["layer"], "patch");
    assert_eq!(v["x"], 1);
}

#[test]
fn remembered_patch_whose_parent_vanished_is_skipped_on_reapply() {
    let mut store = store_with_echo("echo: {}\n", ScopeSchemas::none(&Scope::Module(m("echo"))));
    store.set_config(Config::from_data(&data(&[("echo", "deep:\n  k: 1\n")])).unwrap());
    values_patch(
        &mut store,
        &echo_hook(),
        r#"[{"op":"add","path":"/echo/deep/j","value":2}]"#,
    );
    store.set_config(Config::empty());
    let v = store.module_values(&m("echo")).unwrap();
    assert!(v.get("deep").is_none(), "{v}");
}

#[test]
fn several_modules_dirs_merge_in_order() {
    let mut store = ValuesStore::new();
    store
        .add_common_values(
            "dir1/values.yaml",
            "global:\n  a: 1\n  b: 1\nechoEnabled: true\n",
        )
        .unwrap();
    store
        .add_common_values("dir2/values.yaml", "global:\n  b: 2\nechoEnabled: false\n")
        .unwrap();
    store
        .add_module(
            m("echo"),
            None,
            ScopeSchemas::none(&Scope::Module(m("echo"))),
        )
        .unwrap();
    assert_eq!(store.global_values(), json!({"a": 1, "b": 2}));
    assert_eq!(store.flag_layers(&m("echo")).unwrap().common, Some(false));
}

#[test]
fn global_layers_are_common_then_config_then_defaults_then_patches() {
    let mut store = store_with_echo("echo: {}\n", ScopeSchemas::none(&Scope::Module(m("echo"))));
    store.set_global_schemas(
        ScopeSchemas::load(
            &Scope::Global,
            Some(SchemaFile {
                file: "openapi/config-values.yaml",
                text: "type: object\nproperties:\n  a: {type: string}\n  b: {type: string}\n  c: {type: string, default: cfg-default}\n",
            }),
            Some(SchemaFile {
                file: "openapi/values.yaml",
                text: "x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n  d: {type: string, default: values-default}\n  e: {type: string}\n",
            }),
        )
        .unwrap(),
    );
    store.set_config(Config::from_data(&data(&[("global", "b: config\n")])).unwrap());
    let hook = HookRef::global(HookName::new("g").unwrap());
    values_patch(
        &mut store,
        &hook,
        r#"[{"op":"add","path":"/global/e","value":"patch"}]"#,
    );
    assert_eq!(
        store.global_values(),
        json!({"a": "common", "b": "config", "c": "cfg-default", "d": "values-default", "e": "patch"})
    );
    assert_eq!(
        store.global_config_values(),
        json!({"b": "config", "c": "cfg-default"})
    );
}

#[test]
fn config_values_of_a_module_without_config_are_an_empty_object() {
    let store = store_with_echo(
        "echo:\n  a: 1\n",
        ScopeSchemas::none(&Scope::Module(m("echo"))),
    );
    let files = store.module_hook_values(&m("echo"), &[]).unwrap();
    assert_eq!(files.config_values, json!({"global": {}, "echo": {}}));
    assert_eq!(files.values["global"]["enabledModules"], json!([]));
}

#[test]
fn enabled_modules_lists_the_given_modules_in_order_and_helm_values_have_none() {
    let mut store = store_with_echo("echo: {}\n", ScopeSchemas::none(&Scope::Module(m("echo"))));
    store
        .add_module(
            m("zeta"),
            None,
            ScopeSchemas::none(&Scope::Module(m("zeta"))),
        )
        .unwrap();
    let files = store
        .module_hook_values(&m("echo"), &[m("zeta"), m("echo")])
        .unwrap();
    assert_eq!(
        files.values["global"]["enabledModules"],
        json!(["zeta", "echo"])
    );
    let helm = store.helm_values(&m("echo")).unwrap();
    assert!(helm["global"].get("enabledModules").is_none());
    assert_eq!(store.modules(), vec![m("echo"), m("zeta")]);
}

#[test]
fn unknown_module_is_an_error() {
    let store = ValuesStore::new();
    let err = store.module_values(&m("nope")).unwrap_err();
    assert!(matches!(err, ValuesError::UnknownModule { .. }));
    assert_eq!(err.category(), "unknown_module");
}

#[test]
fn false_section_in_module_values_yaml_gives_no_values_and_disables() {
    let mut store = ValuesStore::new();
    store
        .add_common_values("modules/values.yaml", "echoEnabled: true\n")
        .unwrap();
    store
        .add_module(
            m("echo"),
            Some(("values.yaml", "echo: \"false\"\n")),
            ScopeSchemas::none(&Scope::Module(m("echo"))),
        )
        .unwrap();
    assert_eq!(store.module_values(&m("echo")).unwrap(), json!({}));
    assert!(!store.flag_layers(&m("echo")).unwrap().enabled());
    // A later layer with a mapping section lifts the disabling section.
    store.set_config(Config::from_data(&data(&[("echo", "a: 1\n")])).unwrap());
    assert!(store.flag_layers(&m("echo")).unwrap().enabled());
}

#[test]
fn checksum_follows_values_not_key_order() {
    let mut store = store_with_echo("echo: {}\n", ScopeSchemas::none(&Scope::Module(m("echo"))));
    let scope = Scope::Module(m("echo"));
    let before = store.checksum(&scope).unwrap();
    store.set_config(Config::from_data(&data(&[("echo", "layer: common\n")])).unwrap());
    assert_eq!(
        store.checksum(&scope).unwrap(),
        before,
        "same value, same checksum"
    );
    store.set_config(Config::from_data(&data(&[("echo", "layer: other\n")])).unwrap());
    assert_ne!(store.checksum(&scope).unwrap(), before);
}
