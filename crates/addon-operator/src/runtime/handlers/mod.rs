//! Task handlers: each does one task and answers with an outcome; none sleeps or queues by itself.

mod converge;
mod global;
mod group;
pub(super) mod module;

use addon_core::names::QueueName;

use super::Shared;
use super::task::{Outcome, Task};

/// Runs `task` taken from `queue`.
pub async fn handle(shared: &Shared, queue: &QueueName, task: &Task) -> Outcome {
    match task {
        Task::Hook(hook) => global::hook_task(shared, queue, hook).await,
        Task::EnableGlobalKubernetes { hook } => global::enable_kubernetes(shared, hook).await,
        Task::Converge { .. } => converge::start(shared),
        Task::DiscoverModules => converge::discover(shared).await,
        Task::ConvergeDone { global_checksum } => converge::finish(shared, global_checksum),
        Task::ModuleRun {
            module,
            startup,
            reason,
        } => module::run(shared, queue, module, *startup, reason).await,
        Task::ModuleGroup {
            order,
            members,
            reason,
        } => group::run(shared, *order, members, reason).await,
        Task::ModuleDelete { module } => module::delete(shared, module).await,
        Task::ModulePurge { release } => module::purge(shared, release).await,
    }
}
