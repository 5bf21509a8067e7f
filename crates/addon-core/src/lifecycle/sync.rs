//! The Synchronization of kubernetes bindings (step 2 for global hooks, step 5 for module hooks):
//! whether the hook runs for it, and that run as a task.

use crate::binding_context::BindingContext;
use crate::hook_config::{BindingType, KubernetesBinding};
use crate::names::{HookName, ModuleName};

use super::{Decision, HookTask, Origin, Task};

/// Whether a binding's Synchronization runs the hook once with every existing object: not for
/// a v0 `onKubernetesEvent` binding, nor with `executeHookOnSynchronization: false` (the binding
/// counts as synchronized as soon as its objects are loaded).
pub fn synchronization_runs(binding: &KubernetesBinding) -> bool {
    !binding.v0 && binding.execute_hook_on_synchronization
}

/// The Synchronization run of a binding: a lifecycle run (its values changes trigger nothing).
pub fn synchronization_run(
    module: Option<ModuleName>,
    hook: HookName,
    binding: &KubernetesBinding,
    context: BindingContext,
) -> Task {
    Task::Hook(HookTask {
        module,
        hook,
        binding: BindingType::Kubernetes,
        contexts: vec![context],
        allow_failure: binding.allow_failure,
        origin: Origin::Lifecycle,
    })
}

/// Step 2: the Synchronization runs of a global hook's bindings go to the head of `main`, in
/// binding order, right after the task that started the watches.
pub fn global_kubernetes_enabled(runs: Vec<Task>) -> Decision {
    Decision::head(runs)
}
