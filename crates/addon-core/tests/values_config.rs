//! Config parsing from fixture files: ConfigMap `data` with every key form, all errors reported,
//! and the rendering back to `data` that a config patch writes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

mod common;

use addon_core::config::{Config, ConfigError};
use addon_core::names::ModuleName;
use serde_json::json;

use common::{configmap_data, fixture};

fn m(name: &str) -> ModuleName {
    ModuleName::new(name).unwrap()
}

#[test]
fn configmap_with_every_key_form_parses() {
    let data = configmap_data(&fixture("config/configmap-all-forms.yaml"));
    let cfg = Config::from_data(&data).unwrap();
    assert_eq!(
        cfg.global_values(),
        json!({"param1": "newValue", "param3": "valu3"})
    );
    assert_eq!(
        cfg.module_values(&m("simple-module")),
        json!({"modParam2": "newValue2"})
    );
    assert_eq!(cfg.module_enabled(&m("simple-module")), Some(true));
    assert!(cfg.section_disabled(&m("another-module")));
    assert_eq!(
        cfg.to_data().unwrap(),
        data,
        "unchanged config renders verbatim"
    );
}

#[test]
fn configmap_with_bad_keys_reports_every_error() {
    let data = configmap_data(&fixture("config/configmap-bad-keys.yaml"));
    let errs = Config::from_data(&data).unwrap_err();
    let keys: Vec<String> = errs
        .0
        .iter()
        .map(|e| match e {
            ConfigError::ParseSection { key, .. }
            | ConfigError::SectionNotMapping { key, .. }
            | ConfigError::EnabledNotBool { key, .. }
            | ConfigError::BadKey { key, .. } => key.clone(),
            other => panic!("unexpected {other}"),
        })
        .collect();
    assert_eq!(
        keys,
        ["Bad-Key", "global", "listModule", "simpleModuleEnabled"]
    );
    assert!(errs.0.iter().all(|e| e.category() == "config_parse"));
}

#[test]
fn config_file_form_matches_the_configmap_form() {
    let from_data =
        Config::from_data(&configmap_data(&fixture("config/configmap-all-forms.yaml"))).unwrap();
    let file = "global:\n  param1: newValue\n  param3: valu3\nsimpleModule:\n  modParam2: newValue2\nanotherModule: false\nsimpleModuleEnabled: true\n";
    let from_file = Config::from_file("addon-operator.yaml", file).unwrap();
    assert_eq!(from_file, from_data);
}

#[test]
fn config_file_rendering_parses_back() {
    let cfg =
        Config::from_data(&configmap_data(&fixture("config/configmap-all-forms.yaml"))).unwrap();
    let text = cfg.to_file_text().unwrap();
    assert_eq!(Config::from_file("f.yaml", &text).unwrap(), cfg);
}

#[test]
fn empty_config_file_is_an_empty_config() {
    let cfg = Config::from_file("f.yaml", "").unwrap();
    assert_eq!(cfg, Config::empty());
    assert!(cfg.to_data().unwrap().is_empty());
}
