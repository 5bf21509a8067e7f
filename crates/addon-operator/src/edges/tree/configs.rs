//! The `check` stage that asks every hook for its bindings and parses the answers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use addon_core::discovery::{Discovered, HookFile};
use addon_core::hook_config::{self, HookConfig, HookScope};

use crate::edges::tree::hook_configs::{self, ConfigRunOptions};

/// Parsed configs of every hook that gave a valid one, and the problems of the others.
#[derive(Debug, Default)]
pub struct HookConfigs {
    pub by_path: BTreeMap<PathBuf, HookConfig>,
    pub errors: Vec<String>,
}

impl HookConfigs {
    /// Replaces batch executables in `found` by their hooks, then runs `--config` of every other
    /// global and module hook and parses the outputs.
    pub async fn fetch(found: &mut Discovered, options: &ConfigRunOptions) -> Self {
        let batch = crate::edges::tree::batch_hooks::expand(found, options).await;
        let mut hooks = Vec::new();
        for hook in &found.global.hooks {
            hooks.push((hook.clone(), String::new(), HookScope::Global));
        }
        for module in &found.modules {
            for hook in &module.hooks {
                hooks.push((hook.clone(), module.name.to_string(), HookScope::Module));
            }
        }
        let runs = hooks
            .iter()
            .filter(|(hook, _, _)| hook.args.is_empty())
            .map(|(hook, module, _)| (hook.clone(), module.clone()))
            .collect();
        let mut outputs = hook_configs::fetch_all(runs, options).await.into_iter();
        let mut result = Self {
            errors: batch.errors,
            ..Self::default()
        };
        for (hook, module, scope) in hooks {
            let output = match batch.configs.get(&hook.config_key()) {
                Some(config) => Ok(config.clone()),
                None => match outputs.next() {
                    Some(output) => output,
                    None => continue,
                },
            };
            result.add(&hook, &module, scope, output);
        }
        result
    }

    fn add(
        &mut self,
        hook: &HookFile,
        module: &str,
        scope: HookScope,
        output: Result<String, hook_configs::ConfigRunError>,
    ) {
        let place = if module.is_empty() {
            String::new()
        } else {
            format!("module '{module}': ")
        };
        match output {
            Err(e) => self
                .errors
                .push(format!("{place}{}", addon_core::error::error_chain(&e))),
            Ok(stdout) => match hook_config::parse(&hook.name, scope, &stdout) {
                Ok(config) => {
                    self.by_path.insert(hook.config_key(), config);
                }
                Err(errors) => self
                    .errors
                    .extend(errors.errors.iter().map(|e| format!("{place}{e}"))),
            },
        }
    }

    /// The bindings of a hook as one line each, or none when its config was invalid.
    pub fn binding_summary(&self, hook: &HookFile) -> Vec<String> {
        self.by_path
            .get(&hook.config_key())
            .map(HookConfig::binding_summary)
            .unwrap_or_default()
    }
}
