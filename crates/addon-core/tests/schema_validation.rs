//! OpenAPI schema loading and validation beyond the seed examples: `nullable`, nested
//! `additionalProperties`, error paths, module names in messages and broken schemas.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use addon_core::names::ModuleName;
use addon_core::schema::{SchemaError, SchemaFile, ScopeSchemas};
use addon_core::values::Scope;
use serde_json::json;

fn module_scope() -> Scope {
    Scope::Module(ModuleName::new("cert-manager").unwrap())
}

fn load(config: Option<&str>, values: Option<&str>) -> Result<ScopeSchemas, SchemaError> {
    ScopeSchemas::load(
        &module_scope(),
        config.map(|text| SchemaFile {
            file: "modules/020-cert-manager/openapi/config-values.yaml",
            text,
        }),
        values.map(|text| SchemaFile {
            file: "modules/020-cert-manager/openapi/values.yaml",
            text,
        }),
    )
}

const CONFIG: &str = r#"
type: object
properties:
  email:
    type: string
    nullable: true
  resources:
    type: object
    properties:
      cpu: {type: string}
  labels:
    type: object
    additionalProperties:
      type: string
  issuers:
    type: array
    items:
      type: object
      properties:
        name: {type: string}
"#;

#[test]
fn nested_errors_report_every_problem_with_its_path_module_and_file() {
    let s = load(Some(CONFIG), None).unwrap();
    let bad = json!({"email": 5, "resources": {"memory": "1Gi"}, "labels": {"a": 1},
                     "issuers": [{"name": "x"}, {"name": "y", "kind": "z"}]});
    let err = s.validate_config(&bad).unwrap_err();
    let SchemaError::Validate { issues, .. } = &err else {
        panic!("{err}")
    };
    let paths: Vec<&str> = issues
        .iter()
        .map(|i| i.split(": ").next().unwrap())
        .collect();
    for want in [
        "/certManager/email",
        "/certManager/resources",
        "/certManager/labels/a",
        "/certManager/issuers/1",
    ] {
        assert!(paths.contains(&want), "{want} missing in {paths:?}");
    }
    let msg = err.to_string();
    assert!(
        msg.starts_with("module 'cert-manager': config values"),
        "{msg}"
    );
    assert!(
        msg.contains("modules/020-cert-manager/openapi/config-values.yaml"),
        "{msg}"
    );
    assert_eq!(err.category(), "values_invalid");
}

#[test]
fn nullable_field_accepts_null() {
    let s = load(Some(CONFIG), None).unwrap();
    s.validate_config(&json!({"email": null})).unwrap();
}

#[test]
fn explicit_additional_properties_true_keeps_an_object_open() {
    let s = load(
        Some("type: object\nadditionalProperties: true\nproperties:\n  a: {type: string}\n"),
        None,
    )
    .unwrap();
    s.validate_config(&json!({"a": "x", "b": 1})).unwrap();
}

#[test]
fn broken_yaml_schema_is_an_error_naming_module_and_file() {
    let err = load(Some("type: [object\n"), None).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("module 'cert-manager'") && msg.contains("config-values.yaml"),
        "{msg}"
    );
    assert_eq!(err.category(), "schema_invalid");
}

#[test]
fn schema_that_is_not_draft4_is_an_error() {
    let err = load(None, Some("type: object\nproperties:\n  a: {type: 12}\n")).unwrap_err();
    assert!(matches!(err, SchemaError::CompileSchema { .. }), "{err}");
}

#[test]
fn x_extend_without_a_config_schema_is_an_error() {
    let err = load(
        None,
        Some("x-extend: {schema: config-values.yaml}\ntype: object\n"),
    )
    .unwrap_err();
    assert!(matches!(err, SchemaError::ExtendTarget { .. }), "{err}");
}

#[test]
fn values_schema_required_list_is_checked_after_hooks() {
    let s = load(
        None,
        Some("type: object\nrequired: [a]\nproperties:\n  a: {type: string}\n"),
    )
    .unwrap();
    assert!(s.validate_values(&json!({})).is_err());
    s.validate_values(&json!({"a": "x"})).unwrap();
}

#[test]
fn defaults_from_config_then_values_schema_fill_missing_keys() {
    let s = load(
        Some("type: object\nproperties:\n  grafana: {type: object, default: {enabled: true}}\n  init:\n    type: object\n    default: {}\n    properties:\n      param1: {type: string, default: one}\n"),
        Some("x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n  internal:\n    type: object\n    default: {}\n    properties:\n      param1: {type: string, default: unknown}\n"),
    )
    .unwrap();
    let mut config = json!({});
    s.apply_config_defaults(&mut config);
    assert_eq!(
        config,
        json!({"grafana": {"enabled": true}, "init": {"param1": "one"}})
    );
    let mut values = json!({"init": {"param1": "static"}});
    s.apply_values_defaults(&mut values);
    assert_eq!(
        values,
        json!({"init": {"param1": "static"}, "grafana": {"enabled": true}, "internal": {"param1": "unknown"}})
    );
}

#[test]
fn scope_without_schemas_accepts_anything() {
    let s = ScopeSchemas::none(&Scope::Global);
    s.validate_config(&json!({"x": 1})).unwrap();
    s.validate_values(&json!({"x": 1})).unwrap();
    s.validate_helm(&json!({"x": 1})).unwrap();
    assert!(s.config().is_none() && s.values().is_none() && s.helm().is_none());
}

#[test]
fn openapi_only_formats_do_not_break_compilation() {
    let s = load(
        Some("type: object\nproperties:\n  port: {format: int-or-string, x-doc: free}\n  at: {type: string, format: date-time}\n"),
        None,
    )
    .unwrap();
    s.validate_config(&json!({"port": "http"})).unwrap();
    s.validate_config(&json!({"port": 80})).unwrap();
}
