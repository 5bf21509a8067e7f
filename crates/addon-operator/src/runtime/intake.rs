//! Turns outside events into tasks: config edits, watch events of kubernetes bindings, and
//! schedule ticks.

use std::collections::HashMap;
use std::sync::Arc;

use addon_core::binding_context::{ContextBuilder, KeptObject, Snapshots};
use addon_core::hook_config::{BindingType, FilteredObject, WatchEvent};
use addon_core::jq::JqFilter;
use addon_core::lifecycle::{self, EventRun};
use addon_core::names::{HookName, ModuleName};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::decisions;
use super::edges::{ConfigUpdate, KubeEvent, MonitorKey};
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

/// Watch events taken from the channel at once (one sandbox request's worth): the events of one
/// binding among them go through the jq sandbox in one request instead of one round trip each.
const EVENT_BATCH: usize = crate::runtime::edges::jq::MAX_BATCH;

/// Feeds watch events into the monitors and queues hook runs for them.
pub async fn kube_events(
    shared: Arc<Shared>,
    mut events: mpsc::Receiver<KubeEvent>,
    stop: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            () = stop.cancelled() => return,
        };
        let Some(first) = event else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < EVENT_BATCH
            && let Ok(next) = events.try_recv()
        {
            batch.push(next);
        }
        let mut memo = FilterMemo::default();
        for run in runs_by_hook(batch) {
            on_kube_events(&shared, run, &mut memo).await;
        }
    }
}

/// Splits `batch` into runs of one binding: the events of each hook, in their order, the hooks
/// in the order of their first event, and a hook's events cut where the binding changes.
/// Several hooks watching the same objects get their events interleaved (one object changed: one
/// event for each); grouped, a hook's events go through the jq sandbox in one request per binding
/// and queue their runs next to each other, where they are combined into one run, instead of one
/// task (holding its object) per event that no neighbour combines with. The events of one hook
/// keep their order across its bindings.
fn runs_by_hook(batch: Vec<KubeEvent>) -> Vec<Vec<KubeEvent>> {
    let mut hooks: Vec<Vec<KubeEvent>> = Vec::new();
    let mut index: HashMap<(Option<ModuleName>, HookName), usize> = HashMap::new();
    for event in batch {
        let hook = (event.key.module.clone(), event.key.hook.clone());
        match index.get(&hook) {
            Some(&i) => hooks[i].push(event),
            None => {
                index.insert(hook, hooks.len());
                hooks.push(vec![event]);
            }
        }
    }
    let mut runs: Vec<Vec<KubeEvent>> = Vec::new();
    for event in hooks.into_iter().flatten() {
        match runs.last_mut() {
            Some(run) if run.first().is_some_and(|e| e.key == event.key) => run.push(event),
            _ => runs.push(vec![event]),
        }
    }
    runs
}

/// Handles a run of one binding's watch events and records `kube_event_duration_seconds` for each
/// (its share of the run's time).
async fn on_kube_events(shared: &Shared, run: Vec<KubeEvent>, memo: &mut FilterMemo) {
    let started = std::time::Instant::now();
    let count = u32::try_from(run.len()).unwrap_or(u32::MAX).max(1);
    if let Some(labels) = handle_kube_events(shared, run, memo).await {
        let each = started.elapsed() / count;
        for _ in 0..count {
            labels.event(&shared.metrics, each);
        }
    }
}

/// Filters the objects of a run of one binding's events (one sandbox request), updates the
/// monitor and queues a hook run per event that changed what the hook sees. Returns the
/// binding's metric labels (built once per run) when the monitor existed.
async fn handle_kube_events(
    shared: &Shared,
    run: Vec<KubeEvent>,
    memo: &mut FilterMemo,
) -> Option<MonitorLabels> {
    let key = run.first()?.key.clone();
    let (filter, labels) = shared.lock().monitors.get(&key).map(|m| {
        let filter = m.cache.binding().jq_filter.clone();
        (filter, MonitorLabels::of(&key, m))
    })?;
    let mut events = Vec::with_capacity(run.len());
    let mut objects = Vec::with_capacity(run.len());
    for e in run {
        events.push((e.event, e.kept));
        objects.push(e.object);
    }
    // outside the lock: the filter runs in the jq sandbox, up to --jq-timeout
    let filtering = std::time::Instant::now();
    let filtered = memo.filter(shared, &key, filter.as_ref(), &objects).await;
    let filter_time = filtering.elapsed();
    let mut st = shared.lock();
    let monitor = st.monitors.get_mut(&key)?;
    if monitor.cache.binding().jq_filter != filter {
        // the monitor was restarted with another filter meanwhile; its listing is current
        return Some(labels);
    }
    labels.jq_filter(&shared.metrics, objects.len(), filter_time);
    for (((event, kept), object), filtered) in events.into_iter().zip(objects).zip(filtered) {
        if let Some(filtered) = filtered {
            apply_event(shared, &mut st, &key, event, (object, kept), filtered);
        }
    }
    if let Some(monitor) = st.monitors.get(&key) {
        labels.snapshot(&shared.metrics, monitor.cache.len());
    }
    Some(labels)
}

