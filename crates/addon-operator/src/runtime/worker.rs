//! One worker per queue: takes the head when it is due, combines the following runs of the same
//! hook into it, runs the handler, and applies the outcome (pop and follow-up tasks, or retry).

use std::sync::Arc;
use std::time::Duration;

use addon_core::binding_context::{combine, compact_groups};
use addon_core::names::QueueName;
use addon_core::queue::{QueueTask, TaskId};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Shared;
use super::handlers;
use super::state::State;
use super::task::{Outcome, Task};

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
            pick(&mut shared.lock(), &queue, now)
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
fn pick(st: &mut State, queue: &QueueName, now: Duration) -> Pick {
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
            if let Some(description) = description {
                st.record(|| format!("start {description}"));
            }
            Pick::Run(id, task)
        }
        None => Pick::Idle,
    }
}

/// Whether `next` may run together with `head` (binding context combining).
fn combinable(head: &Task, next: &Task) -> bool {
    match (head, next) {
        (Task::Hook(a), Task::Hook(b)) => {
            a.module == b.module
                && a.hook == b.hook
                && a.allow_failure == b.allow_failure
                && combine(&[&a.contexts, &b.contexts]).merged_tasks == 2
        }
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

fn hook_name(task: &Task) -> String {
    match task {
        Task::Hook(h) => h.hook.to_string(),
        Task::EnableGlobalKubernetes { hook } => hook.to_string(),
        _ => String::new(),
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
            q.complete(id);
            q.push_front_all(head);
            let duration_ms = elapsed.as_millis() as u64;
            tracing::info!(task = %task.description(), duration_ms, "task done");
            for (name, t) in tail {
                shared.push(&mut st, &name, t);
            }
        }
        Outcome::Failed(message) => {
            let retry_at = q.fail(id, now, message.clone());
            let delay = retry_at
                .map(|at| at.saturating_sub(now))
                .unwrap_or_default();
            tracing::error!(
                task = %task.description(),
                error = %message,
                retry_in_s = delay.as_secs_f64(),
                duration_ms = elapsed.as_millis() as u64,
                "task failed; it stays at the head of its queue and is retried"
            );
            st.record(|| format!("failed {}", task.description()));
        }
    }
    shared.notify.notify_waiters();
}
