//! Auto-healing: every few minutes, asks the Helm edge whether the release of each running module
//! with a chart still matches (release deployed, no object of its manifest missing; with a cluster
//! this reads the watched release storage and metadata-only lists, no helm process) and queues a
//! module run ('helm resources absent') for the ones that drifted.

use std::sync::Arc;
use std::time::Duration;

use addon_core::names::ModuleName;
use tokio_util::sync::CancellationToken;

use super::handlers::module::upgrade_request;
use super::{RuntimeHandle, Shared};
use crate::runtime::edges::helm::Drift;

/// Checks every `interval` (upstream: 4 m 30 s plus up to a minute of jitter).
pub async fn run(
    shared: Arc<Shared>,
    handle: RuntimeHandle,
    interval: Duration,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        for module in idle_chart_modules(&shared) {
            check(&shared, &handle, &module).await;
        }
    }
}

/// Enabled modules with a chart whose run finished and that have nothing queued; a module in
/// maintenance is left out (upstream stops its monitor: nothing of it is reinstalled).
fn idle_chart_modules(shared: &Shared) -> Vec<ModuleName> {
    let st = shared.lock();
    if !st.first_converge_done {
        return Vec::new();
    }
    st.enabled
        .iter()
        .filter(|m| {
            st.module(m)
                .is_some_and(|s| s.source.has_chart && s.startup_done)
        })
        .filter(|m| !st.store.config().module_in_maintenance(m))
        .filter(|m| !st.module_busy(m))
        .cloned()
        .collect()
}

async fn check(shared: &Shared, handle: &RuntimeHandle, module: &ModuleName) {
    let Some(chart) = shared.lock().module(module).map(|m| m.source.path.clone()) else {
        return;
    };
    let request = match upgrade_request(shared, module, &chart).await {
        Ok(request) => request,
        Err(error) => {
            tracing::debug!(module = %module, %error, "resource monitor skips the module");
            return;
        }
    };
    match shared.edges.helm.drift(&request).await {
        Ok(Some(drift)) => {
            record_drift(shared, module, &drift);
            tracing::warn!(module = %module, ?drift, "the module's release drifted from its chart: running the module again");
            handle.resources_absent(module);
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(module = %module, error = %addon_core::error::error_chain(&e), "resource monitor check failed")
        }
    }
}

/// Upstream's counters: a release in an unexpected status is redeployed; each absent object is
/// counted with its `ns/Kind/name`.
fn record_drift(shared: &Shared, module: &ModuleName, drift: &Drift) {
    match drift {
        Drift::UnexpectedStatus(_) => shared.metrics.helm_release_redeployed(module.as_str()),
        Drift::AbsentResources(resources) => {
            for resource in resources {
                shared
                    .metrics
                    .absent_resources(module.as_str(), resource, 1);
            }
        }
        Drift::Other => {}
    }
}
