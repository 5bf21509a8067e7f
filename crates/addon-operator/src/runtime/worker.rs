//! One worker per queue: takes the head when it is due, combines the following runs of the same
//! hook into it, runs the handler, and applies the outcome (pop and follow-up tasks, or retry).

use std::sync::Arc;
use std::time::Duration;

use addon_core::binding_context::{combines, compact_groups};
use addon_core::names::{HookName, ModuleName, QueueName};
use addon_core::queue::{QueueTask, RateLimit, TaskId};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Shared;
use super::handlers;
use super::state::State;
use super::task::{Outcome, Task};
use crate::runtime::metrics::{BindingLabels, Metrics};

/// How often a worker of a replica that is not leading looks again (it is stopping by then).
const LEADERSHIP_RECHECK: Duration = Duration::from_millis(100);

enum Pick {
    Run(TaskId, Task),
    WaitUntil(Duration),
    Idle,
}

/// Processes `queue` until `stop` fires.
pub async fn run(shared: Arc<Shared>, queue: QueueName, stop: CancellationToken) {
    loop {
        let notified = shared.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let pick = {
            let now = shared.now();
            pick(&mut shared.lock(), &shared.metrics, &queue, now)
        };
        match pick {
            Pick::Run(id, task) => run_task(&shared, &queue, id, task).await,
            Pick::WaitUntil(at) => {
                let deadline = shared.epoch + at;
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = &mut notified => {}
                    () = stop.cancelled() => return,
                }
            }
            Pick::Idle => {
                tokio::select! {
                    () = &mut notified => {}
                    () = stop.cancelled() => return,
                }
            }
        }
        if stop.is_cancelled() {
            return;
        }
    }
}

/// Chooses what to do next; marks the head as running and merges combinable followers into it.
fn pick(st: &mut State, metrics: &Metrics, queue: &QueueName, now: Duration) -> Pick {
    if st.leadership.as_ref().is_some_and(|l| !l.is_leading()) {
        tracing::debug!(queue = %queue, "not the leader (lease lost or not renewed in time): no task starts");
        return Pick::WaitUntil(now + LEADERSHIP_RECHECK);
    }
    let recording = st.history.is_some();
    let Ok(q) = st.queues.get_mut(queue) else {
        return Pick::Idle;
    };
    let Some(head) = q.peek() else {
        return Pick::Idle;
    };
    if let Some(at) = head.retry_at.filter(|at| *at > now) {
        return Pick::WaitUntil(at);
    }
    let limited = rate_limit_key(&head.task);
    if let Some(at) = limited
        .as_ref()
        .and_then(|key| rate_limited_until(st, key, now))
    {
        return Pick::WaitUntil(at);
    }
    let Ok(q) = st.queues.get_mut(queue) else {
        return Pick::Idle;
    };
    let followers = q.take_followers(combinable);
    if let (false, Some(head)) = (followers.is_empty(), q.peek_mut())
        && let Task::Hook(h) = &mut head.task
    {
        for task in followers {
            if let Task::Hook(f) = task {
                h.contexts.extend(f.contexts);
            }
        }
        h.contexts = compact_groups(std::mem::take(&mut h.contexts));
    }
    let task = q
        .start_head()
        .map(|h| (h.id, h.task.clone(), recording.then(|| h.description())));
    match task {
        Some((id, task, description)) => {
            if let Some(limit) = limited.and_then(|key| st.rate_limits.get_mut(&key)) {
                limit.take(now);
            }
            if let Some(description) = description {
                st.record(|| format!("start {description}"));
            }
            let waited =
                (st.queued_at.remove(&(queue.clone(), id))).map(|at| now.saturating_sub(at));
            if let Some(waited) = waited {
                record_wait(metrics, &task, queue, waited);
            }
            Pick::Run(id, task)
        }
        None => Pick::Idle,
    }
}

type HookKey = (Option<ModuleName>, HookName);

fn rate_limit_key(task: &Task) -> Option<HookKey> {
    match task {
        Task::Hook(h) => Some((h.module.clone(), h.hook.clone())),
        _ => None,
    }
}

/// When the hook's `settings` rate limit lets its next run start, if that is later than `now`
/// (the head waits, and events that arrive meanwhile are combined into it).
fn rate_limited_until(st: &mut State, key: &HookKey, now: Duration) -> Option<Duration> {
    if !st.rate_limits.contains_key(key) {
        let settings = &st.hook(key.0.as_ref(), &key.1)?.config.settings;
        let limit = RateLimit::from_settings(settings)?;
        st.rate_limits.insert(key.clone(), limit);
    }
    let at = st.rate_limits.get(key)?.ready_at();
    (at > now).then_some(at)
}

/// Whether `next` may run together with `head` (binding context combining).
fn combinable(head: &Task, next: &Task) -> bool {
    match (head, next) {
        (Task::Hook(a), Task::Hook(b)) => a.same_hook_as(b) && combines(&a.contexts, &b.contexts),
        _ => false,
    }
}

