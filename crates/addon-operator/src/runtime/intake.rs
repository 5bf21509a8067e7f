//! Turns outside events into tasks: config edits, watch events of kubernetes bindings, and
//! schedule ticks.

use std::sync::Arc;

use addon_core::binding_context::{ContextBuilder, Snapshots};
use addon_core::hook_config::BindingType;
use addon_core::lifecycle::{self, EventRun};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::decisions;
use super::edges::{ConfigUpdate, KubeEvent};
use super::kube_metrics::MonitorLabels;
use super::{ScheduleId, Shared};

/// Applies config edits made by others (in the config writer's order).
pub async fn config_updates(
    shared: Arc<Shared>,
    mut updates: mpsc::UnboundedReceiver<ConfigUpdate>,
    stop: CancellationToken,
) {
    loop {
        let update = tokio::select! {
            u = updates.recv() => u,
            () = stop.cancelled() => return,
        };
        match update {
            None => return,
            Some(update) => super::config_writer::on_update(&shared, update).await,
        }
    }
}

/// Feeds watch events into the monitors and queues hook runs for them.
pub async fn kube_events(
    shared: Arc<Shared>,
    mut events: mpsc::UnboundedReceiver<KubeEvent>,
    stop: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            () = stop.cancelled() => return,
        };
        match event {
            None => return,
            Some(event) => on_kube_event(&shared, event).await,
        }
    }
}

/// Handles one watch event and records `kube_event_duration_seconds` for it.
async fn on_kube_event(shared: &Shared, ev: KubeEvent) {
    let started = std::time::Instant::now();
    if let Some(labels) = handle_kube_event(shared, ev).await {
        labels.event(&shared.metrics, started.elapsed());
    }
}

/// Filters the event's object, updates the monitor and queues the hook run. Returns the
/// binding's metric labels (built once per event) when the monitor existed.
async fn handle_kube_event(shared: &Shared, ev: KubeEvent) -> Option<MonitorLabels> {
    let (filter, labels) = shared.lock().monitors.get(&ev.key).map(|m| {
        let filter = m.cache.binding().jq_filter.clone();
        (filter, MonitorLabels::of(&ev.key, m))
    })?;
    // outside the lock: the filter runs in the jq sandbox, up to --jq-timeout
    let filtering = std::time::Instant::now();
    let filtered = shared
        .jq
        .filter_with(filter.as_ref(), std::slice::from_ref(&ev.object))
        .await
        .map(|mut f| f.pop());
    let filter_time = filtering.elapsed();
    let filtered = match filtered {
        Ok(Some(filtered)) => filtered,
        Ok(None) => return Some(labels),
        Err(e) => {
            shared.metrics.kube_watch_error(e.category());
            tracing::error!(hook = %ev.key.hook, error = %e, "jqFilter failed on an object");
            return Some(labels);
        }
    };
    let mut st = shared.lock();
    let Some(monitor) = st.monitors.get_mut(&ev.key) else {
        return Some(labels);
    };
    if monitor.cache.binding().jq_filter != filter {
        // the monitor was restarted with another filter meanwhile; its listing is current
        return Some(labels);
    }
    labels.jq_filter(&shared.metrics, 1, filter_time);
    if let Some(pending) = &mut monitor.pending {
        pending.push((ev.event, ev.object, filtered));
        return Some(labels);
    }
    let applied = monitor.cache.apply_filtered(ev.event, ev.object, filtered);
    labels.snapshot(&shared.metrics, monitor.cache.len());
    let Some(item) = applied else {
        return Some(labels);
    };
    let binding = monitor.cache.binding().clone();
    let runs =
        lifecycle::watch_event_runs(monitor.synced, &binding.execute_hook_on_event, ev.event);
    let Some(def) = st
        .hook(ev.key.module.as_ref(), &ev.key.hook)
        .filter(|_| runs)
    else {
        return Some(labels);
    };
    // snapshots are attached right before the run (ContextBuilder::refresh)
    let snapshots = Snapshots::new();
    let ctx = ContextBuilder::new(&def.config, &snapshots).event(&binding, ev.event, &item);
    let decision = lifecycle::event_run(EventRun {
        module: ev.key.module,
        hook: ev.key.hook,
        binding: BindingType::Kubernetes,
        context: ctx,
        allow_failure: binding.allow_failure,
        queue: binding.queue,
    });
    decisions::enqueue(shared, st, decision);
    Some(labels)
}

/// Queues hook runs for schedule ticks; ticks before the first converge is done are dropped.
pub async fn schedule_ticks(
    shared: Arc<Shared>,
    mut ticks: mpsc::Receiver<ScheduleId>,
    stop: CancellationToken,
) {
    loop {
        let tick = tokio::select! {
            t = ticks.recv() => t,
            () = stop.cancelled() => return,
        };
        match tick {
            None => return,
            Some(id) => on_tick(&shared, &id),
        }
    }
}

fn on_tick(shared: &Shared, id: &ScheduleId) {
    let st = shared.lock();
    if !lifecycle::schedule_tick_runs(st.first_converge_done) {
        tracing::debug!(hook = %id.hook, "schedule tick before the first converge is dropped");
        return;
    }
    let Some(def) = st.hook(id.module.as_ref(), &id.hook) else {
        return;
    };
    let Some(binding) = def.config.schedules.get(id.index) else {
        return;
    };
    // snapshots are attached right before the run (ContextBuilder::refresh)
    let snapshots = Snapshots::new();
    let ctx = ContextBuilder::new(&def.config, &snapshots).schedule(binding);
    let decision = lifecycle::event_run(EventRun {
        module: id.module.clone(),
        hook: id.hook.clone(),
        binding: BindingType::Schedule,
        context: ctx,
        allow_failure: binding.allow_failure,
        queue: binding.queue.clone(),
    });
    decisions::enqueue(shared, st, decision);
}
