//! 'Reload all modules': beforeAll hooks, module discovery (enabled scripts, run / delete / purge
//! lists), afterAll hooks, and the check that afterAll did not change global values.

use addon_core::discovery::ModuleSource;
use addon_core::enablement::{self, Candidate, EnablementPass, Step};
use addon_core::lifecycle::{self, ConvergeFacts, Discovered};
use addon_core::module_graph as graph;
use addon_core::names::ModuleName;
use std::collections::BTreeMap;

use crate::runtime::Shared;
use crate::runtime::decisions;
use crate::runtime::error::{DiscoveryError, TaskError};
use crate::runtime::metrics::ModuleInfo;
use crate::runtime::state::State;
use crate::runtime::task::Outcome;

/// Expands a converge into its beforeAll hooks and discovery, dropping other queued converges
/// (this one covers them).
pub fn start(shared: &Shared) -> Outcome {
    let st = shared.lock();
    let decision = lifecycle::start_converge(&st.global_hooks);
    decisions::outcome(shared, st, decision)
}

/// Decides which modules are enabled and queues deletes, runs, purges, afterAll hooks and the
/// closing check. A failing `enabled` script fails the whole discovery (retried; it holds `main`).
pub async fn discover(shared: &Shared) -> Outcome {
    let candidates = candidates(&shared.lock());
    let mut reasons = BTreeMap::new();
    let enabled = match run_pass(shared, candidates, &mut reasons).await {
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
    // a staged start: the module hooks' configs load beside global hooks and the `enabled`
    // scripts; no module run is planned without them
    if !shared.module_hooks_known(&shared.stopping).await {
        return Outcome::done();
    }
    let mut st = shared.lock();
    let enabled = apply_requirements(&mut st, enabled);
    record_modules_info(shared, &st, &enabled);
    crate::runtime::admin::enablement(shared, &st, &enabled, &reasons);
    let started: Vec<ModuleName> = (st.modules.iter())
        .filter(|(_, m)| m.startup_done)
        .map(|(name, _)| name.clone())
        .collect();
    let checksum = global_checksum(&st);
    let orders: Vec<u32> = (st.module_order.iter())
        .map(|m| st.module(m).map_or(0, |s| s.source.order))
        .collect();
    let requires: Vec<Vec<ModuleName>> = (st.module_order.iter())
        .map(|m| {
            st.module(m)
                .map_or_else(Vec::new, |s| required_modules(&s.source))
        })
        .collect();
    let found = Discovered {
        module_order: &st.module_order,
        orders: &orders,
        enabled: &enabled,
        requires: &requires,
        releases: &releases,
        kept_releases: &st.kept_releases,
    };
    let facts = ConvergeFacts {
        previously_enabled: &st.enabled,
        started: &started,
        startup_purge_done: st.startup_purge_done,
        global_checksum: &checksum,
        parallel_module_runs: st.parallel_module_runs,
    };
    let decision = lifecycle::discovered(found, facts, &st.global_hooks);
    decisions::outcome(shared, st, decision)
}

/// The enabled modules whose `module.yaml` requirements hold, in the order they run (a module
/// after the modules it requires); each one that does not run is logged with its reason and
/// kept in the state for the debug API.
fn apply_requirements(st: &mut State, enabled: Vec<ModuleName>) -> Vec<ModuleName> {
    let sources: Vec<&ModuleSource> = (st.module_order.iter())
        .filter_map(|m| st.module(m))
        .map(|m| &m.source)
        .collect();
    let (running, unmet) =
        graph::check_requirements(&sources, &enabled, st.kubernetes_version.as_ref());
    for reason in &unmet {
        tracing::warn!(module = %reason.module(), "{reason}: the module does not run");
    }
    let order = graph::run_order(&sources);
    st.not_running = (unmet.iter())
        .map(|u| (u.module().clone(), u.to_string()))
        .collect();
    order.into_iter().filter(|m| running.contains(m)).collect()
}

/// The modules `source` requires.
fn required_modules(source: &ModuleSource) -> Vec<ModuleName> {
    (source.definition.requires.iter())
        .map(|r| r.module.clone())
        .collect()
}

fn record_modules_info(shared: &Shared, st: &State, enabled: &[ModuleName]) {
    let info: Vec<ModuleInfo> = st
        .module_order
        .iter()
        .map(|m| ModuleInfo {
            module: m.to_string(),
            enabled: enabled.contains(m),
            critical: (st.module(m))
                .and_then(|s| s.source.definition.critical)
                .unwrap_or(false),
        })
        .collect();
    shared.metrics.modules_info(&info);
}

/// Every module of the tree; a module that left it (`--reload-tree`) is never enabled again,
/// so that this discovery deletes it.
fn candidates(st: &State) -> Vec<Candidate> {
    let mut candidates = st.store.enablement_candidates(|name| {
        st.module(name)
            .is_some_and(|m| m.source.enabled_script.is_some())
    });
    candidates.retain(|c| st.module(&c.name).is_some_and(|m| !m.removed));
    candidates
}

/// Runs the enablement pass, calling `enabled` scripts in module order.
async fn run_pass(
    shared: &Shared,
    candidates: Vec<Candidate>,
    reasons: &mut BTreeMap<ModuleName, String>,
) -> Result<Vec<ModuleName>, DiscoveryError> {
    let mut pass = EnablementPass::new(candidates);
    loop {
        match pass.next_step()? {
            Step::Done(enabled) => return Ok(enabled),
            Step::RunScript {
                module,
                enabled_so_far,
            } => {
                let (verdict, reason) = run_script(shared, &module, &enabled_so_far).await?;
                if !verdict {
                    let why = match reason.is_empty() {
                        true => "its enabled script answered false".to_string(),
                        false => format!("its enabled script answered false: {reason}"),
                    };
                    reasons.insert(module.clone(), why);
                }
                pass.accept_verdict(&module, verdict)?;
            }
        }
    }
}

async fn run_script(
    shared: &Shared,
    module: &ModuleName,
    enabled_so_far: &[ModuleName],
) -> Result<(bool, String), DiscoveryError> {
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
        .await;
    let usage = match &answer {
        Ok(answer) => answer.usage,
        Err(failure) => failure.usage,
    };
    // as upstream: the script's CPU and memory under hook="enabled", binding="enabled"
    shared.metrics.enabled_script(
        module.as_str(),
        usage.user,
        usage.sys,
        usage.max_rss_kb.saturating_mul(1024),
    );
    let answer = answer?;
    let verdict =
        enablement::parse_script_result(module, &answer.result_file, &answer.stdout_last_line)?;
    if let Some(warning) = verdict.warning {
        tracing::warn!(module = %module, "{warning}");
    }
    if !verdict.enabled && !answer.reason.is_empty() {
        tracing::info!(module = %module, reason = %answer.reason, "disabled by its enabled script");
    }
    remember_reason(shared, module, verdict.enabled, answer.reason.clone());
    Ok((verdict.enabled, answer.reason))
}

/// Keeps the `$MODULE_ENABLED_REASON` of a module its script disabled (as upstream keeps it in
/// the module's state), for the debug API and the log line of the module's deletion.
fn remember_reason(shared: &Shared, module: &ModuleName, enabled: bool, reason: String) {
    let mut st = shared.lock();
    let reason = reason.trim();
    if enabled || reason.is_empty() {
        st.disabled_reasons.remove(module);
    } else {
        st.disabled_reasons
            .insert(module.clone(), reason.to_string());
    }
}

/// Global values and dynamic enable flags, as one checksum.
pub fn global_checksum(st: &State) -> String {
    // CRDs a module run installed change `global.discovery.apiVersions`, not what afterAll
    // hooks or the config did: that must not start another converge
    let values = st.store.global_checksum_without_discovery();
    format!("{values}:{:?}", st.store.dynamic_enabled())
}

/// Ends a converge: if afterAll hooks changed global values, converge again; otherwise the
/// first converge (if this was it) is over and schedules may fire.
pub fn finish(shared: &Shared, before: &str) -> Outcome {
    let st = shared.lock();
    let now = global_checksum(&st);
    let decision = lifecycle::converge_done(before, &now, st.first_converge_done);
    decisions::outcome(shared, st, decision)
}
