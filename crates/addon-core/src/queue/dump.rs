//! Queue dumps for the debug API and `addon-operator queue list`, in upstream's text and JSON shapes.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::{QueueTask, TaskQueue};

/// One task in a dump.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskDump {
    /// 1-based position in the queue.
    pub index: usize,
    /// Upstream description, with `:failures N:<message>` once the task failed.
    pub description: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub failures: u32,
    /// Seconds until a failed task may run again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_in_seconds: Option<f64>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// One queue in a dump.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueDump {
    pub name: String,
    pub tasks_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskDump>,
}

impl<T: QueueTask> TaskQueue<T> {
    /// The queue's state at `now`.
    pub fn dump(&self, now: Duration) -> QueueDump {
        let tasks = self
            .iter()
            .enumerate()
            .map(|(index, queued)| TaskDump {
                index: index + 1,
                description: queued.description(),
                failures: queued.failures,
                retry_in_seconds: queued
                    .retry_at
                    .filter(|at| *at > now)
                    .map(|at| (at - now).as_secs_f64()),
            })
            .collect();
        QueueDump {
            name: self.name().to_string(),
            tasks_count: self.len(),
            status: Some(self.status(now)),
            tasks,
        }
    }
}

impl QueueDump {
    /// `Queue 'main': length 2, status: 'run first task'`, a blank line, then ` 1. <task>` lines.
    pub fn to_text(&self) -> String {
        let status = self.status.as_deref().unwrap_or_default();
        let mut text = format!(
            "Queue '{}': length {}, status: '{}'\n",
            self.name, self.tasks_count, status
        );
        if !self.tasks.is_empty() {
            text.push('\n');
        }
        for task in &self.tasks {
            let _ = writeln!(text, "{:>2}. {}", task.index, task.description);
        }
        text
    }
}

/// Counts of the non-main queues.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherQueues {
    pub active: usize,
    pub empty: usize,
    pub tasks: usize,
}

/// Totals of a queue list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSummary {
    pub main_queue_tasks: usize,
    pub other_queues: OtherQueues,
    pub total_tasks: usize,
}

/// All queues: the active ones (main first), the empty ones when asked for, and a summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueListDump {
    pub active: Vec<QueueDump>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty: Option<Vec<QueueDump>>,
    pub summary: QueueSummary,
    #[serde(skip)]
    pub queue_count: usize,
}

impl QueueListDump {
    pub(super) fn new(queues: Vec<QueueDump>, show_empty: bool) -> Self {
        let queue_count = queues.len();
        let main_queue_tasks = queues
            .iter()
            .find(|queue| queue.name == crate::names::QueueName::MAIN)
            .map_or(0, |queue| queue.tasks_count);
        let total_tasks: usize = queues.iter().map(|queue| queue.tasks_count).sum();
        let (active, empty): (Vec<_>, Vec<_>) =
            queues.into_iter().partition(|queue| queue.tasks_count > 0);
        let other_active = active.iter().filter(|queue| queue.name != "main").count();
        let other_empty = empty.iter().filter(|queue| queue.name != "main").count();
        let empty = show_empty.then(|| {
            empty
                .into_iter()
                .map(|queue| QueueDump {
                    status: None,
                    tasks: Vec::new(),
                    ..queue
                })
                .collect()
        });
        let summary = QueueSummary {
            main_queue_tasks,
            other_queues: OtherQueues {
                active: other_active,
                empty: other_empty,
                tasks: total_tasks - main_queue_tasks,
            },
            total_tasks,
        };
        Self {
            active,
            empty,
            summary,
            queue_count,
        }
    }

    /// The JSON document of `/queue/list.json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The text of `/queue/list.text`.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for queue in &self.active {
            text.push_str(&queue.to_text());
            text.push('\n');
        }
        if let Some(empty) = self.empty.as_ref().filter(|empty| !empty.is_empty()) {
            let _ = writeln!(text, "Empty queues ({}):", empty.len());
            for queue in empty {
                let _ = writeln!(text, "- {}", queue.name);
            }
            text.push('\n');
        }
        text.push_str("Summary:\n");
        if self.queue_count == 0 {
            text.push_str("  No queues.\n");
            return text;
        }
        let summary = &self.summary;
        let others = &summary.other_queues;
        let _ = writeln!(text, "- 'main' queue: {} tasks.", summary.main_queue_tasks);
        let _ = writeln!(
            text,
            "- {} other queues ({} active, {} empty): {} tasks.",
            others.active + others.empty,
            others.active,
            others.empty,
            others.tasks
        );
        if summary.total_tasks == 0 {
            text.push_str("- no tasks to handle.\n");
        } else {
            let _ = writeln!(text, "- total {} tasks to handle.", summary.total_tasks);
        }
        text
    }
}
