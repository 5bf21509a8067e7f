//! The worked examples of the VALUES, MODULES and LIFECYCLE seed documents, reproduced verbatim
//! in meaning through the values store and enablement.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

mod common;

use std::collections::BTreeMap;

use addon_core::config::Config;
use addon_core::enablement::{Candidate, EnablementPass, Step, parse_script_result};
use addon_core::names::{HookName, ModuleName};
use addon_core::schema::ScopeSchemas;
use addon_core::values::{HookRef, PatchKind, Scope, ValuesPatch, ValuesStore};
use addon_core::yaml;
use serde_json::json;

use common::{configmap_data, fixture};

fn module(name: &str) -> ModuleName {
    ModuleName::new(name).unwrap()
}

fn add_module(store: &mut ValuesStore, name: &str, values_file: Option<(&str, &str)>) {
    let m = module(name);
    let schemas = ScopeSchemas::none(&Scope::Module(m.clone()));
    store.add_module(m, values_file, schemas).unwrap();
}

/// VALUES "Example": modules/values.yaml, 01-some-module/values.yaml and the ConfigMap.
fn values_example_store() -> ValuesStore {
    let dir = "values/values-example";
    let mut store = ValuesStore::new();
    store
        .add_common_values(
            "modules/values.yaml",
            &fixture(&format!("{dir}/modules/values.yaml")),
        )
        .unwrap();
    let module_values = fixture(&format!("{dir}/modules/01-some-module/values.yaml"));
    add_module(
        &mut store,
        "some-module",
        Some(("modules/01-some-module/values.yaml", &module_values)),
    );
    let data = configmap_data(&fixture(&format!("{dir}/configmap.yaml")));
    store.set_config(Config::from_data(&data).unwrap());
    store
}

#[test]
fn values_example_config_values_hold_only_the_configmap() {
    let store = values_example_store();
    let m = module("some-module");
    let files = store
        .module_hook_values(&m, std::slice::from_ref(&m))
        .unwrap();
    assert_eq!(
        files.config_values,
        json!({"global": {"param1": 200},
               "someModule": {"param1": "Long string", "param2": "FOO"}})
    );
}

#[test]
fn values_example_merged_values_let_the_configmap_override_values_yaml() {
    // The document prints `"param2": "YES"`; the file says "Yes" and values are never re-cased.
    let store = values_example_store();
    let m = module("some-module");
    let expected = json!({"global": {"param1": 200, "param2": "Yes"},
                          "someModule": {"param1": "Long string", "param2": "FOO"}});
    assert_eq!(store.helm_values(&m).unwrap(), expected);
    let files = store
        .module_hook_values(&m, std::slice::from_ref(&m))
        .unwrap();
    let mut with_enabled = expected.clone();
    with_enabled["global"]["enabledModules"] = json!(["some-module"]);
    assert_eq!(files.values, with_enabled);
}

#[test]
fn values_example_global_hook_sees_only_global_values() {
    let store = values_example_store();
    let files = store.global_hook_values();
    assert_eq!(files.config_values, json!({"global": {"param1": 200}}));
    assert_eq!(
        files.values,
        json!({"global": {"param1": 200, "param2": "Yes"}})
    );
}

#[test]
fn values_example_config_patch_adds_param3_to_the_configmap_and_both_files() {
    let mut store = values_example_store();
    let m = module("some-module");
    let hook = HookRef::module(m.clone(), HookName::new("hooks/hook.sh").unwrap());
    let text = "  [{\"op\":\"add\", \"path\":\"/someModule/param3\", \"value\":\"newValue\"}]\n";
    let patch = ValuesPatch::parse(&hook, PatchKind::Config, text).unwrap();
    assert!(patch.warnings.is_empty());
    let outcome = store.apply_config_patch(&hook, &patch).unwrap();
    assert!(outcome.values_changed);
    assert_eq!(outcome.config_change.modules_changed, vec![m.clone()]);
    assert!(!outcome.config_change.global_changed);

    let data = store.config().to_data().unwrap();
    assert_eq!(
        data["global"], "param1: 200\n",
        "untouched key kept verbatim"
    );
    assert_eq!(
        yaml::parse(&data["someModule"]).unwrap(),
        json!({"param1": "Long string", "param2": "FOO", "param3": "newValue"})
    );

    let files = store
        .module_hook_values(&m, std::slice::from_ref(&m))
        .unwrap();
    assert_eq!(
        files.config_values,
        json!({"global": {"param1": 200},
               "someModule": {"param1": "Long string", "param2": "FOO", "param3": "newValue"}})
    );
    assert_eq!(
        store.helm_values(&m).unwrap(),
        json!({"global": {"param1": 200, "param2": "Yes"},
               "someModule": {"param1": "Long string", "param2": "FOO", "param3": "newValue"}})
    );
    // "replicas: {{ .Values.global.param1 }}" renders 200: the ConfigMap beats values.yaml.
    assert_eq!(
        store.helm_values(&m).unwrap()["global"]["param1"],
        json!(200)
    );
}

/// MODULES "Values example": 001-simple-one-module with the config of the document.
fn modules_example_store() -> ValuesStore {
    let dir = "values/modules-example";
    let mut store = ValuesStore::new();
    let values = fixture(&format!("{dir}/modules/001-simple-one-module/values.yaml"));
    add_module(
        &mut store,
        "simple-one-module",
        Some(("modules/001-simple-one-module/values.yaml", &values)),
    );
    let config = Config::from_file("config.yaml", &fixture(&format!("{dir}/config.yaml")));
    store.set_config(config.unwrap());
    store
}

