//! Hooks as the lifecycle sees them: a hook with its parsed config, the order in which hooks of
//! one binding run, the tasks of an ORDER binding, and what a finished run changed.

use crate::binding_context::{ContextBuilder, Snapshots};
use crate::discovery::HookFile;
use crate::hook_config::{BindingType, HookConfig};
use crate::names::HookName;

use super::task::{HookTask, Origin, Task};

/// A hook and its parsed `--config`.
#[derive(Debug, Clone)]
pub struct HookDef {
    pub file: HookFile,
    pub config: HookConfig,
}

impl HookDef {
    pub fn name(&self) -> &HookName {
        &self.file.name
    }
}

/// What a successful hook run changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HookEffect {
    /// The merged values of the hook's scope changed.
    pub values_changed: bool,
    /// A `*Enabled` flag changed (global hooks: dynamic flags or config flags).
    pub enabled_changed: bool,
}

/// Hooks with `binding`, by ORDER then name.
pub fn hooks_by_order(hooks: &[HookDef], binding: BindingType) -> Vec<HookDef> {
    let mut found: Vec<(f64, HookDef)> = hooks
        .iter()
        .filter_map(|h| h.config.order(binding).map(|o| (o, h.clone())))
        .collect();
    found.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.name().cmp(b.1.name())));
    found.into_iter().map(|(_, h)| h).collect()
}

/// Hooks with kubernetes bindings, in name order.
pub fn hooks_with_kubernetes(hooks: &[HookDef]) -> Vec<HookDef> {
    let mut found: Vec<HookDef> = hooks
        .iter()
        .filter(|h| !h.config.kubernetes.is_empty())
        .cloned()
        .collect();
    found.sort_by(|a, b| a.name().cmp(b.name()));
    found
}

/// Global hook tasks for an ORDER binding (`onStartup`, `beforeAll`, `afterAll`), by ORDER.
pub fn lifecycle_tasks(hooks: &[HookDef], binding: BindingType) -> Vec<Task> {
    let snapshots = Snapshots::new();
    hooks_by_order(hooks, binding)
        .into_iter()
        .map(|def| {
            let ctx = ContextBuilder::new(&def.config, &snapshots).ordered(binding);
            Task::Hook(HookTask {
                module: None,
                hook: def.name().clone(),
                binding,
                contexts: vec![ctx],
                allow_failure: false,
                origin: Origin::Lifecycle,
            })
        })
        .collect()
}
