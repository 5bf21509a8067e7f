//! The OpenAPI examples of the VALUES seed document: `x-extend`, defaults, `x-required-for-helm`,
//! an invalid ConfigMap and a config patch the schema refuses.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

mod common;

use std::collections::BTreeMap;

use addon_core::config::Config;
use addon_core::names::{HookName, ModuleName};
use addon_core::schema::{SchemaFile, ScopeSchemas};
use addon_core::values::{HookRef, PatchKind, Scope, ValuesError, ValuesPatch, ValuesStore};
use addon_core::yaml;
use serde_json::{Value, json};

use common::{configmap_data, fixture};

/// Loads `schema/<case>/global/openapi/{config-values,values}.yaml` where present.
fn global_schemas(case: &str) -> ScopeSchemas {
    let dir = format!(
        "{}/tests/fixtures/schema/{case}/global/openapi",
        env!("CARGO_MANIFEST_DIR")
    );
    let config = std::fs::read_to_string(format!("{dir}/config-values.yaml")).ok();
    let values = std::fs::read_to_string(format!("{dir}/values.yaml")).ok();
    ScopeSchemas::load(
        &Scope::Global,
        config.as_deref().map(|text| SchemaFile {
            file: "global-hooks/openapi/config-values.yaml",
            text,
        }),
        values.as_deref().map(|text| SchemaFile {
            file: "global-hooks/openapi/values.yaml",
            text,
        }),
    )
    .unwrap()
}

fn store_with(schemas: ScopeSchemas) -> ValuesStore {
    let mut store = ValuesStore::new();
    store.set_global_schemas(schemas);
    let m = ModuleName::new("module-one").unwrap();
    store
        .add_module(m.clone(), None, ScopeSchemas::none(&Scope::Module(m)))
        .unwrap();
    store
}

fn global_hook() -> HookRef {
    HookRef::global(HookName::new("hooks/discovery.sh").unwrap())
}

fn effective(path: &str) -> Value {
    yaml::parse(&fixture(path)).unwrap()
}

#[test]
fn x_extend_gives_the_documented_effective_schema() {
    let schemas = global_schemas("x-extend");
    let got = schemas.values().unwrap().effective();
    assert_eq!(got, &effective("schema/x-extend/effective-values.yaml"));
    let keys: Vec<&String> = got["properties"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "project",
            "clusterName",
            "clusterHostname",
            "discovery",
            "param1"
        ]
    );
}

#[test]
fn x_extend_discovery_object_accepts_any_keys() {
    let schemas = global_schemas("x-extend");
    let values = json!({"project": "p", "clusterName": "c", "param1": "x",
                        "discovery": {"anything": {"goes": [1]}}});
    schemas.validate_values(&values).unwrap();
    let extra = json!({"project": "p", "clusterName": "c", "param1": "x", "discovery": {},
                       "unknown": 1});
    assert!(schemas.validate_values(&extra).is_err());
}

#[test]
fn discovery_default_is_added_when_no_layer_sets_it() {
    let mut store = store_with(global_schemas("defaults"));
    let data = BTreeMap::from([("global".to_string(), "param1: a\n".to_string())]);
    store.set_config(Config::from_data(&data).unwrap());
    assert_eq!(
        store.global_values(),
        json!({"param1": "a", "discovery": {}})
    );
    // Defaults of values.yaml are not config values.
    assert_eq!(store.global_config_values(), json!({"param1": "a"}));
}

#[test]
fn discovery_default_does_not_override_a_present_value() {
    let mut store = store_with(global_schemas("defaults"));
    store
        .add_common_values("modules/values.yaml", "global:\n  discovery:\n    a: 1\n")
        .unwrap();
    let data = BTreeMap::from([("global".to_string(), "param1: a\n".to_string())]);
    store.set_config(Config::from_data(&data).unwrap());
    assert_eq!(store.global_values()["discovery"], json!({"a": 1}));
}

