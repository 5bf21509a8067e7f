//! The values stages of `check` (also used by `test` and `hook run`) after discovery: build the
//! values store, read and validate the config file, and compute the enabled modules by running
//! `enabled` scripts in module order.

use std::path::Path;

use addon_core::config::Config;
use addon_core::discovery::Discovered;
use addon_core::enablement::{self, EnablementPass, Step};
use addon_core::module_graph::{Unmet, check_requirements};
use addon_core::names::ModuleName;
use addon_core::setup::build_store;
use addon_core::values::store::ValuesStore;
use tokio_util::sync::CancellationToken;

use crate::edges::exec::hook_run::{self, EnabledScriptInvocation, HookRunSettings};
use addon_core::error::error_chain;

/// What the values stages found.
pub struct ValuesStage {
    pub store: ValuesStore,
    pub enabled: Vec<ModuleName>,
    /// Enabled modules that do not run: a requirement of their `module.yaml` does not hold.
    pub unmet: Vec<Unmet>,
    /// What the `enabled` scripts that disabled their module wrote to `$MODULE_ENABLED_REASON`.
    pub disabled_reasons: std::collections::BTreeMap<ModuleName, String>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// Builds the store, applies the config file, validates, and runs the enablement pass.
pub async fn evaluate(
    found: &Discovered,
    config_file: Option<&Path>,
    settings: &HookRunSettings,
) -> ValuesStage {
    let (mut store, setup_errors) = build_store(found);
    let mut errors: Vec<String> = setup_errors.iter().map(|e| error_chain(e)).collect();
    let config = match config_file {
        Some(path) => read_config(path, &mut errors),
        None => Config::empty(),
    };
    store.set_config(config.clone());
    let flagged = store.enabled_by_flags();
    if let Err(e) = store.check_config(&config, &flagged) {
        errors.push(error_chain(&e));
    }
    let mut stage = ValuesStage {
        store,
        enabled: Vec::new(),
        unmet: Vec::new(),
        disabled_reasons: Default::default(),
        errors,
        warnings: Vec::new(),
    };
    let enabled = stage.run_enablement(found, settings).await;
    stage.apply_requirements(found, enabled);
    stage
}

fn read_config(path: &Path, errors: &mut Vec<String>) -> Config {
    let text = match crate::edges::config::read_text(path) {
        Ok(text) => text,
        Err(e) => {
            errors.push(error_chain(&e));
            return Config::empty();
        }
    };
    let file = path.display().to_string();
    let (config, problems) = Config::from_file_partial(&file, &text);
    errors.extend(
        problems
            .iter()
            .map(|e| format!("config file {file}: {}", error_chain(e))),
    );
    config
}

impl ValuesStage {
    /// Keeps the enabled modules whose `module.yaml` requirements hold; without a cluster the
    /// Kubernetes version is not checked (a note says so).
    fn apply_requirements(&mut self, found: &Discovered, enabled: Vec<ModuleName>) {
        let (running, unmet) = check_requirements(&found.modules, &enabled, None);
        self.warnings
            .extend(unmet.iter().map(|u| format!("{u}: it does not run")));
        let kube = found
            .modules
            .iter()
            .filter(|m| m.definition.kubernetes.is_some());
        let kube: Vec<&str> = kube.map(|m| m.name.as_str()).collect();
        if !kube.is_empty() {
            self.warnings.push(format!(
                "requirements.kubernetes of {} not checked: no cluster here",
                kube.join(", ")
            ));
        }
        self.enabled = running;
        self.unmet = unmet;
    }

    async fn run_enablement(
        &mut self,
        found: &Discovered,
        settings: &HookRunSettings,
    ) -> Vec<ModuleName> {
        let candidates = self
            .store
            .enablement_candidates(|m| module_script(found, m).is_some());
        let mut pass = EnablementPass::new(candidates);
        loop {
            match pass.next_step() {
                Ok(Step::Done(enabled)) => return enabled,
                Ok(Step::RunScript {
                    module,
                    enabled_so_far,
                }) => {
                    let verdict = self
                        .run_script(found, &module, &enabled_so_far, settings, &[])
                        .await;
                    if let Err(e) = pass.accept_verdict(&module, verdict) {
                        self.errors.push(e.to_string());
                        return Vec::new();
                    }
                }
                Err(e) => {
                    self.errors.push(e.to_string());
                    return Vec::new();
                }
            }
        }
    }

    /// Runs one `enabled` script with `extra_env`; a failure is recorded and counts as
    /// "disabled".
    pub async fn run_script(
        &mut self,
        found: &Discovered,
        module: &ModuleName,
        enabled_so_far: &[ModuleName],
        settings: &HookRunSettings,
        extra_env: &[(String, String)],
    ) -> bool {
        let (Some(script), Ok(values)) = (
            module_script(found, module),
            self.store.enabled_script_values(module, enabled_so_far),
        ) else {
            return false;
        };
        let invocation = EnabledScriptInvocation {
            module: module.as_str(),
            script_path: script,
            config_values: &values.config_values,
            values: &values.values,
            extra_env,
        };
        let run =
            hook_run::run_enabled_script(settings, &invocation, &CancellationToken::new()).await;
        let output = match run {
            Ok(output) if output.process.succeeded() => output,
            Ok(output) => {
                self.errors.push(format!(
                    "module '{module}': enabled script failed ({}): {}",
                    output.process.exit,
                    output.process.failure_message()
                ));
                return false;
            }
            Err(e) => {
                self.errors
                    .push(format!("module '{module}': {}", error_chain(&e)));
                return false;
            }
        };
        let result = output.result.unwrap_or_default();
        let stdout = output.stdout_last_line.unwrap_or_default();
        match enablement::parse_script_result(module, &result, &stdout) {
            Ok(verdict) => {
                self.warnings.extend(verdict.warning);
                let reason = output.reason.as_deref().map(str::trim).unwrap_or_default();
                if !verdict.enabled && !reason.is_empty() {
                    self.disabled_reasons
                        .insert(module.clone(), reason.to_string());
                }
                verdict.enabled
            }
            Err(e) => {
                self.errors.push(e.to_string());
                false
            }
        }
    }
}

fn module_script<'a>(found: &'a Discovered, module: &ModuleName) -> Option<&'a Path> {
    found
        .modules
        .iter()
        .find(|m| &m.name == module)
        .and_then(|m| m.enabled_script.as_deref())
}