/// The filter results of one batch of watch events, by jqFilter and object. A watch shared by
/// several bindings reports each event to all of them with one parsed object; the bindings with
/// the same jqFilter get one evaluation and one copy of its result (six modules watching a shard
/// with the same filter: a sixth of the jq work, and one kept result text instead of six).
#[derive(Default)]
struct FilterMemo {
    /// By filter source, then by object address; the object is held so that its address stays
    /// its own.
    by_filter: HashMap<Option<Box<str>>, Known>,
}

/// The results under one filter, by object address.
type Known = HashMap<usize, (Arc<Value>, FilteredObject)>;

fn address(object: &Arc<Value>) -> usize {
    Arc::as_ptr(object) as usize
}

impl FilterMemo {
    /// The filter results of `objects`: those evaluated earlier in the batch reused, the others
    /// in one sandbox request (see [`filter_events`]). `None` for an object the filter failed on.
    async fn filter(
        &mut self,
        shared: &Shared,
        key: &MonitorKey,
        filter: Option<&JqFilter>,
        objects: &[Arc<Value>],
    ) -> Vec<Option<FilteredObject>> {
        let missing = self.missing(filter, objects);
        if !missing.is_empty() {
            let filtered = filter_events(shared, key, filter, &missing).await;
            self.insert(filter, missing, filtered);
        }
        self.results(filter, objects)
    }

    fn known(&mut self, filter: Option<&JqFilter>) -> &mut Known {
        let source = filter.map(|f| Box::from(f.source()));
        self.by_filter.entry(source).or_default()
    }

    /// The objects (each once) whose result under `filter` is not known yet.
    fn missing(&mut self, filter: Option<&JqFilter>, objects: &[Arc<Value>]) -> Vec<Arc<Value>> {
        let known = self.known(filter);
        let mut seen = std::collections::HashSet::new();
        objects
            .iter()
            .filter(|o| !known.contains_key(&address(o)) && seen.insert(address(o)))
            .cloned()
            .collect()
    }

    /// Records the results of `objects` (an object the filter failed on stays unknown).
    fn insert(
        &mut self,
        filter: Option<&JqFilter>,
        objects: Vec<Arc<Value>>,
        filtered: Vec<Option<FilteredObject>>,
    ) {
        let known = self.known(filter);
        for (object, filtered) in objects.into_iter().zip(filtered) {
            if let Some(filtered) = filtered {
                known.insert(address(&object), (object, filtered));
            }
        }
    }

    /// The known result of each of `objects` under `filter`.
    fn results(
        &mut self,
        filter: Option<&JqFilter>,
        objects: &[Arc<Value>],
    ) -> Vec<Option<FilteredObject>> {
        let known = self.known(filter);
        objects
            .iter()
            .map(|o| known.get(&address(o)).map(|(_, f)| f.clone()))
            .collect()
    }
}

/// The filter results of `objects`, in one sandbox request; when that fails, one object at a
/// time, so that an object the filter fails on drops only its own event.
async fn filter_events(
    shared: &Shared,
    key: &MonitorKey,
    filter: Option<&JqFilter>,
    objects: &[Arc<Value>],
) -> Vec<Option<FilteredObject>> {
    if let Ok(all) = shared.jq.filter_with(filter, objects).await {
        return all.into_iter().map(Some).collect();
    }
    let mut out = Vec::with_capacity(objects.len());
    for object in objects {
        let one = shared
            .jq
            .filter_with(filter, std::slice::from_ref(object))
            .await;
        out.push(match one.map(|mut f| f.pop()) {
            Ok(filtered) => filtered,
            Err(e) => {
                shared.metrics.kube_watch_error(e.category());
                tracing::error!(hook = %key.hook, error = %e, "jqFilter failed on an object");
                None
            }
        });
    }
    out
}

