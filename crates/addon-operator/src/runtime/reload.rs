//! Applies a reloaded module tree in place (`--reload-tree`): the values store rebuilt on the
//! running config and patches, hooks and modules replaced where the difference says, the old
//! bindings of gone and rebound hooks stopped, and the tasks of `lifecycle::tree_reloaded`
//! queued. Unchanged hooks keep their monitors, schedules and progress.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use addon_core::discovery::{Discovered, HookFile};
use addon_core::error::error_chain;
use addon_core::hook_config::{BindingType, HookConfig};
use addon_core::lifecycle;
use addon_core::names::{HookName, ModuleName, QueueName};
use addon_core::setup::build_store;
use addon_core::tree_diff::TreeDiff;

use super::edges::MonitorKey;
use super::state::{HookDef, HookList, ModuleState, State};
use super::{RuntimeHandle, ScheduleId, Shared, decisions};

/// A valid new tree and its difference from the running one.
pub struct NewTree<'a> {
    pub found: &'a Discovered,
    /// Each hook's config, by [`HookFile::config_key`].
    pub configs: &'a BTreeMap<PathBuf, HookConfig>,
    pub diff: &'a TreeDiff,
    /// Where the directories of modules with delete hooks were kept: a removed module's hooks
    /// run from there.
    pub kept_dirs: &'a BTreeMap<ModuleName, PathBuf>,
}

impl RuntimeHandle {
    /// Applies `tree` in place, or returns every problem that stops it (the runtime is then
    /// unchanged): a values file or schema that does not load, a hook without config, the
    /// running config rejected by the new schemas.
    pub fn apply_tree(&self, tree: NewTree<'_>) -> Result<(), Vec<String>> {
        let shared = &self.shared;
        let (mut store, setup_errors) = build_store(tree.found);
        let mut errors: Vec<String> = setup_errors.iter().map(|e| error_chain(e)).collect();
        let global_hooks = HookList::from(super::hook_defs(
            &tree.found.global.hooks,
            tree.configs,
            &mut errors,
        ));
        let module_hooks: BTreeMap<ModuleName, HookList> = (tree.found.modules.iter())
            .map(|m| {
                let defs = super::hook_defs(&m.hooks, tree.configs, &mut errors);
                (m.name.clone(), HookList::from(defs))
            })
            .collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut st = shared.lock();
        let config = st.store.config().clone();
        store.set_config(config.clone());
        let flagged = store.enabled_by_flags();
        if let Err(e) = store.check_config(&config, &flagged) {
            return Err(vec![error_chain(&e)]);
        }
        let in_tree: BTreeSet<&ModuleName> = tree.found.modules.iter().map(|m| &m.name).collect();
        let kept: Vec<ModuleName> = (st.modules.keys())
            .filter(|m| !in_tree.contains(m))
            .cloned()
            .collect();
        let old = std::mem::take(&mut st.store);
        store.carry_over(old, &kept);
        st.store = store;
        let old_global = std::mem::replace(&mut st.global_hooks, global_hooks);
        let stopping: Vec<&HookName> = tree.diff.global_hooks.stopping().collect();
        stop_bindings(shared, &mut st, None, &old_global, &stopping);
        for module in &tree.diff.removed {
            remove_module(shared, &mut st, module, tree.kept_dirs.get(module));
        }
        replace_modules(shared, &mut st, &tree, module_hooks);
        st.module_order = (tree.found.modules.iter())
            .map(|m| m.name.clone())
            .chain(kept)
            .collect();
        forget_idle_removed(&mut st);
        start_new_queues(self, &mut st);
        super::record_bindings(&shared.metrics, &st);
        let global_hooks = st.global_hooks.clone();
        let decision = lifecycle::tree_reloaded(decisions::view(&st), tree.diff, &global_hooks);
        decisions::enqueue(shared, st, decision);
        let modules: Vec<ModuleName> = tree.found.modules.iter().map(|m| m.name.clone()).collect();
        super::admin::tree(shared, &modules);
        Ok(())
    }

    /// Modules that left the tree and wait for their delete.
    pub fn removed_modules(&self) -> Vec<ModuleName> {
        let st = self.shared.lock();
        (st.modules.iter())
            .filter(|(_, m)| m.removed)
            .map(|(name, _)| name.clone())
            .collect()
    }
}

