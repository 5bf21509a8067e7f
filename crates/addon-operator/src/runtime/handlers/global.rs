//! Hook-run tasks (global and module hooks, any binding) and the start of a global hook's
//! kubernetes bindings.

use addon_core::binding_context::{ContextBuilder, Snapshots};
use addon_core::error::error_chain;
use addon_core::hook_config::{FilteredObject, KubernetesBinding};
use addon_core::lifecycle;
use addon_core::monitor::{Listing, MonitorCache};
use addon_core::names::{HookName, QueueName};

use crate::runtime::Shared;
use crate::runtime::decisions;
use crate::runtime::edges::{Listed, MonitorKey};
use crate::runtime::error::{MonitorError, TaskError};
use crate::runtime::hooks::{self, HookEffect, RunContext};
use crate::runtime::kube_metrics::MonitorLabels;
use crate::runtime::state::Monitor;
use crate::runtime::task::{HookTask, Outcome, Task};

/// Runs a queued hook. A failure of an `allowFailure` binding is logged and counts as done.
pub async fn hook_task(shared: &Shared, queue: &QueueName, task: &HookTask) -> Outcome {
    let module = task.module.as_ref();
    // A run queued for a module that was disabled meanwhile (an event of its own uninstall, say)
    // is dropped, as upstream's ModuleHookRun does: the module's hooks run only while it is on.
    if let Some(m) = module
        && !shared.lock().enabled.contains(m)
    {
        tracing::debug!(module = %m, hook = %task.hook, "run of a disabled module's hook dropped");
        return Outcome::done();
    }
    let at = RunContext {
        queue,
        allow_failure: task.allow_failure,
    };
    let result = hooks::run(
        shared,
        at,
        module,
        &task.hook,
        task.binding,
        task.contexts.clone(),
    )
    .await;
    let effect = match result {
        Ok(effect) => effect,
        Err(error) if task.allow_failure => {
            tracing::warn!(hook = %task.hook, error = %error_chain(&error), "hook failed, but it is allowed to fail");
            HookEffect::default()
        }
        Err(error) => return Outcome::Failed(error.into()),
    };
    mark_synchronized(shared, task);
    let st = shared.lock();
    let decision = lifecycle::hook_finished(decisions::view(&st), task.origin, module, effect);
    decisions::outcome(shared, st, decision)
}

/// After a Synchronization run, the binding's events start running the hook.
fn mark_synchronized(shared: &Shared, task: &HookTask) {
    let synced: Vec<&str> = task
        .contexts
        .iter()
        .filter(|c| c.is_synchronization())
        .map(|c| c.binding.as_str())
        .collect();
    if synced.is_empty() {
        return;
    }
    let mut st = shared.lock();
    for (key, monitor) in st.monitors.iter_mut() {
        let same_hook = key.module == task.module && key.hook == task.hook;
        if same_hook && synced.contains(&monitor.cache.binding().name.as_str()) {
            monitor.synced = true;
        }
    }
}

/// Starts the watches of every kubernetes binding of a global hook and queues one
/// Synchronization run per binding at the head of `main`.
pub async fn enable_kubernetes(shared: &Shared, hook: &HookName) -> Outcome {
    let def = match shared.lock().global_hook(hook).cloned() {
        Some(def) => def,
        None => {
            let error = MonitorError::UnknownHook { hook: hook.clone() };
            return Outcome::Failed(error.into());
        }
    };
    let mut head = Vec::new();
    for index in 0..def.config.kubernetes.len() {
        let key = MonitorKey {
            module: None,
            hook: hook.clone(),
            binding: index,
        };
        match start_monitor(shared, &key).await {
            Ok(Some(task)) => head.push(task),
            Ok(None) => {}
            Err(error) => return Outcome::Failed(TaskError::Monitor(error)),
        }
    }
    let decision = lifecycle::global_kubernetes_enabled(head);
    decisions::outcome(shared, shared.lock(), decision)
}

/// Puts the listing, already in `cache`, into a starting monitor, then replays the events that
/// arrived meanwhile.
fn load_monitor(monitor: &mut Monitor, cache: MonitorCache, synced: bool) {
    monitor.cache = cache;
    for (event, object, kept, filtered) in monitor.pending.take().unwrap_or_default() {
        monitor.cache.apply_kept(event, &object, kept, filtered);
    }
    monitor.synced = synced;
}

/// A page of the listing as `binding` sees it, filtered in the jq sandbox (outside the state
/// lock), into `cache`. Objects whose filter result a binding with the same jqFilter already
/// holds for the same kept copy (a shared watch's listing) take it instead.
async fn filter_page(
    shared: &Shared,
    hook: &HookName,
    binding: &KubernetesBinding,
    page: Vec<Listed>,
    cache: &mut Listing,
) -> Result<(), MonitorError> {
    let taken = peer_results(shared, binding, &page);
    let missing: Vec<std::borrow::Cow<'_, serde_json::Value>> = (page.iter())
        .zip(&taken)
        .filter(|(_, f)| f.is_none())
        .map(|(l, _)| l.whole())
        .collect();
    let filtered = shared.jq.filter_objects(binding, &missing).await;
    let mut filtered = filtered
        .map_err(|source| MonitorError::Filter {
            hook: hook.clone(),
            binding: binding.name.clone(),
            source,
        })?
        .into_iter();
    drop(missing);
    for (listed, taken) in page.into_iter().zip(taken) {
        if let Some(result) = taken.or_else(|| filtered.next()) {
            cache.push(&listed.object, listed.kept, &result);
        }
    }
    Ok(())
}

