//! The difference between the running module tree and a reloaded one, module by module and
//! hook by hook: what `--reload-tree` applies in place.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::discovery::{Discovered, HookFile, ModuleSource};
use crate::hook_config::HookConfig;
use crate::names::{HookName, ModuleName};

/// A loaded tree as the difference sees it.
#[derive(Debug, Clone, Copy)]
pub struct TreeView<'a> {
    pub found: &'a Discovered,
    /// Each hook's config, by [`HookFile::config_key`].
    pub configs: &'a BTreeMap<PathBuf, HookConfig>,
    /// Content digests: of each hook file (by its path) and of each module's chart files (by
    /// the module's path). A path without a digest compares as unchanged content.
    pub digests: &'a BTreeMap<PathBuf, String>,
}

/// How the hooks of one scope (the global hooks or one module's) changed, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookChanges {
    /// New hooks.
    pub added: Vec<HookName>,
    /// Hooks that are gone.
    pub removed: Vec<HookName>,
    /// Hooks whose `--config` (bindings, settings) or arguments changed: their bindings start
    /// anew.
    pub rebound: Vec<HookName>,
    /// Hooks whose file changed but whose config did not: they keep their bindings.
    pub edited: Vec<HookName>,
}

impl HookChanges {
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Hooks whose bindings start: the added and the rebound ones.
    pub fn starting(&self) -> impl Iterator<Item = &HookName> {
        self.added.iter().chain(&self.rebound)
    }

    /// Hooks whose old bindings stop: the removed and the rebound ones.
    pub fn stopping(&self) -> impl Iterator<Item = &HookName> {
        self.removed.iter().chain(&self.rebound)
    }
}

/// How a module that is in both trees changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleChanges {
    pub module: ModuleName,
    pub hooks: HookChanges,
    /// Its `values.yaml`, `enabled` script, ORDER or modules directory changed: which modules
    /// are enabled may change.
    pub enablement: bool,
    /// Its chart files or OpenAPI schemas changed.
    pub files: bool,
}

/// What a reloaded tree changes compared to the running one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeDiff {
    pub added: Vec<ModuleName>,
    pub removed: Vec<ModuleName>,
    /// Modules in both trees that changed, in the new tree's order.
    pub changed: Vec<ModuleChanges>,
    pub global_hooks: HookChanges,
    /// The global schemas or a modules directory's `values.yaml` changed.
    pub global_values: bool,
}

impl TreeDiff {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Whether the change needs 'reload all modules': modules come or go, global hooks or
    /// values changed, or a module's enablement may have changed.
    pub fn converges(&self) -> bool {
        !self.added.is_empty()
            || !self.removed.is_empty()
            || !self.global_hooks.is_empty()
            || self.global_values
            || self.changed.iter().any(|m| m.enablement)
    }

    /// The modules that run for the change when it does not converge (a converge runs every
    /// enabled module anyway).
    pub fn module_runs(&self) -> Vec<ModuleName> {
        if self.converges() {
            return Vec::new();
        }
        self.changed.iter().map(|m| m.module.clone()).collect()
    }

    /// The changes of `module`, if it is in both trees and changed.
    pub fn module(&self, module: &ModuleName) -> Option<&ModuleChanges> {
        self.changed.iter().find(|m| &m.module == module)
    }
}

/// The difference from `old` (running) to `new` (reloaded).
pub fn diff(old: TreeView<'_>, new: TreeView<'_>) -> TreeDiff {
    let before: BTreeMap<&ModuleName, &ModuleSource> =
        old.found.modules.iter().map(|m| (&m.name, m)).collect();
    let after: BTreeMap<&ModuleName, &ModuleSource> =
        new.found.modules.iter().map(|m| (&m.name, m)).collect();
    let mut out = TreeDiff::default();
    for module in &new.found.modules {
        let Some(was) = before.get(&module.name) else {
            out.added.push(module.name.clone());
            continue;
        };
        let changes = module_changes(was, module, old, new);
        if !changes.hooks.is_empty() || changes.enablement || changes.files {
            out.changed.push(changes);
        }
    }
    out.removed = (old.found.modules.iter())
        .filter(|m| !after.contains_key(&m.name))
        .map(|m| m.name.clone())
        .collect();
    out.global_hooks = hook_changes(&old.found.global.hooks, &new.found.global.hooks, old, new);
    out.global_values = old.found.global.openapi != new.found.global.openapi
        || old.found.modules_values != new.found.modules_values;
    out
}

fn module_changes(
    was: &ModuleSource,
    now: &ModuleSource,
    old: TreeView<'_>,
    new: TreeView<'_>,
) -> ModuleChanges {
    let enablement = was.values_yaml != now.values_yaml
        || was.enabled_script != now.enabled_script
        || was.order != now.order
        || was.modules_dir != now.modules_dir
        || was.definition != now.definition;
    let files = was.openapi != now.openapi
        || was.has_chart != now.has_chart
        || was.path != now.path
        || old.digests.get(&was.path) != new.digests.get(&now.path);
    ModuleChanges {
        module: now.name.clone(),
        hooks: hook_changes(&was.hooks, &now.hooks, old, new),
        enablement,
        files,
    }
}

fn hook_changes(
    before: &[HookFile],
    after: &[HookFile],
    old: TreeView<'_>,
    new: TreeView<'_>,
) -> HookChanges {
    let by_name = |hooks: &[HookFile]| -> BTreeMap<HookName, HookFile> {
        hooks.iter().map(|h| (h.name.clone(), h.clone())).collect()
    };
    let (was, now) = (by_name(before), by_name(after));
    let mut out = HookChanges::default();
    for (name, hook) in &now {
        let Some(old_hook) = was.get(name) else {
            out.added.push(name.clone());
            continue;
        };
        let config = |view: TreeView<'_>, h: &HookFile| view.configs.get(&h.config_key()).cloned();
        let digest = |view: TreeView<'_>, h: &HookFile| view.digests.get(&h.path).cloned();
        if old_hook != hook || config(old, old_hook) != config(new, hook) {
            out.rebound.push(name.clone());
        } else if digest(old, old_hook) != digest(new, hook) {
            out.edited.push(name.clone());
        }
    }
    out.removed = (was.keys())
        .filter(|name| !now.contains_key(*name))
        .cloned()
        .collect();
    out
}

#[cfg(test)]
mod tests;
