//! A valid config edit made by others, applied to memory and turned into tasks: the global
//! section or `*Enabled` flags changed ⇒ converge; only module sections changed ⇒ run those modules.

use addon_core::config::Config;
use addon_core::hook_config::BindingType;
use addon_core::names::{ModuleName, QueueName};

use super::Shared;
use super::task::{HookTask, Task};
use addon_core::error::error_chain;

/// A valid edit: global section or `*Enabled` flags changed ⇒ converge (and failing runs of
/// modules the edit disables are dropped); only module sections changed ⇒ run those modules.
pub fn apply_config(shared: &Shared, config: Config) {
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
        tracing::error!(
            error = %error_chain(&e),
            "config edit is invalid; the previous config stays in use and no task is queued"
        );
        return;
    }
    let change = st.store.set_config(config);
    if change.is_empty() {
        return;
    }
    let main = QueueName::main();
    if let Ok(q) = st.queues.get_mut(&main) {
        q.cancel_head_delay();
    }
    if change.global_changed || !change.enabled_changed.is_empty() {
        let disabled: Vec<ModuleName> = st
            .store
            .all_flag_layers()
            .into_iter()
            .filter(|(_, flags)| !flags.enabled())
            .map(|(name, _)| name)
            .collect();
        drop_runs_of(&mut st, &disabled);
        drain_converge(&mut st);
        tracing::info!("config changed the global section or enable flags: reload all modules");
        if let Some(task) = st.converge_if_not_queued("config changed") {
            shared.push(&mut st, &main, task);
        }
    } else {
        for module in change.modules_changed {
            if let Some(task) = st.module_run_if_not_queued(&module, "config changed") {
                tracing::info!(module = %module, "config changed the module's section: run it");
                shared.push(&mut st, &main, task);
            }
        }
    }
    shared.notify.notify_waiters();
}

/// Removes queued runs and hook runs of `modules` from every queue (a failing head included,
/// unless it is running right now).
fn drop_runs_of(st: &mut super::state::State, modules: &[ModuleName]) {
    let names: Vec<QueueName> = st.queues.iter().map(|q| q.name().clone()).collect();
    for name in names {
        if let Ok(q) = st.queues.get_mut(&name) {
            let removed = q.remove_where(|t| match t {
                Task::ModuleRun { module, .. }
                | Task::Hook(HookTask {
                    module: Some(module),
                    ..
                }) => modules.contains(module),
                _ => false,
            });
            for task in removed {
                tracing::info!(task = %addon_core::queue::QueueTask::description(&task), "dropped: the module is disabled by the config");
            }
        }
    }
}

/// Drops the pending steps of a converge in progress (a new converge redoes them); pending
/// deletes stay, as the new plan may not repeat them.
fn drain_converge(st: &mut super::state::State) {
    if let Ok(main) = st.queues.get_mut(&QueueName::main()) {
        main.remove_where(|t| match t {
            Task::ModuleRun { .. } | Task::DiscoverModules | Task::ConvergeDone { .. } => true,
            Task::Hook(h) => matches!(h.binding, BindingType::BeforeAll | BindingType::AfterAll),
            _ => false,
        });
    }
}