async fn run_task(shared: &Shared, queue: &QueueName, id: TaskId, task: Task) {
    let span = tracing::info_span!(
        "task",
        task.kind = task.kind(),
        queue = %queue,
        module = task.module().map(|m| m.to_string()).unwrap_or_default(),
        hook = hook_name(&task),
        binding = binding_name(&task),
    );
    async {
        let started = tokio::time::Instant::now();
        tracing::debug!(task = %task.description(), "task started");
        let outcome = handlers::handle(shared, queue, &task).await;
        let elapsed = started.elapsed();
        apply(shared, queue, id, &task, outcome, elapsed);
    }
    .instrument(span)
    .await;
}

fn binding_name(task: &Task) -> String {
    match task {
        Task::Hook(h) => h
            .contexts
            .first()
            .map_or_else(|| h.binding.as_str().to_string(), |c| c.binding.clone()),
        _ => String::new(),
    }
}

/// `task_wait_in_queue_seconds_total` with upstream's labels: the hook and binding name for
/// hook runs, else the task type as `binding`.
fn record_wait(metrics: &Metrics, task: &Task, queue: &QueueName, waited: Duration) {
    let (hook, binding) = match task {
        Task::Hook(h) => (h.hook.to_string(), binding_name(task)),
        _ => (hook_name(task), task.kind().to_string()),
    };
    let module = task.module().map(ToString::to_string).unwrap_or_default();
    let labels = BindingLabels {
        module: &module,
        hook: &hook,
        binding: &binding,
        queue: queue.as_str(),
    };
    metrics.task_wait_in_queue(&labels, waited);
}

/// The hook a task is about (empty when none), for log fields and metric labels.
pub(super) fn hook_name(task: &Task) -> String {
    match task {
        Task::Hook(h) => h.hook.to_string(),
        Task::EnableGlobalKubernetes { hook } => hook.to_string(),
        _ => String::new(),
    }
}

/// Why the module a ModuleDelete removed was disabled, when its `enabled` script said why.
fn disabled_reason<'a>(st: &'a State, task: &Task) -> Option<&'a str> {
    match task {
        Task::ModuleDelete { module } => st.disabled_reasons.get(module).map(String::as_str),
        _ => None,
    }
}

fn apply(
    shared: &Shared,
    queue: &QueueName,
    id: TaskId,
    task: &Task,
    outcome: Outcome,
    elapsed: Duration,
) {
    let now = shared.now();
    let mut st = shared.lock();
    let Ok(q) = st.queues.get_mut(queue) else {
        return;
    };
    match outcome {
        Outcome::Done { head, tail } => {
            let started = std::time::Instant::now();
            q.complete(id);
            let metrics = &shared.metrics;
            metrics.queue_action(queue.as_str(), "RemoveFirst", started.elapsed());
            let (started, count) = (std::time::Instant::now(), head.len());
            q.push_front_all(head);
            let added: Vec<TaskId> = q.iter().take(count).map(|t| t.id).collect();
            if count > 0 {
                metrics.queue_action(queue.as_str(), "AddFirst", started.elapsed());
            }
            let queued = added.into_iter().map(|id| ((queue.clone(), id), now));
            st.queued_at.extend(queued);
            let duration_ms = elapsed.as_millis() as u64;
            match disabled_reason(&st, task) {
                Some(reason) => {
                    tracing::info!(task = %task.description(), duration_ms, reason, "task done")
                }
                None => tracing::info!(task = %task.description(), duration_ms, "task done"),
            }
            super::admin::task_done(shared, task);
            for (name, t) in tail {
                shared.push(&mut st, &name, t);
            }
        }
        Outcome::Failed(error) => {
            let failure = error.to_failure();
            let (kind, message) = (failure.kind, failure.message.clone());
            (shared.metrics).task_failure(queue.as_str(), kind.as_str());
            if let Task::EnableGlobalKubernetes { hook } = task {
                let file = hook.as_str().rsplit('/').next().unwrap_or_default();
                (shared.metrics).global_bindings_start_failed(file, queue.as_str());
            }
            let retry_at = q.fail(id, now, failure);
            st.queued_at.insert((queue.clone(), id), now);
            let delay = retry_at
                .map(|at| at.saturating_sub(now))
                .unwrap_or_default();
            super::admin::task_failed(shared, task, &message, delay);
            tracing::error!(
                task = %task.description(),
                error = %message,
                error.kind = kind.as_str(),
                retry_in_s = delay.as_secs_f64(),
                duration_ms = elapsed.as_millis() as u64,
                "task failed; it stays at the head of its queue and is retried"
            );
            st.record(|| format!("failed {}", task.description()));
        }
    }
    shared.notify.notify_waiters();
}