#[test]
fn x_required_for_helm_is_only_required_before_helm() {
    let schemas = global_schemas("required-for-helm");
    assert_eq!(
        schemas.values().unwrap().effective(),
        &effective("schema/required-for-helm/effective-values.yaml")
    );
    assert_eq!(
        schemas.helm().unwrap().effective(),
        &effective("schema/required-for-helm/effective-helm.yaml")
    );

    let mut store = store_with(schemas);
    let m = ModuleName::new("module-one").unwrap();
    let first = HookRef::global(HookName::new("hooks/param1.sh").unwrap());
    let p1 = r#"[{"op":"add","path":"/global/param1","value":"a"}]"#;
    let p1 = ValuesPatch::parse(&first, PatchKind::Values, p1).unwrap();
    store.apply_values_patch(&first, &p1).unwrap();
    let err = store.helm_values(&m).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("param2") && msg.contains("values for Helm"),
        "{msg}"
    );

    let second = HookRef::global(HookName::new("hooks/param2.sh").unwrap());
    let p2 = r#"[{"op":"add","path":"/global/param2","value":"b"}]"#;
    let p2 = ValuesPatch::parse(&second, PatchKind::Values, p2).unwrap();
    store.apply_values_patch(&second, &p2).unwrap();
    assert_eq!(
        store.helm_values(&m).unwrap()["global"],
        json!({"param1": "a", "param2": "b"})
    );
}

#[test]
fn invalid_global_configmap_is_rejected_naming_scope_file_and_path() {
    let store = store_with(global_schemas("validation"));
    let data = configmap_data(&fixture("schema/validation/invalid-configmap.yaml"));
    let config = Config::from_data(&data).unwrap();
    let err = store.check_config(&config, &[]).unwrap_err();
    let ValuesError::Validate { errors } = &err else {
        panic!("{err}")
    };
    assert_eq!(errors.len(), 1, "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with("global:"), "{msg}");
    assert!(
        msg.contains("global-hooks/openapi/config-values.yaml"),
        "{msg}"
    );
    assert!(
        msg.contains("/global: ") && msg.contains("clusterName"),
        "{msg}"
    );
}

#[test]
fn valid_configmap_passes() {
    let store = store_with(global_schemas("validation"));
    let data = configmap_data(&fixture("schema/validation/valid-configmap.yaml"));
    store
        .check_config(&Config::from_data(&data).unwrap(), &[])
        .unwrap();
}

fn valid_store() -> ValuesStore {
    let mut store = store_with(global_schemas("validation"));
    let data = configmap_data(&fixture("schema/validation/valid-configmap.yaml"));
    store.set_config(Config::from_data(&data).unwrap());
    store
}

#[test]
fn config_patch_setting_cluster_hostname_to_an_object_is_refused() {
    // The document writes the value as "{}" and says a string is required: the refused value is
    // an object. The store, and so the ConfigMap, stays as it was.
    let mut store = valid_store();
    let hook = global_hook();
    let text = r#"[{"op":"add", "path":"/global/clusterHostname", "value":{}}]"#;
    let patch = ValuesPatch::parse(&hook, PatchKind::Config, text).unwrap();
    let before = store.config().clone();
    let err = store.apply_config_patch(&hook, &patch).unwrap_err();
    assert_eq!(err.category(), "values_invalid");
    let msg = err.to_string();
    assert!(msg.contains("/global/clusterHostname"), "{msg}");
    assert!(msg.contains("config-values.yaml"), "{msg}");
    assert_eq!(store.config(), &before);
}

#[test]
fn config_patch_with_the_literal_string_braces_is_a_valid_string() {
    // `"value":"{}"` as printed in the document is the JSON string "{}", which `type: string`
    // accepts under JSON Schema; see docs/values.md.
    let mut store = valid_store();
    let hook = global_hook();
    let text = r#"[{"op":"add", "path":"/global/clusterHostname", "value":"{}"}]"#;
    let patch = ValuesPatch::parse(&hook, PatchKind::Config, text).unwrap();
    store.apply_config_patch(&hook, &patch).unwrap();
    assert_eq!(store.global_config_values()["clusterHostname"], json!("{}"));
}
