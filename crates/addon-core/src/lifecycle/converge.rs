//! Startup and 'reload all modules' (steps 1–8): the startup tasks, the expansion of a converge
//! into beforeAll hooks and discovery, the plan after discovery (delete, run, purge, afterAll),
//! and the closing check that afterAll hooks did not change global values.

use crate::enablement;
use crate::hook_config::BindingType;
use crate::names::ModuleName;

use super::group::{PlannedRun, runs_by_order};
use super::hooks::{HookDef, hooks_with_kubernetes, lifecycle_tasks};
use super::{Change, Decision, QueueEdit, Task};

/// Steps 1–2 and the first 'reload all modules': at the end of `main`, global onStartup hooks by
/// ORDER, the start of each global hook's kubernetes bindings (hooks by name), then a converge.
/// Global schedules start.
pub fn startup(global_hooks: &[HookDef]) -> Decision {
    let mut tasks = lifecycle_tasks(global_hooks, BindingType::OnStartup);
    tasks.extend(hooks_with_kubernetes(global_hooks).into_iter().map(|def| {
        Task::EnableGlobalKubernetes {
            hook: def.name().clone(),
        }
    }));
    tasks.push(Task::Converge { reason: "startup" });
    let mut decision = Decision::tail_main(tasks);
    decision.changes.push(Change::GlobalSchedulesStarted);
    decision
}

/// Step 3: a converge expands at the head of its queue into the beforeAll hooks and discovery;
/// other converges waiting in `main` are dropped (this one covers them).
pub fn start_converge(global_hooks: &[HookDef]) -> Decision {
    let mut head = lifecycle_tasks(global_hooks, BindingType::BeforeAll);
    head.push(Task::DiscoverModules);
    Decision {
        edits: vec![QueueEdit::DropQueuedConverges],
        changes: vec![Change::ConvergeStarted],
        ..Decision::head(head)
    }
}

/// What step 4 found, and what the runtime knew before it.
#[derive(Debug, Clone, Copy)]
pub struct Discovered<'a> {
    /// Every module, in module order.
    pub module_order: &'a [ModuleName],
    /// The ORDER of each module of `module_order`, index by index.
    pub orders: &'a [u32],
    /// The modules enabled now (flags, `enabled` scripts and requirements), in the order they
    /// run (a module after the modules it requires).
    pub enabled: &'a [ModuleName],
    /// The modules each module of `module_order` requires, index by index (missing: none).
    pub requires: &'a [Vec<ModuleName>],
    /// The Helm releases that exist.
    pub releases: &'a [String],
    /// Releases never purged (`--helm-ignore-release`, the operator's own release).
    pub kept_releases: &'a [String],
}

/// What the runtime knows of earlier converges.
#[derive(Debug, Clone, Copy)]
pub struct ConvergeFacts<'a> {
    /// The modules enabled by the previous discovery.
    pub previously_enabled: &'a [ModuleName],
    /// Modules that ran their onStartup and Synchronization since they were enabled.
    pub started: &'a [ModuleName],
    /// Releases without a module were already purged once (only the first discovery does).
    pub startup_purge_done: bool,
    /// The checksum of global values and dynamic flags now (compared after afterAll).
    pub global_checksum: &'a str,
    /// The lanes of parallel module runs (`--parallel-module-runs`; 1 runs one by one).
    pub parallel_module_runs: usize,
}

/// Steps 4–8 as tasks at the head of `main`: deletes of disabled modules (step 6, reverse
/// order), runs of enabled modules (step 5; with onStartup when newly enabled or not started;
/// the modules of one ORDER side by side when there are lanes, see [`runs_by_order`]), purges of releases without a module (step 7, first discovery only), afterAll hooks (step 8)
/// and the closing check.
pub fn discovered(
    found: Discovered<'_>,
    facts: ConvergeFacts<'_>,
    global_hooks: &[HookDef],
) -> Decision {
    let plan = enablement::plan(
        found.module_order,
        found.enabled,
        facts.previously_enabled,
        found.releases,
    );
    let mut head: Vec<Task> = plan
        .to_delete
        .into_iter()
        .map(|module| Task::ModuleDelete { module })
        .collect();
    let order_of = |module: &ModuleName| {
        let index = found.module_order.iter().position(|m| m == module);
        index
            .and_then(|i| found.orders.get(i))
            .copied()
            .unwrap_or(0)
    };
    let requires_of = |module: &ModuleName| {
        let index = found.module_order.iter().position(|m| m == module);
        index
            .and_then(|i| found.requires.get(i))
            .cloned()
            .unwrap_or_default()
    };
    let runs = plan.to_run.into_iter().map(|module| PlannedRun {
        startup: plan.newly_enabled.contains(&module) || !facts.started.contains(&module),
        order: order_of(&module),
        requires: requires_of(&module),
        module,
    });
    let runs = runs_by_order(runs.collect(), facts.parallel_module_runs, "converge");
    head.extend(runs);
    let mut changes = vec![Change::Enabled(found.enabled.to_vec())];
    if !facts.startup_purge_done {
        changes.push(Change::StartupPurgeDone);
        head.extend(
            purged(plan.to_purge, found.kept_releases).map(|release| Task::ModulePurge { release }),
        );
    }
    head.extend(lifecycle_tasks(global_hooks, BindingType::AfterAll));
    head.push(Task::ConvergeDone {
        global_checksum: facts.global_checksum.to_string(),
    });
    Decision {
        changes,
        ..Decision::head(head)
    }
}

/// Releases without a module minus the kept ones (as upstream, the ignored release and the
/// operator's own release are never purged).
fn purged(releases: Vec<String>, kept: &[String]) -> impl Iterator<Item = String> {
    releases.into_iter().filter(move |r| {
        let is_kept = kept.contains(r);
        if is_kept {
            tracing::info!(release = %r, "release without a module is kept (ignored or the operator's own)");
        }
        !is_kept
    })
}

/// End of step 8: when afterAll hooks changed global values or dynamic flags (the checksums
/// differ), 'reload all modules' runs again at once; otherwise the converge is over.
pub fn converge_done(before: &str, now: &str, first_converge_done: bool) -> Decision {
    if before != now {
        return Decision::head(vec![Task::Converge {
            reason: "afterAll hooks changed global values",
        }]);
    }
    let activation = if first_converge_done {
        "ReloadAllModules"
    } else {
        "OperatorStartup"
    };
    Decision {
        changes: vec![Change::ConvergeFinished { activation }],
        ..Decision::nothing()
    }
}