/// For each object of `page`, the filter result of a running binding that selects and filters
/// like `binding` and holds the same kept copy of it (see [`MonitorCache::filtered_copy`]).
fn peer_results(
    shared: &Shared,
    binding: &KubernetesBinding,
    page: &[Listed],
) -> Vec<Option<FilteredObject>> {
    if !binding.keep_full_objects_in_memory || page.iter().all(|l| l.kept.is_none()) {
        return vec![None; page.len()];
    }
    let st = shared.lock();
    let peers: Vec<&MonitorCache> = (st.monitors.values())
        .map(|m| &m.cache)
        .filter(|c| c.binding().sees_like(binding) && !c.is_empty())
        .collect();
    if peers.is_empty() {
        return vec![None; page.len()];
    }
    page.iter()
        .map(|l| {
            let kept = l.kept.as_ref()?;
            MonitorCache::filtered_copy(&peers, &l.object, kept)
        })
        .collect()
}

/// Starts the watch and filters its listing a page at a time into a new cache, which keeps of
/// each object only what the binding needs, so memory is bounded by a page. Returns the cache and
/// the time spent filtering.
async fn list_filtered(
    shared: &Shared,
    key: &MonitorKey,
    binding: &KubernetesBinding,
) -> (Result<MonitorCache, MonitorError>, std::time::Duration) {
    let (pages, mut received) = tokio::sync::mpsc::channel(1);
    let listing = shared.edges.kube.start_paged(key, binding, pages);
    let filtering = async {
        let mut cache = MonitorCache::listing(binding);
        let (mut failed, mut time) = (None, std::time::Duration::ZERO);
        while let Some(page) = received.recv().await {
            if failed.is_some() {
                continue;
            }
            let started = std::time::Instant::now();
            if let Err(e) = filter_page(shared, &key.hook, binding, page, &mut cache).await {
                failed = Some(e);
            }
            time += started.elapsed();
        }
        (failed.map_or_else(|| Ok(cache.done()), Err), time)
    };
    let (listed, (filtered, time)) = tokio::join!(listing, filtering);
    (listed.map_err(MonitorError::Start).and(filtered), time)
}

/// Starts one binding's watch and loads its objects. Returns the Synchronization run to queue,
/// or `None` when the hook must not run on Synchronization (the binding is synced at once).
pub async fn start_monitor(
    shared: &Shared,
    key: &MonitorKey,
) -> Result<Option<Task>, MonitorError> {
    let hook = key.hook.clone();
    let def = shared
        .lock()
        .hook(key.module.as_ref(), &key.hook)
        .cloned()
        .ok_or_else(|| MonitorError::UnknownHook { hook: hook.clone() })?;
    let binding =
        def.config
            .kubernetes
            .get(key.binding)
            .cloned()
            .ok_or(MonitorError::UnknownBinding {
                hook,
                index: key.binding,
            })?;
    let runs = lifecycle::synchronization_runs(&binding);
    shared.lock().monitors.insert(
        key.clone(),
        Monitor {
            cache: MonitorCache::new(&binding),
            synced: false,
            pending: Some(Vec::new()),
        },
    );
    let (started, filter_time) = list_filtered(shared, key, &binding).await;
    let mut st = shared.lock();
    let cache = match started {
        Ok(cache) => cache,
        Err(e) => {
            st.monitors.remove(key);
            return Err(e);
        }
    };
    let Some(monitor) = st.monitors.get_mut(key) else {
        return Err(MonitorError::Stopped {
            hook: key.hook.clone(),
        });
    };
    let filtered = cache.len();
    load_monitor(monitor, cache, !runs);
    let labels = MonitorLabels::of(key, monitor);
    labels.jq_filter(&shared.metrics, filtered, filter_time);
    labels.snapshot(&shared.metrics, monitor.cache.len());
    if !runs {
        return Ok(None);
    }
    let items = st
        .monitors
        .get(key)
        .map(|m| m.cache.items())
        .unwrap_or_default();
    // other bindings' snapshots are attached right before the run (ContextBuilder::refresh)
    let snapshots = Snapshots::new();
    let ctx = ContextBuilder::new(&def.config, &snapshots).synchronization_of(&binding, items);
    let (module, hook) = (key.module.clone(), key.hook.clone());
    Ok(Some(lifecycle::synchronization_run(
        module, hook, &binding, ctx,
    )))
}
