//! Task queues as pure data: a FIFO with one head for one worker, retry backoff on failure, combining
//! of consecutive tasks, and text/JSON dumps. Time is passed in as a `Duration` since an epoch of
//! the caller's choosing (the runtime uses the elapsed time of a `tokio::time::Instant`).

mod backoff;
mod dump;
mod rate;
mod set;

use std::collections::VecDeque;
use std::time::Duration;

pub use backoff::Backoff;
pub use dump::{QueueDump, QueueListDump, TaskDump};
pub use rate::RateLimit;
pub use set::{QueueError, QueueSet};

use crate::error::Failure;
use crate::names::QueueName;

/// How many waiting tasks a new task may pass to join an earlier run of its hook
/// (`TaskQueue::push_back_or_join_back`): a bound on the work of one push.
pub const JOIN_LOOK_BACK: usize = 1024;

/// Task slots a queue keeps whatever its length (see `TaskQueue::release_spare`).
const SPARE_SLOTS: usize = 64;

/// What a queue needs to know about its tasks.
pub trait QueueTask {
    /// One line for queue dumps, upstream style:
    /// `<TaskType>:<queue>:<bindingType>:<hookName>[:group=<g>][:<binding>]`.
    fn description(&self) -> String;
}

/// Identifies a task inside its queue for as long as it is queued.
pub type TaskId = u64;

/// A task with its failure history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedTask<T> {
    pub id: TaskId,
    pub task: T,
    /// Failed attempts so far.
    pub failures: u32,
    /// Not to be started before this time (set after a failure).
    pub retry_at: Option<Duration>,
    /// The backoff delay that produced `retry_at`.
    pub retry_delay: Duration,
    /// The last failed attempt: its kind and message.
    pub last_failure: Option<Failure>,
}

impl<T> QueuedTask<T> {
    fn new(id: TaskId, task: T) -> Self {
        Self {
            id,
            task,
            failures: 0,
            retry_at: None,
            retry_delay: Duration::ZERO,
            last_failure: None,
        }
    }
}

impl<T: QueueTask> QueuedTask<T> {
    /// The task's description plus `:failures N[:<message>]` once it failed.
    pub fn description(&self) -> String {
        let mut text = self.task.description();
        if self.failures > 0 {
            text.push_str(&format!(":failures {}", self.failures));
            let message = self.last_failure.as_ref().map(|f| f.message.as_str());
            if let Some(error) = message.filter(|error| !error.is_empty()) {
                text.push(':');
                text.push_str(error);
            }
        }
        text
    }
}

/// A FIFO queue processed by one worker: the head runs until it succeeds.
///
/// The worker takes the head with [`TaskQueue::start_head`], runs it without holding the queue,
/// then reports by id ([`TaskQueue::complete`] or [`TaskQueue::fail`]): tasks may have been put in
/// front of it meanwhile.
#[derive(Debug, Clone)]
pub struct TaskQueue<T> {
    name: QueueName,
    backoff: Backoff,
    tasks: VecDeque<QueuedTask<T>>,
    next_id: TaskId,
    running: Option<TaskId>,
}

impl<T> TaskQueue<T> {
    pub fn new(name: QueueName, backoff: Backoff) -> Self {
        Self {
            name,
            backoff,
            tasks: VecDeque::new(),
            next_id: 1,
            running: None,
        }
    }