/// Puts one filtered event (the object with the text its watch keeps) into its monitor (or its
/// buffer while the watch starts) and queues the hook run when the event changed what the hook
/// sees and the binding runs on it.
fn apply_event(
    shared: &Shared,
    st: &mut super::state::State,
    key: &MonitorKey,
    event: WatchEvent,
    (object, kept): (Arc<Value>, Option<KeptObject>),
    filtered: FilteredObject,
) {
    let Some(monitor) = st.monitors.get_mut(key) else {
        return;
    };
    if let Some(pending) = &mut monitor.pending {
        pending.push((event, object, kept, filtered));
        return;
    }
    let Some(item) = monitor.cache.apply_kept(event, &object, kept, filtered) else {
        return;
    };
    let synced = monitor.synced;
    // read-only from here: the binding is borrowed from the monitor, not copied per event
    let st_ref: &super::state::State = st;
    let Some(binding) = st_ref.monitors.get(key).map(|m| m.cache.binding()) else {
        return;
    };
    if !lifecycle::watch_event_runs(synced, &binding.execute_hook_on_event, event) {
        return;
    }
    let Some(def) = st_ref.hook(key.module.as_ref(), &key.hook) else {
        return;
    };
    // snapshots are attached right before the run (ContextBuilder::refresh)
    let snapshots = Snapshots::new();
    let ctx = ContextBuilder::new(&def.config, &snapshots).event(binding, event, &item);
    let decision = lifecycle::event_run(EventRun {
        module: key.module.clone(),
        hook: key.hook.clone(),
        binding: BindingType::Kubernetes,
        context: ctx,
        allow_failure: binding.allow_failure,
        queue: binding.queue.clone(),
    });
    // an event run only queues a hook run: nothing to stop
    let _ = decisions::enqueue_locked(shared, st, decision);
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

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::names::HookName;

    fn event(hook: &str, name: &str) -> KubeEvent {
        let (hook, binding) = hook.split_once('.').unwrap_or((hook, "0"));
        KubeEvent {
            key: MonitorKey {
                module: None,
                hook: HookName::new(hook).unwrap(),
                binding: binding.parse().unwrap(),
            },
            event: WatchEvent::Modified,
            object: Arc::new(serde_json::json!({"metadata": {"name": name}})),
            kept: None,
        }
    }

    fn names(runs: Vec<Vec<KubeEvent>>) -> Vec<Vec<String>> {
        runs.iter()
            .map(|run| {
                run.iter()
                    .map(|e| {
                        format!(
                            "{}.{}:{}",
                            e.key.hook,
                            e.key.binding,
                            e.object["metadata"]["name"].as_str().unwrap_or_default()
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn bindings_with_the_same_filter_over_the_same_object_share_one_evaluation_and_its_text() {
        let filter = JqFilter::compile(".metadata.name").unwrap();
        let other = JqFilter::compile(".metadata").unwrap();
        let shared = Arc::new(serde_json::json!({"metadata": {"name": "a"}}));
        let equal_copy = Arc::new(serde_json::json!({"metadata": {"name": "a"}}));
        let mut memo = FilterMemo::default();
        let objects = vec![Arc::clone(&shared), Arc::clone(&shared)];
        let missing = memo.missing(Some(&filter), &objects);
        assert_eq!(missing.len(), 1, "one object, evaluated once");
        let result = FilteredObject::new(&shared, Some(serde_json::json!("a")));
        memo.insert(Some(&filter), missing, vec![Some(result)]);
        // a second binding with the same filter: nothing left to evaluate, the same text
        let second = vec![Arc::clone(&shared)];
        assert!(memo.missing(Some(&filter), &second).is_empty());
        let first = memo.results(Some(&filter), &objects);
        let again = memo.results(Some(&filter), &second);
        let text = |f: &Option<FilteredObject>| f.as_ref().and_then(|f| f.filter_result.clone());
        let (a, b) = (text(&first[0]).unwrap(), text(&again[0]).unwrap());
        assert!(a.is_same_copy(&b));
        // another filter, or an equal object parsed separately, is evaluated on its own
        assert_eq!(memo.missing(Some(&other), &second).len(), 1);
        assert_eq!(memo.missing(None, &second).len(), 1);
        assert_eq!(memo.missing(Some(&filter), &[equal_copy]).len(), 1);
    }

    #[test]
    fn an_object_the_filter_failed_on_has_no_result_and_is_not_remembered() {
        let filter = JqFilter::compile(".a").unwrap();
        let object = Arc::new(serde_json::json!({"a": 1}));
        let mut memo = FilterMemo::default();
        let missing = memo.missing(Some(&filter), std::slice::from_ref(&object));
        memo.insert(Some(&filter), missing, vec![None]);
        assert!(memo.results(Some(&filter), std::slice::from_ref(&object))[0].is_none());
        assert_eq!(
            memo.missing(Some(&filter), std::slice::from_ref(&object))
                .len(),
            1
        );
    }

    #[test]
    fn the_events_of_one_hook_keep_their_order_across_its_bindings() {
        let batch = vec![
            event("a.0", "1"),
            event("b", "1"),
            event("a.1", "2"),
            event("a.0", "3"),
        ];
        assert_eq!(
            names(runs_by_hook(batch)),
            [vec!["a.0:1"], vec!["a.1:2"], vec!["a.0:3"], vec!["b.0:1"]]
        );
    }

    #[test]
    fn interleaved_events_of_several_hooks_are_grouped_by_hook_in_order() {
        let batch = vec![
            event("a", "1"),
            event("b", "1"),
            event("a", "2"),
            event("c", "1"),
            event("b", "2"),
            event("a", "3"),
        ];
        assert_eq!(
            names(runs_by_hook(batch)),
            [
                vec!["a.0:1", "a.0:2", "a.0:3"],
                vec!["b.0:1", "b.0:2"],
                vec!["c.0:1"]
            ]
        );
    }
}