#[test]
fn modules_example_before_helm_hook_gets_merged_values() {
    let store = modules_example_store();
    let m = module("simple-one-module");
    let files = store
        .module_hook_values(&m, std::slice::from_ref(&m))
        .unwrap();
    assert_eq!(
        files.values,
        json!({"global": {"globParam1": "globalValue1", "enabledModules": ["simple-one-module"]},
               "simpleOneModule": {"param1": "value_1", "param2": "newValue_1", "param3": "value_3"}})
    );
}

#[test]
fn modules_example_dotted_single_op_patch_gives_the_documented_helm_values() {
    let mut store = modules_example_store();
    let m = module("simple-one-module");
    let hook = HookRef::module(m.clone(), HookName::new("hooks/module-hooks.sh").unwrap());
    let text = fixture("values/modules-example/values-patch.json");
    let patch = ValuesPatch::parse(&hook, PatchKind::Values, &text).unwrap();
    assert_eq!(
        patch.warnings.len(),
        2,
        "single object and dotted path both warn"
    );
    let outcome = store.apply_values_patch(&hook, &patch).unwrap();
    assert!(outcome.values_changed);
    let expected = yaml::parse(
        "global:\n  globParam1: globalValue1\nsimpleOneModule:\n  param1: value_1\n  param2: patchedValue_2\n  param3: value_3\n",
    )
    .unwrap();
    assert_eq!(store.helm_values(&m).unwrap(), expected);
    // A values patch stays in memory: the config is untouched.
    assert_eq!(
        store.module_config_values(&m).unwrap(),
        json!({"param3": "value_3", "param2": "newValue_1"})
    );
}

#[test]
fn lifecycle_nginx_ingress_module_values_yaml_false_beats_modules_values_yaml_true() {
    let mut store = ValuesStore::new();
    store
        .add_common_values("modules/values.yaml", "nginxIngressEnabled: true\n")
        .unwrap();
    add_module(
        &mut store,
        "nginx-ingress",
        Some((
            "modules/001-nginx-ingress/values.yaml",
            "nginxIngressEnabled: false\n",
        )),
    );
    let layers = store.flag_layers(&module("nginx-ingress")).unwrap();
    assert_eq!(layers.common, Some(true));
    assert_eq!(layers.module_file, Some(false));
    assert!(!layers.enabled());
}

#[test]
fn lifecycle_some_module_enabled_by_configmap_but_its_script_says_false() {
    let mut store = ValuesStore::new();
    store
        .add_common_values(
            "modules/values.yaml",
            "global:\n  param1: 100\nsomeModuleEnabled: false\n",
        )
        .unwrap();
    add_module(
        &mut store,
        "some-module",
        Some((
            "modules/001-some-module/values.yaml",
            "someModule:\n  param1: \"String\"\n",
        )),
    );
    let data = BTreeMap::from([
        ("global".to_string(), "param1: 200\n".to_string()),
        (
            "someModule".to_string(),
            "param1: \"Long string\"\nparam2: \"FOO\"\n".to_string(),
        ),
        ("someModuleEnabled".to_string(), "true".to_string()),
    ]);
    store.set_config(Config::from_data(&data).unwrap());
    let m = module("some-module");
    let layers = store.flag_layers(&m).unwrap();
    assert!(
        layers.enabled(),
        "the ConfigMap flag beats modules/values.yaml"
    );

    let mut pass = EnablementPass::new(vec![Candidate {
        name: m.clone(),
        enabled_by_flags: layers.enabled(),
        has_script: true,
    }]);
    let Step::RunScript {
        module: to_run,
        enabled_so_far,
    } = pass.next_step().unwrap()
    else {
        panic!("the enabled script must run");
    };
    assert_eq!(to_run, m);
    let files = store.enabled_script_values(&m, &enabled_so_far).unwrap();
    assert_eq!(files.values["global"]["enabledModules"], json!([]));
    assert_eq!(files.values["someModule"]["param2"], json!("FOO"));
    // `echo false > $MODULE_ENABLED_RESULT`
    let verdict = parse_script_result(&m, "false\n", "").unwrap();
    pass.accept_verdict(&m, verdict.enabled).unwrap();
    assert_eq!(pass.next_step().unwrap(), Step::Done(vec![]));
}

#[test]
fn modules_example_enabled_script_printing_to_stdout_is_understood() {
    let m = module("simple-one-module");
    let verdict = parse_script_result(&m, "", "true\n").unwrap();
    assert!(verdict.enabled);
    assert!(verdict.warning.is_some());
}

#[test]
fn values_doc_configmap_false_section_disables_a_module() {
    let mut store = ValuesStore::new();
    store
        .add_common_values("modules/values.yaml", "anotherModuleEnabled: true\n")
        .unwrap();
    add_module(&mut store, "another-module", None);
    let data = configmap_data(&fixture("config/configmap-all-forms.yaml"));
    store.set_config(Config::from_data(&data).unwrap());
    let layers = store.flag_layers(&module("another-module")).unwrap();
    assert!(layers.section_disabled);
    assert!(!layers.enabled());
}
