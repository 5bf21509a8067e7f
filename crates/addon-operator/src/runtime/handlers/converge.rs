//! 'Reload all modules': beforeAll hooks, module discovery (enabled scripts, run / delete / purge
//! lists), afterAll hooks, and the check that afterAll did not change global values.

use addon_core::enablement::{self, Candidate, EnablementPass, Step};
use addon_core::hook_config::BindingType;
use addon_core::names::{ModuleName, QueueName};
use addon_core::values::patch::Scope;

use crate::edges::metrics::ModuleInfo;
use crate::runtime::Shared;
use crate::runtime::error::{DiscoveryError, TaskError};
use crate::runtime::state::State;
use crate::runtime::state::lifecycle_tasks;
use crate::runtime::task::{Outcome, Task};

/// Expands a converge into its beforeAll hooks and discovery, dropping other queued converges
/// (this one covers them).
pub fn start(shared: &Shared) -> Outcome {
    let mut st = shared.lock();
    st.converge_started
        .get_or_insert_with(tokio::time::Instant::now);
    if let Ok(main) = st.queues.get_mut(&QueueName::main()) {
        main.remove_where(|t| matches!(t, Task::Converge { .. }));
    }
    let mut head = lifecycle_tasks(&st.global_hooks, BindingType::BeforeAll);
    head.push(Task::DiscoverModules);
    Outcome::head(head)
}

/// Decides which modules are enabled and queues deletes, runs, purges, afterAll hooks and the
/// closing check. A failing `enabled` script fails the whole discovery (retried; it holds `main`).
pub async fn discover(shared: &Shared) -> Outcome {
    let candidates = candidates(&shared.lock());
    let enabled = match run_pass(shared, candidates).await {
        Ok(enabled) => enabled,
        Err(error) => {
            shared.metrics.discover_error();
            return Outcome::Failed(error.into());
        }
    };
    let releases = match shared.edges.helm.releases().await {
        Ok(releases) => releases,
        Err(e) => {
            shared.metrics.discover_error();
            return Outcome::Failed(TaskError::Discovery(e.into()));
        }
    };
    let mut st = shared.lock();
    let plan = enablement::plan(&st.module_order, &enabled, &st.enabled, &releases);
    let info: Vec<ModuleInfo> = st
        .module_order
        .iter()
        .map(|m| ModuleInfo {
            module: m.to_string(),
            enabled: enabled.contains(m),
            critical: false,
        })
        .collect();
    shared.metrics.modules_info(&info);
    st.enabled = enabled;
    let mut head = Vec::new();
    for module in plan.to_delete {
        head.push(Task::ModuleDelete { module });
    }
    for module in plan.to_run {
        let startup = plan.newly_enabled.contains(&module)
            || st.module(&module).is_none_or(|m| !m.startup_done);
        head.push(Task::ModuleRun {
            module,
            startup,
            reason: "converge",
        });
    }
    for release in startup_purge(&mut st, plan.to_purge) {
        head.push(Task::ModulePurge { release });
    }
    head.extend(lifecycle_tasks(&st.global_hooks, BindingType::AfterAll));
    head.push(Task::ConvergeDone {
        global_checksum: global_checksum(&st),
    });
    Outcome::head(head)
}

/// Releases without a module are purged once, by the first discovery after startup (as
/// upstream); the ignored release and the operator's own release never are.
fn startup_purge(st: &mut State, releases: Vec<String>) -> Vec<String> {
    if std::mem::replace(&mut st.startup_purge_done, true) {
        return Vec::new();
    }
    releases
        .into_iter()
        .filter(|r| {
            let kept = st.kept_releases.contains(r);
            if kept {
                tracing::info!(release = %r, "release without a module is kept (ignored or the operator's own)");
            }
            !kept
        })
        .collect()
}

fn candidates(st: &State) -> Vec<Candidate> {
    st.store.enablement_candidates(|name| {
        st.module(name)
            .is_some_and(|m| m.source.enabled_script.is_some())
    })
}

/// Runs the enablement pass, calling `enabled` scripts in module order.
async fn run_pass(
    shared: &Shared,
    candidates: Vec<Candidate>,
) -> Result<Vec<ModuleName>, DiscoveryError> {
    let mut pass = EnablementPass::new(candidates);
    loop {
        match pass.next_step()? {
            Step::Done(enabled) => return Ok(enabled),
            Step::RunScript {
                module,
                enabled_so_far,
            } => {
                let verdict = run_script(shared, &module, &enabled_so_far).await?;
                pass.accept_verdict(&module, verdict)?;
            }
        }
    }
}

async fn run_script(
    shared: &Shared,
    module: &ModuleName,
    enabled_so_far: &[ModuleName],
) -> Result<bool, DiscoveryError> {
    let (script, values) = {
        let mut st = shared.lock();
        st.record(|| format!("enabled {module}"));
        let script = st
            .module(module)
            .and_then(|m| m.source.enabled_script.clone())
            .ok_or_else(|| DiscoveryError::NoEnabledScript {
                module: module.clone(),
            })?;
        let values = st.store.enabled_script_values(module, enabled_so_far)?;
        (script, values)
    };
    let answer = shared
        .edges
        .hooks
        .run_enabled(module, &script, &values)
        .await?;
    let verdict =
        enablement::parse_script_result(module, &answer.result_file, &answer.stdout_last_line)?;
    if let Some(warning) = verdict.warning {
        tracing::warn!(module = %module, "{warning}");
    }
    Ok(verdict.enabled)
}

/// Global values and dynamic enable flags, as one checksum.
pub fn global_checksum(st: &State) -> String {
    let values = st.store.checksum(&Scope::Global).unwrap_or_default();
    format!("{values}:{:?}", st.store.dynamic_enabled())
}

/// Ends a converge: if afterAll hooks changed global values, converge again; otherwise the
/// first converge (if this was it) is over and schedules may fire.
pub fn finish(shared: &Shared, before: &str) -> Outcome {
    let mut st = shared.lock();
    if global_checksum(&st) != before {
        return Outcome::head(vec![Task::Converge {
            reason: "afterAll hooks changed global values",
        }]);
    }
    let activation = if st.first_converge_done {
        "ReloadAllModules"
    } else {
        "OperatorStartup"
    };
    let elapsed = st.converge_started.take().map(|started| started.elapsed());
    if let Some(elapsed) = elapsed {
        shared.metrics.converge(activation, elapsed);
    }
    if !st.first_converge_done {
        let duration_ms = elapsed.unwrap_or_default().as_millis() as u64;
        tracing::info!(modules = st.enabled.len(), duration_ms, "ready");
    }
    st.first_converge_done = true;
    Outcome::done()
}