/// New modules join (a module that comes back before it was deleted starts afresh); modules in
/// both trees take their new definition and hooks, keep the bindings of their unchanged hooks,
/// and start the others at their next run.
fn replace_modules(
    shared: &Shared,
    st: &mut State,
    tree: &NewTree<'_>,
    mut module_hooks: BTreeMap<ModuleName, HookList>,
) {
    for source in &tree.found.modules {
        let hooks = module_hooks.remove(&source.name).unwrap_or_default();
        let name = &source.name;
        let Some(state) = st.modules.get(name).filter(|m| !m.removed) else {
            if let Some(old) = st.modules.get(name).map(|m| m.hooks.clone()) {
                let all: Vec<&HookName> = old.iter().map(HookDef::name).collect();
                stop_bindings(shared, st, Some(name), &old, &all);
            }
            st.modules
                .insert(name.clone(), ModuleState::new(source.clone(), hooks));
            continue;
        };
        let old = state.hooks.clone();
        let Some(changes) = tree.diff.module(name) else {
            if let Some(state) = st.modules.get_mut(name) {
                (state.source, state.hooks) = (source.clone(), hooks);
            }
            continue;
        };
        // a module that has not started yet may be starting now, with the old hooks: the old
        // bindings stop either way, and the new ones start at its next run (a startup run
        // starts every hook and forgets these)
        let stopping: Vec<&HookName> = changes.hooks.stopping().collect();
        stop_bindings(shared, st, Some(name), &old, &stopping);
        let Some(state) = st.modules.get_mut(name) else {
            continue;
        };
        let pending = &mut state.pending;
        pending
            .first_run
            .extend(changes.hooks.added.iter().cloned());
        pending.bind.extend(changes.hooks.starting().cloned());
        for gone in &changes.hooks.removed {
            pending.first_run.remove(gone);
            pending.bind.remove(gone);
        }
        (state.source, state.hooks) = (source.clone(), hooks);
    }
}

/// A module that left the tree: its bindings stop; it stays (its hooks pointed at the kept
/// copy of its directory) until discovery deletes it.
fn remove_module(shared: &Shared, st: &mut State, module: &ModuleName, kept: Option<&PathBuf>) {
    let Some(old) = st.module(module).map(|m| m.hooks.clone()) else {
        return;
    };
    let all: Vec<&HookName> = old.iter().map(HookDef::name).collect();
    stop_bindings(shared, st, Some(module), &old, &all);
    let Some(state) = st.modules.get_mut(module) else {
        return;
    };
    state.removed = true;
    state.schedules_on = false;
    state.pending = Default::default();
    let dir = state.source.path.clone();
    let has_delete_hooks = old.iter().any(|h| {
        (h.config.order(BindingType::BeforeDeleteHelm))
            .or(h.config.order(BindingType::AfterDeleteHelm))
            .is_some()
    });
    state.hooks = match kept {
        Some(copy) => HookList::from(old.iter().map(|h| moved(h, &dir, copy)).collect::<Vec<_>>()),
        None => {
            if has_delete_hooks {
                tracing::warn!(module = %module, "the module left the tree and no copy of its directory was kept: its delete hooks do not run");
            }
            HookList::default()
        }
    };
    if let Some(copy) = kept {
        state.source.path = copy.clone();
    }
}

/// `def` with its file under `copy` instead of `dir`.
fn moved(def: &HookDef, dir: &Path, copy: &Path) -> HookDef {
    let rebase = |path: &Path| match path.strip_prefix(dir) {
        Ok(rest) => copy.join(rest),
        Err(_) => path.to_path_buf(),
    };
    let file = HookFile {
        path: rebase(&def.file.path),
        working_dir: rebase(&def.file.working_dir),
        ..(*def.file).clone()
    };
    HookDef {
        file: Arc::new(file),
        config: Arc::clone(&def.config),
    }
}

/// Stops the monitors and schedules of the hooks `names` of `hooks` (`module` `None`: global).
fn stop_bindings(
    shared: &Shared,
    st: &mut State,
    module: Option<&ModuleName>,
    hooks: &HookList,
    names: &[&HookName],
) {
    for name in names {
        let Some(def) = hooks.get(name) else {
            continue;
        };
        for binding in 0..def.config.kubernetes.len() {
            let key = MonitorKey {
                module: module.cloned(),
                hook: (*name).clone(),
                binding,
            };
            if st.monitors.remove(&key).is_some() {
                shared.edges.kube.stop(&key);
            }
        }
        for index in 0..def.config.schedules.len() {
            shared.scheduler.stop(ScheduleId {
                module: module.cloned(),
                hook: (*name).clone(),
                index,
            });
        }
        st.rate_limits.remove(&(module.cloned(), (*name).clone()));
    }
}

/// Removed modules that are not enabled and have no delete on the way leave at once.
fn forget_idle_removed(st: &mut State) {
    let idle: Vec<ModuleName> = (st.modules.iter())
        .filter(|(name, m)| m.removed && !st.enabled.contains(name) && !st.module_busy(name))
        .map(|(name, _)| name.clone())
        .collect();
    for module in idle {
        forget_module(st, &module);
    }
}

/// A removed module leaves the state (after its delete).
pub(super) fn forget_module(st: &mut State, module: &ModuleName) {
    tracing::info!(module = %module, "the module left the tree and is forgotten");
    st.modules.remove(module);
    st.module_order.retain(|m| m != module);
    st.enabled.retain(|m| m != module);
    st.store.remove_module(module);
    st.crds_applied.remove(module);
}

/// Makes the queues the new hooks' bindings name, each with its worker.
pub(super) fn start_new_queues(handle: &RuntimeHandle, st: &mut State) {
    let global = st.global_hooks.iter();
    let names: BTreeSet<QueueName> = (global.chain(st.modules.values().flat_map(|m| &m.hooks)))
        .flat_map(super::binding_queues)
        .collect();
    for name in names {
        if st.queues.get(&name).is_some() {
            continue;
        }
        st.queues.ensure(name.clone());
        let shared = Arc::clone(&handle.shared);
        let stop = handle.shared.stopping.clone();
        tokio::spawn(super::worker::run(shared, name, stop));
    }
}
