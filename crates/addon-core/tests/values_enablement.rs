//! Enablement through the values store: flags from every layer, `enabled` scripts that read
//! `global.enabledModules`, a dynamic disable from a global hook, and the resulting plan.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use addon_core::enablement::{Candidate, EnablementError, EnablementPass, plan};
use addon_core::names::{HookName, ModuleName};
use addon_core::schema::ScopeSchemas;
use addon_core::values::{HookRef, PatchKind, Scope, ValuesPatch, ValuesStore};

const MODULES: [&str; 7] = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"];

fn m(name: &str) -> ModuleName {
    ModuleName::new(name).unwrap()
}

fn store() -> ValuesStore {
    let mut store = ValuesStore::new();
    let flags: String = MODULES
        .iter()
        .map(|n| format!("{n}Enabled: true\n"))
        .collect();
    store
        .add_common_values("modules/values.yaml", &flags)
        .unwrap();
    for name in MODULES {
        let scope = Scope::Module(m(name));
        store
            .add_module(m(name), None, ScopeSchemas::none(&scope))
            .unwrap();
    }
    store
}

/// The `enabled` scripts of the Go operator's `modules_state__no_cm__with_enabled_scripts`:
/// beta is off; gamma and delta need alpha; zeta needs gamma and delta.
fn script(store: &ValuesStore, module: &ModuleName, so_far: &[ModuleName]) -> bool {
    let files = store.enabled_script_values(module, so_far).unwrap();
    let enabled: Vec<&str> = files.values["global"]["enabledModules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    match module.as_str() {
        "beta" => false,
        "gamma" | "delta" => enabled.contains(&"alpha"),
        "zeta" => enabled.contains(&"gamma") && enabled.contains(&"delta"),
        _ => true,
    }
}

fn discover(store: &ValuesStore) -> Vec<ModuleName> {
    let candidates = store
        .all_flag_layers()
        .into_iter()
        .map(|(name, layers)| Candidate {
            name,
            enabled_by_flags: layers.enabled(),
            has_script: true,
        })
        .collect();
    EnablementPass::run::<EnablementError>(candidates, |module, so_far| {
        Ok(script(store, module, so_far))
    })
    .unwrap()
}

#[test]
fn scripts_see_modules_enabled_before_them() {
    let store = store();
    let enabled = discover(&store);
    let names: Vec<&str> = enabled.iter().map(|n| n.as_str()).collect();
    assert_eq!(names, ["alpha", "gamma", "delta", "epsilon", "zeta", "eta"]);
}

#[test]
fn dynamic_disable_of_a_parent_disables_its_dependents_in_reverse_order() {
    let mut store = store();
    let before = discover(&store);
    let hook = HookRef::global(HookName::new("hooks/disable-alpha").unwrap());
    let patch = ValuesPatch::parse(
        &hook,
        PatchKind::Values,
        r#"[{"op":"add","path":"/alphaEnabled","value":false}]"#,
    )
    .unwrap();
    let outcome = store.apply_values_patch(&hook, &patch).unwrap();
    assert_eq!(outcome.enabled_changed, vec![m("alpha")]);
    let after = discover(&store);
    let p = plan(&store.modules(), &after, &before, &[]);
    let names = |list: &[ModuleName]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&p.to_run), ["epsilon", "eta"]);
    assert_eq!(names(&p.to_delete), ["zeta", "delta", "gamma", "alpha"]);
    assert!(p.newly_enabled.is_empty() && p.to_purge.is_empty());
}

/// Upstream's extenders run static, dynamic (global hooks), ConfigMap, `enabled` script: the
/// config's `*Enabled` is applied after a global hook's dynamic flag, so the config wins.
#[test]
fn config_enabled_flag_beats_a_global_hooks_dynamic_flag() {
    let mut store = store();
    let hook = HookRef::global(HookName::new("hooks/disable-alpha").unwrap());
    let patch = ValuesPatch::parse(
        &hook,
        PatchKind::Values,
        r#"[{"op":"add","path":"/alphaEnabled","value":false},
            {"op":"add","path":"/betaEnabled","value":true},
            {"op":"add","path":"/gammaEnabled","value":false}]"#,
    )
    .unwrap();
    store.apply_values_patch(&hook, &patch).unwrap();
    let text = "alphaEnabled: true\nbetaEnabled: false\n";
    let config = addon_core::config::Config::from_file("config.yaml", text).unwrap();
    store.set_config(config);
    let alpha = store.flag_layers(&m("alpha")).unwrap();
    assert_eq!(alpha.dynamic, Some(false));
    assert!(
        alpha.enabled(),
        "config alphaEnabled: true must beat the dynamic false"
    );
    assert!(!store.flag_layers(&m("beta")).unwrap().enabled());
    // Without a config flag the dynamic flag still beats the values files.
    assert!(!store.flag_layers(&m("gamma")).unwrap().enabled());
}
