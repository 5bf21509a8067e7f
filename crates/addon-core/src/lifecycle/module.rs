//! A module's run (step 5) and delete (step 6) as ordered phases, and what follows each.

use crate::names::{ModuleName, QueueName};

use super::{Change, Decision, Task};

/// One phase of a module run, in the order the runtime executes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// Create or update the CRDs of `crds/` (always on startup, else when the files changed).
    EnsureCrds,
    /// onStartup hooks by ORDER.
    OnStartup,
    /// Start the module's kubernetes bindings and run their Synchronization.
    Synchronize,
    /// The module's schedules start firing.
    StartSchedules,
    /// beforeHelm hooks by ORDER.
    BeforeHelm,
    /// `helm upgrade --install` when the values, the chart or the release's state ask for it.
    Helm,
    /// afterHelm hooks by ORDER (the runtime notes whether they changed the module's values).
    AfterHelm,
}

/// Step 5: the phases of a run. `None` when the module is disabled by now (the run is skipped).
/// `startup`: the module runs for the first time since it was enabled (onStartup, kubernetes
/// Synchronization); a module without a chart has no Helm phase.
pub fn module_run_phases(enabled: bool, startup: bool, has_chart: bool) -> Option<Vec<RunPhase>> {
    if !enabled {
        return None;
    }
    let mut phases = vec![RunPhase::EnsureCrds];
    if startup {
        phases.extend([
            RunPhase::OnStartup,
            RunPhase::Synchronize,
            RunPhase::StartSchedules,
        ]);
    }
    phases.push(RunPhase::BeforeHelm);
    if has_chart {
        phases.push(RunPhase::Helm);
    }
    phases.push(RunPhase::AfterHelm);
    Some(phases)
}

/// End of step 5: the module is started; when afterHelm hooks changed its values, it runs again
/// (without onStartup): from the end of `main`, or, for a member of a group running in a
/// parallel `lane`, at the head of that lane (the member is done after that run, as upstream).
pub fn module_run_finished(
    module: &ModuleName,
    after_helm_changed_values: bool,
    lane: bool,
) -> Decision {
    let mut decision = Decision {
        changes: vec![Change::ModuleStarted(module.clone())],
        ..Decision::nothing()
    };
    if after_helm_changed_values {
        let again = Task::ModuleRun {
            module: module.clone(),
            startup: false,
            reason: "afterHelm hooks changed module values",
        };
        if lane {
            decision.head.push(again);
        } else {
            decision.tail.push((QueueName::main(), again));
        }
    }
    decision
}

/// One phase of a module delete, in the order the runtime executes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletePhase {
    /// beforeDeleteHelm hooks by ORDER.
    BeforeDeleteHelm,
    /// `helm uninstall` of the module's release.
    Uninstall,
    /// afterDeleteHelm hooks by ORDER.
    AfterDeleteHelm,
}

/// Step 6: the phases of a delete. The release (and the hooks around its removal) only when the
/// module has a chart and its release exists; afterDeleteHelm hooks always.
pub fn module_delete_phases(release_exists: bool) -> Vec<DeletePhase> {
    if release_exists {
        vec![
            DeletePhase::BeforeDeleteHelm,
            DeletePhase::Uninstall,
            DeletePhase::AfterDeleteHelm,
        ]
    } else {
        vec![DeletePhase::AfterDeleteHelm]
    }
}

/// End of step 6: the module stops (watches, schedules, progress and values patches go).
pub fn module_delete_finished(module: &ModuleName) -> Decision {
    Decision {
        changes: vec![Change::ModuleStopped(module.clone())],
        ..Decision::nothing()
    }
}
