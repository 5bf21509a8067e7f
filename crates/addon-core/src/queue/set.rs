//! The named queues of the operator: `main` plus one per `queue:` of a binding.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Backoff, QueueListDump, QueueTask, TaskQueue};
use crate::names::QueueName;

/// A queue operation that named a queue that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    #[error("queue '{queue}' is not created")]
    FindQueue { queue: QueueName },
}

impl QueueError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        "unknown_queue"
    }
}

/// Named queues; `main` always exists.
#[derive(Debug, Clone)]
pub struct QueueSet<T> {
    backoff: Backoff,
    queues: BTreeMap<QueueName, TaskQueue<T>>,
}

impl<T> QueueSet<T> {
    /// A set holding only `main`.
    pub fn new(backoff: Backoff) -> Self {
        let mut set = Self {
            backoff,
            queues: BTreeMap::new(),
        };
        set.ensure(QueueName::main());
        set
    }

    /// Creates the queue unless it exists.
    pub fn ensure(&mut self, name: QueueName) -> &mut TaskQueue<T> {
        let backoff = self.backoff;
        self.queues
            .entry(name.clone())
            .or_insert_with(|| TaskQueue::new(name, backoff))
    }

    pub fn get(&self, name: &QueueName) -> Option<&TaskQueue<T>> {
        self.queues.get(name)
    }

    pub fn get_mut(&mut self, name: &QueueName) -> Result<&mut TaskQueue<T>, QueueError> {
        self.queues
            .get_mut(name)
            .ok_or_else(|| QueueError::FindQueue {
                queue: name.clone(),
            })
    }

    /// `main` first, then the others by name.
    pub fn iter(&self) -> impl Iterator<Item = &TaskQueue<T>> {
        let main = self.queues.iter().filter(|(name, _)| name.is_main());
        let others = self.queues.iter().filter(|(name, _)| !name.is_main());
        main.chain(others).map(|(_, queue)| queue)
    }

    /// Appends a task to a queue that must exist.
    pub fn push_back(&mut self, queue: &QueueName, task: T) -> Result<(), QueueError> {
        self.get_mut(queue)?.push_back(task);
        Ok(())
    }

    /// Tasks in all queues.
    pub fn total_len(&self) -> usize {
        self.queues.values().map(TaskQueue::len).sum()
    }
}

impl<T: QueueTask> QueueSet<T> {
    /// The dump of `queue list`; `show_empty` lists the empty queues too.
    pub fn dump(&self, now: Duration, show_empty: bool) -> QueueListDump {
        QueueListDump::new(
            self.iter().map(|queue| queue.dump(now)).collect(),
            show_empty,
        )
    }
}