    pub fn name(&self) -> &QueueName {
        &self.name
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &QueuedTask<T>> {
        self.tasks.iter()
    }

    fn wrap(&mut self, task: T) -> QueuedTask<T> {
        let id = self.next_id;
        self.next_id += 1;
        QueuedTask::new(id, task)
    }

    /// Appends a task at the tail.
    pub fn push_back(&mut self, task: T) -> TaskId {
        let queued = self.wrap(task);
        let id = queued.id;
        self.tasks.push_back(queued);
        id
    }

    /// Appends a task at the tail, or lets `join` merge it into the tail when the tail is waiting
    /// (not running): `join` gives the task back when it does not merge. Returns the id of a
    /// task appended, `None` when it joined the tail.
    pub fn push_back_or_join(
        &mut self,
        task: T,
        join: impl FnOnce(&mut T, T) -> Option<T>,
    ) -> Option<TaskId> {
        let running = self.running;
        let task = match self.tasks.back_mut() {
            Some(tail) if Some(tail.id) != running => join(&mut tail.task, task),
            _ => Some(task),
        };
        task.map(|task| self.push_back(task))
    }

    /// Like [`TaskQueue::push_back_or_join`], but looks back from the tail: it offers the task
    /// to each waiting task in turn, passing those that `passable` allows (at most
    /// [`JOIN_LOOK_BACK`] of them), and stops at the running head or at a task it may not pass.
    /// `join` gives the task back when it does not merge. This is the Go operator's queue
    /// compaction done when a task is queued: a hook's new event joins its waiting run even
    /// when runs of other hooks were queued after it.
    pub fn push_back_or_join_back(
        &mut self,
        task: T,
        passable: impl Fn(&T, &T) -> bool,
        mut join: impl FnMut(&mut T, T) -> Option<T>,
    ) -> Option<TaskId> {
        let running = self.running;
        let mut task = task;
        for queued in self.tasks.iter_mut().rev().take(JOIN_LOOK_BACK) {
            if Some(queued.id) == running {
                break;
            }
            match join(&mut queued.task, task) {
                None => return None,
                Some(back) => task = back,
            }
            if !passable(&queued.task, &task) {
                break;
            }
        }
        Some(self.push_back(task))
    }

    /// Puts a task at the head, before the current head.
    pub fn push_front(&mut self, task: T) -> TaskId {
        let queued = self.wrap(task);
        let id = queued.id;
        self.tasks.push_front(queued);
        id
    }

    /// Puts tasks at the head keeping their order (`[a, b]` → `a, b, <old head>, ...`).
    pub fn push_front_all(&mut self, tasks: impl IntoIterator<Item = T>) {
        let tasks: Vec<T> = tasks.into_iter().collect();
        for task in tasks.into_iter().rev() {
            self.push_front(task);
        }
    }

    /// Puts tasks right after the task `id` (upstream's "after" tasks), or at the head when it
    /// is gone.
    pub fn insert_after(&mut self, id: TaskId, tasks: impl IntoIterator<Item = T>) {
        let first = self.position(id).map_or(0, |index| index + 1);
        for (at, task) in (first..).zip(tasks) {
            let queued = self.wrap(task);
            self.tasks.insert(at, queued);
        }
    }

    fn position(&self, id: TaskId) -> Option<usize> {
        self.tasks.iter().position(|queued| queued.id == id)
    }

    /// The head, whether or not it may run now.
    pub fn peek(&self) -> Option<&QueuedTask<T>> {
        self.tasks.front()
    }

    /// The head, to merge combined binding contexts into it.
    pub fn peek_mut(&mut self) -> Option<&mut QueuedTask<T>> {
        self.tasks.front_mut()
    }

    /// The task `id`, for example to merge combined binding contexts into it.
    pub fn get_mut(&mut self, id: TaskId) -> Option<&mut QueuedTask<T>> {
        self.tasks.iter_mut().find(|queued| queued.id == id)
    }

    /// The head if its retry time has come.
    pub fn ready_head(&self, now: Duration) -> Option<&QueuedTask<T>> {
        self.tasks
            .front()
            .filter(|head| head.retry_at.is_none_or(|at| at <= now))
    }

    /// When the head may run: `None` for an empty queue, a time ≤ now when it may run already.
    pub fn next_ready_at(&self) -> Option<Duration> {
        self.tasks
            .front()
            .map(|head| head.retry_at.unwrap_or(Duration::ZERO))
    }

    /// Marks the head as being run by the worker (shown in dumps, spared by `remove_where`).
    pub fn start_head(&mut self) -> Option<&QueuedTask<T>> {
        self.running = self.tasks.front().map(|head| head.id);
        self.tasks.front()
    }

    /// The task being run, if any.
    pub fn running(&self) -> Option<TaskId> {
        self.running
    }

    /// Removes the task `id` after it succeeded (or failed with `allowFailure`).
    pub fn complete(&mut self, id: TaskId) -> Option<T> {
        if self.running == Some(id) {
            self.running = None;
        }
        let index = self.position(id)?;
        let task = self.tasks.remove(index).map(|queued| queued.task);
        self.release_spare();
        task
    }

    /// Gives back most of the room a burst of tasks left once the queue is down to a quarter of
    /// it: a queue that held thousands of watch events would otherwise keep their slots for good.
    fn release_spare(&mut self) {
        let capacity = self.tasks.capacity();
        if capacity > SPARE_SLOTS && self.tasks.len() * 4 < capacity {
            self.tasks
                .shrink_to((self.tasks.len() * 2).max(SPARE_SLOTS));
        }
    }

    /// Removes the head (a queue without concurrent head insertions).
    pub fn pop(&mut self) -> Option<T> {
        let id = self.tasks.front()?.id;
        self.complete(id)
    }

    /// The task `id` failed at `now`: it stays in place and may run again at the returned time.
    pub fn fail(&mut self, id: TaskId, now: Duration, failure: Failure) -> Option<Duration> {
        if self.running == Some(id) {
            self.running = None;
        }
        let backoff = self.backoff;
        let task = self.get_mut(id)?;
        task.failures = task.failures.saturating_add(1);
        task.retry_delay = backoff.delay(task.failures);
        let retry_at = now.saturating_add(task.retry_delay);
        task.retry_at = Some(retry_at);
        task.last_failure = Some(failure);
        Some(retry_at)
    }

    /// The head failed at `now` (a queue without concurrent head insertions).
    pub fn fail_head(&mut self, now: Duration, failure: Failure) -> Option<Duration> {
        let id = self.tasks.front()?.id;
        self.fail(id, now, failure)
    }

    /// Lets the head run at once, keeping its failure count (a config change put at the head).
    pub fn cancel_head_delay(&mut self) {
        if let Some(head) = self.tasks.front_mut() {
            head.retry_at = None;
        }
    }

    /// Removes and returns the consecutive tasks right after the head for which
    /// `same_run(head, task)` holds, for the caller to merge into the head (binding context
    /// combining). The head itself stays, so a failed combined run is retried as a whole.
    pub fn take_followers(&mut self, mut same_run: impl FnMut(&T, &T) -> bool) -> Vec<T> {
        let Some(head) = self.tasks.front() else {
            return Vec::new();
        };
        let count = self
            .tasks
            .iter()
            .skip(1)
            .take_while(|queued| {
                queued.failures == 0
                    && Some(queued.id) != self.running
                    && same_run(&head.task, &queued.task)
            })
            .count();
        let followers = self
            .tasks
            .drain(1..=count)
            .map(|queued| queued.task)
            .collect();
        self.release_spare();
        followers
    }

    /// Removes every task except the running one for which `remove` holds (for example the
    /// tasks of a module being deleted), returning them in queue order.
    pub fn remove_where(&mut self, mut remove: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut kept = VecDeque::with_capacity(self.tasks.len());
        let mut removed = Vec::new();
        for queued in self.tasks.drain(..) {
            if Some(queued.id) != self.running && remove(&queued.task) {
                removed.push(queued.task);
            } else {
                kept.push_back(queued);
            }
        }
        self.tasks = kept;
        removed
    }

    /// The status line of dumps, upstream wording.
    pub fn status(&self, now: Duration) -> String {
        match self.tasks.front() {
            None => String::new(),
            Some(_) if self.running.is_some() => "run first task".to_string(),
            Some(head) => match head.retry_at {
                Some(at) if at > now => format!(
                    "sleep after fail for {} ({} left of {} delay)",
                    seconds(head.retry_delay),
                    seconds(at - now),
                    seconds(head.retry_delay)
                ),
                _ => String::new(),
            },
        }
    }
}

/// `6.4s`, `30s`: seconds with at most one decimal.
fn seconds(duration: Duration) -> String {
    let tenths = duration.as_millis().div_ceil(100);
    if tenths.is_multiple_of(10) {
        format!("{}s", tenths / 10)
    } else {
        format!("{}.{}s", tenths / 10, tenths % 10)
    }
}

#[cfg(test)]
mod tests;
