//! Loads a module tree for running it: discovery plus every hook's parsed `--config`, or every
//! problem found.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use addon_core::discovery::{Discovered, HookFile};
use addon_core::hook_config::HookConfig;
use addon_core::names::ModuleName;

use crate::edges::tree::configs::HookConfigs;
use crate::edges::tree::dirs::{self, DirFlags};
use crate::edges::tree::hook_configs::ConfigRunOptions;
use crate::edges::tree::{self as loader, LoaderConfig};
use addon_core::error::error_chain;

/// A tree ready to run.
pub struct Tree {
    pub found: Discovered,
    /// Each hook's config, by hook path.
    pub configs: BTreeMap<PathBuf, HookConfig>,
}

/// Discovers the tree of `dirs` (flags and environment) and runs every hook's `--config`.
pub async fn load(dirs: &DirFlags, hook_timeout: Duration) -> Result<Tree, Vec<String>> {
    let (mut found, mut errors) = discover(dirs);
    let configs = HookConfigs::fetch(&mut found, &ConfigRunOptions::new(hook_timeout)).await;
    errors.extend(configs.errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Tree {
        found,
        configs: configs.by_path,
    })
}

/// A tree whose global hooks are ready to run while its module hooks' `--config` runs go on.
pub struct StagedTree {
    /// The global hooks with their configs; every module without hooks yet.
    pub tree: Tree,
    /// The modules' hooks and configs, or every problem found in them.
    pub module_hooks: tokio::task::JoinHandle<Result<ModuleHooks, Vec<String>>>,
}

/// The hooks of every module (batch executables replaced by their hooks) and their configs.
#[derive(Debug)]
pub struct ModuleHooks {
    pub hooks: BTreeMap<ModuleName, Vec<HookFile>>,
    pub configs: BTreeMap<PathBuf, HookConfig>,
    /// The settings check of each module that has one (see `ModuleSource::settings_check`).
    pub settings_checks: BTreeMap<ModuleName, PathBuf>,
}

/// [`load`] in two stages, for `start`: the global hooks' `--config` runs are awaited, the
/// module hooks' run beside them and beside what the operator does next (global onStartup and
/// Synchronization, the `enabled` scripts), which needs no module hook.
pub async fn load_staged(
    dirs: &DirFlags,
    hook_timeout: Duration,
) -> Result<StagedTree, Vec<String>> {
    let (mut found, errors) = discover(dirs);
    let options = ConfigRunOptions::new(hook_timeout);
    if !errors.is_empty() {
        // every problem at once, as `load` reports them
        let configs = HookConfigs::fetch(&mut found, &options).await;
        return Err(errors.into_iter().chain(configs.errors).collect());
    }
    let mut modules = found.clone();
    modules.global.hooks.clear();
    let module_options = ConfigRunOptions {
        niceness: crate::edges::tree::hook_configs::BACKGROUND_NICENESS,
        ..options.clone()
    };
    let module_hooks = tokio::spawn(async move {
        let configs = HookConfigs::fetch(&mut modules, &module_options).await;
        if !configs.errors.is_empty() {
            return Err(configs.errors);
        }
        let settings_checks = (modules.modules.iter())
            .filter_map(|m| Some((m.name.clone(), m.settings_check.clone()?)))
            .collect();
        let hooks = modules.modules.into_iter().map(|m| (m.name, m.hooks));
        Ok(ModuleHooks {
            hooks: hooks.collect(),
            configs: configs.by_path,
            settings_checks,
        })
    });
    for module in &mut found.modules {
        module.hooks.clear();
    }
    let global = HookConfigs::fetch(&mut found, &options).await;
    if !global.errors.is_empty() {
        let mut errors = global.errors;
        if let Ok(Err(more)) = module_hooks.await {
            errors.extend(more);
        }
        return Err(errors);
    }
    let tree = Tree {
        found,
        configs: global.by_path,
    };
    Ok(StagedTree { tree, module_hooks })
}

impl Tree {
    /// Adds the module hooks of a staged load.
    pub fn add_module_hooks(&mut self, mut loaded: ModuleHooks) {
        for module in &mut self.found.modules {
            if let Some(hooks) = loaded.hooks.remove(&module.name) {
                module.hooks = hooks;
            }
            module.settings_check = loaded.settings_checks.remove(&module.name);
        }
        self.configs.append(&mut loaded.configs);
    }
}

/// The tree's directories and files, and the problems that stop it.
fn discover(dirs: &DirFlags) -> (Discovered, Vec<String>) {
    let dirs = dirs::resolve(dirs, &|name| std::env::var(name).ok());
    let (found, load_errors) = loader::load(&LoaderConfig {
        modules_dirs: dirs.modules_dirs,
        global_hooks_dir: dirs.global_hooks_dir,
        unnumbered_order: dirs.unnumbered_order,
    });
    for warning in &found.warnings {
        tracing::warn!("{warning}");
    }
    let errors = load_errors.iter().map(|e| error_chain(e)).collect();
    (found, errors)
}
