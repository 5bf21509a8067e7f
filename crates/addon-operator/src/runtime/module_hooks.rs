//! The module hooks of a staged start (`RuntimeSettings::module_hooks_later`): the runtime
//! starts with the global hooks while the module hooks' `--config` runs go on, and learns the
//! module hooks before the first discovery plans a module run.

use std::collections::BTreeMap;
use std::path::PathBuf;

use addon_core::discovery::HookFile;
use addon_core::hook_config::HookConfig;
use addon_core::names::ModuleName;

use super::RuntimeHandle;
use super::state::HookList;

impl RuntimeHandle {
    /// Gives each module its hooks (`hooks`, by module) with their `configs`; the queues their
    /// bindings name start, and a discovery waiting for them goes on. A hook without a config
    /// is a problem and nothing changes.
    pub fn add_module_hooks(
        &self,
        hooks: &BTreeMap<ModuleName, Vec<HookFile>>,
        configs: &BTreeMap<PathBuf, HookConfig>,
    ) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        let lists: Vec<(&ModuleName, &Vec<HookFile>, HookList)> = (hooks.iter())
            .map(|(module, files)| {
                let defs = super::hook_defs(files, configs, &mut errors);
                (module, files, HookList::from(defs))
            })
            .collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        let shared = &self.shared;
        let mut st = shared.lock();
        for (module, files, list) in lists {
            if let Some(state) = st.modules.get_mut(module) {
                state.source.hooks.clone_from(files);
                state.hooks = list;
            }
        }
        super::reload::start_new_queues(self, &mut st);
        super::record_bindings(&shared.metrics, &st);
        st.module_hooks_known = true;
        drop(st);
        shared.notify.notify_waiters();
        Ok(())
    }

    /// The settings checks of a staged start's modules, found with their hooks.
    pub fn set_settings_checks(&self, checks: &BTreeMap<ModuleName, PathBuf>) {
        let mut st = self.shared.lock();
        for (module, state) in &mut st.modules {
            state.source.settings_check = checks.get(module).cloned();
        }
    }
}
