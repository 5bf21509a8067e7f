//! A valid config edit made by others, applied to memory and handed to the core's
//! lifecycle decision (`addon_core::lifecycle::config_edited`), whose tasks are queued here.

use std::path::PathBuf;

use addon_core::config::Config;
use addon_core::lifecycle;
use addon_core::names::ModuleName;
use serde_json::Value;

use super::{Shared, decisions};
use addon_core::error::error_chain;

/// A valid edit: global section or `*Enabled` flags changed ⇒ converge (and failing runs of
/// modules the edit disables are dropped); only module sections changed ⇒ run those modules.
/// An edit the settings check of a module refuses changes nothing.
pub async fn apply_config(shared: &Shared, config: Config) {
    let checks = settings_checks(&shared.lock(), &config);
    if let Err(refusal) = run_settings_checks(shared, checks).await {
        shared.metrics.config_values_error();
        super::admin::settings_refused(shared, &refusal.module, &refusal.message);
        tracing::error!(
            module = %refusal.module,
            error = %refusal.message,
            "config edit refused by the module's settings check; the previous config stays in use and no task is queued"
        );
        return;
    }
    let mut st = shared.lock();
    let mut check: Vec<ModuleName> = st.enabled.clone();
    check.extend(
        st.module_order
            .iter()
            .filter(|m| config.module_enabled(m) == Some(true) && !st.enabled.contains(m))
            .cloned(),
    );
    if let Err(e) = st.store.check_config(&config, &check) {
        shared.metrics.config_values_error();
        super::admin::config_refused(shared, &e);
        tracing::error!(
            error = %error_chain(&e),
            "config edit is invalid; the previous config stays in use and no task is queued"
        );
        return;
    }
    record_maintenance(shared, &st, &config);
    let change = st.store.set_config(config);
    let disabled: Vec<ModuleName> = (st.store.all_flag_layers().into_iter())
        .filter(|(_, flags)| !flags.enabled())
        .map(|(name, _)| name)
        .collect();
    let decision = lifecycle::config_edited(decisions::view(&st), &change, &disabled);
    decisions::enqueue(shared, st, decision);
}

/// `mm_module_maintenance` for the modules `config` puts in maintenance.
pub fn record_maintenance(shared: &Shared, st: &super::state::State, config: &Config) {
    let modules: Vec<String> = (st.module_order.iter())
        .filter(|m| config.module_in_maintenance(m))
        .map(ToString::to_string)
        .collect();
    shared.metrics.modules_in_maintenance(&modules);
}

/// One module's settings check to run: the module, its checking executable, its new section.
type SettingsCheck = (ModuleName, PathBuf, Value);

/// The modules with a settings check (module-sdk's `has_settings_check`) whose section the
/// edit changes, in module order.
fn settings_checks(st: &super::state::State, config: &Config) -> Vec<SettingsCheck> {
    let current = st.store.config();
    (st.module_order.iter())
        .filter_map(|m| {
            let program = st.module(m)?.source.settings_check.clone()?;
            let settings = config.module_values(m);
            (current.module_values(m) != settings).then(|| (m.clone(), program, settings))
        })
        .collect()
}

/// Why a settings check refused an edit.
struct Refusal {
    module: ModuleName,
    message: String,
}

/// Runs the checks one after the other (each bounded by the hook time limit); the first
/// refusal, or a check that could not give a verdict, refuses the edit. Warnings are logged.
async fn run_settings_checks(shared: &Shared, checks: Vec<SettingsCheck>) -> Result<(), Refusal> {
    for (module, program, settings) in checks {
        let answer = (shared.edges.hooks)
            .check_settings(&module, &program, &settings)
            .await;
        let verdict = answer.map_err(|failure| Refusal {
            module: module.clone(),
            message: failure.message,
        })?;
        for warning in &verdict.warnings {
            tracing::warn!(module = %module, warning = %warning, "settings check warns about a config edit");
        }
        if !verdict.valid {
            let message = if verdict.message.is_empty() {
                "the settings are not valid".to_string()
            } else {
                verdict.message
            };
            return Err(Refusal { module, message });
        }
    }
    Ok(())
}
