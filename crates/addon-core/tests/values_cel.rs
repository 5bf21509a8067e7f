//! CEL rules (`x-deckhouse-validations`) through the values store: config edits and config
//! patches compared with the stored config, values patches with the values before them, and a
//! refused change leaving the store as it was.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use addon_core::config::Config;
use addon_core::names::{HookName, ModuleName};
use addon_core::schema::{SchemaFile, ScopeSchemas};
use addon_core::values::{HookRef, PatchKind, Scope, ValuesError, ValuesPatch, ValuesStore};
use serde_json::json;

const CONFIG_SCHEMA: &str = r#"
type: object
properties:
  replicas:
    type: integer
  mode:
    type: string
    x-deckhouse-validations:
      - expression: self == oldSelf
        message: mode is immutable
x-deckhouse-validations:
  - expression: self.replicas >= 1
    message: replicas must be at least 1
"#;

const VALUES_SCHEMA: &str = r#"
x-extend:
  schema: config-values.yaml
type: object
properties:
  internal:
    type: object
    properties:
      token:
        type: string
        x-deckhouse-validations:
          - expression: self == oldSelf
            message: the token is set once
"#;

fn m() -> ModuleName {
    ModuleName::new("echo").unwrap()
}

fn store() -> ValuesStore {
    let mut store = ValuesStore::new();
    let schemas = ScopeSchemas::load(
        &Scope::Module(m()),
        Some(SchemaFile {
            file: "modules/010-echo/openapi/config-values.yaml",
            text: CONFIG_SCHEMA,
        }),
        Some(SchemaFile {
            file: "modules/010-echo/openapi/values.yaml",
            text: VALUES_SCHEMA,
        }),
    )
    .unwrap();
    store.add_module(m(), None, schemas).unwrap();
    store
}

fn config(section: serde_json::Value) -> Config {
    let mut c = Config::empty();
    c.set_module_values(&m(), section);
    c
}

fn hook() -> HookRef {
    HookRef::module(m(), HookName::new("hooks/h.sh").unwrap())
}

fn values_patch(store: &mut ValuesStore, text: &str) -> Result<(), ValuesError> {
    let patch = ValuesPatch::parse(&hook(), PatchKind::Values, text).unwrap();
    store.apply_values_patch(&hook(), &patch).map(|_| ())
}

#[test]
fn a_config_edit_failing_a_rule_is_refused_with_module_path_and_message() {
    let s = store();
    let err = s
        .check_config(&config(json!({"replicas": 0})), &[m()])
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("module 'echo'"), "{text}");
    assert!(
        text.contains("/echo: replicas must be at least 1"),
        "{text}"
    );
    s.check_config(&config(json!({"replicas": 2})), &[m()])
        .unwrap();
}

#[test]
fn an_immutable_field_may_be_set_once_and_then_not_changed() {
    let mut s = store();
    s.set_config(config(json!({"replicas": 1})));
    let first = config(json!({"replicas": 1, "mode": "Direct"}));
    s.check_config(&first, &[m()]).unwrap();
    s.set_config(first);
    let changed = config(json!({"replicas": 1, "mode": "Proxy"}));
    let text = s.check_config(&changed, &[m()]).unwrap_err().to_string();
    assert!(text.contains("/echo/mode: mode is immutable"), "{text}");
    s.check_config(&config(json!({"replicas": 3, "mode": "Direct"})), &[m()])
        .unwrap();
}

#[test]
fn a_config_patch_changing_an_immutable_field_leaves_the_config_as_it_was() {
    let mut s = store();
    s.set_config(config(json!({"replicas": 1, "mode": "Direct"})));
    let before = s.config().clone();
    let patch = ValuesPatch::parse(
        &hook(),
        PatchKind::Config,
        r#"[{"op":"replace","path":"/echo/mode","value":"Proxy"}]"#,
    )
    .unwrap();
    let err = s.apply_config_patch(&hook(), &patch).unwrap_err();
    assert!(err.to_string().contains("mode is immutable"), "{err}");
    assert_eq!(s.config(), &before);
}

#[test]
fn a_values_patch_compares_with_the_values_before_it() {
    let mut s = store();
    s.set_config(config(json!({"replicas": 1})));
    values_patch(
        &mut s,
        r#"[{"op":"add","path":"/echo/internal","value":{"token":"a"}}]"#,
    )
    .unwrap();
    let before = s.module_values(&m()).unwrap();
    let err = values_patch(
        &mut s,
        r#"[{"op":"replace","path":"/echo/internal/token","value":"b"}]"#,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("/echo/internal/token: the token is set once"),
        "{err}"
    );
    assert_eq!(s.module_values(&m()).unwrap(), before);
}

/// The example of docs/values.md: mirrors may be added, never removed.
#[test]
fn the_documented_append_only_rule_keeps_every_old_mirror() {
    let schema = r#"
type: object
properties:
  mirrors:
    type: array
    items: {type: string}
x-deckhouse-validations:
  - expression: oldSelf.mirrors.all(m, m in self.mirrors)
    message: a mirror cannot be removed
"#;
    let mut s = ValuesStore::new();
    let schemas = ScopeSchemas::load(
        &Scope::Module(m()),
        Some(SchemaFile {
            file: "config-values.yaml",
            text: schema,
        }),
        None,
    )
    .unwrap();
    s.add_module(m(), None, schemas).unwrap();
    let first = config(json!({"mirrors": ["a"]}));
    s.check_config(&first, &[m()]).unwrap();
    s.set_config(first);
    s.check_config(&config(json!({"mirrors": ["a", "b"]})), &[m()])
        .unwrap();
    let err = s
        .check_config(&config(json!({"mirrors": ["b"]})), &[m()])
        .unwrap_err();
    assert!(
        err.to_string().contains("a mirror cannot be removed"),
        "{err}"
    );
}
