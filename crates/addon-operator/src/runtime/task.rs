//! What a handler answers when it has done a task (the tasks themselves are
//! `addon_core::lifecycle`'s).

use addon_core::names::QueueName;

use super::error::TaskError;
pub use addon_core::lifecycle::{HookTask, Origin, Task};

/// What a handler answers.
#[derive(Debug)]
pub enum Outcome {
    /// Done: `head` tasks go to the head of the same queue (in order), `tail` tasks to the end of
    /// the named queues.
    Done {
        head: Vec<Task>,
        tail: Vec<(QueueName, Task)>,
    },
    /// Failed: the task stays at the head and is retried after a delay.
    Failed(TaskError),
}

impl Outcome {
    pub fn done() -> Self {
        Outcome::Done {
            head: Vec::new(),
            tail: Vec::new(),
        }
    }

    pub fn head(head: Vec<Task>) -> Self {
        Outcome::Done {
            head,
            tail: Vec::new(),
        }
    }

    pub fn tail(tail: Vec<(QueueName, Task)>) -> Self {
        Outcome::Done {
            head: Vec::new(),
            tail,
        }
    }
}
