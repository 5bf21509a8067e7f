//! Unit tests of the task queue with explicit times.

use super::*;
use std::time::Duration;

use crate::error::{Failure, FailureKind};

fn hook_failure(message: &str) -> Failure {
    Failure::new(FailureKind::Hook, message)
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Task {
    hook: &'static str,
    binding: &'static str,
}

impl QueueTask for Task {
    fn description(&self) -> String {
        format!("HookRun:main:kubernetes:{}:{}", self.hook, self.binding)
    }
}

fn task(hook: &'static str, binding: &'static str) -> Task {
    Task { hook, binding }
}

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

fn queue() -> TaskQueue<Task> {
    TaskQueue::new(QueueName::main(), Backoff::default())
}

fn hooks(queue: &TaskQueue<Task>) -> Vec<&'static str> {
    queue.iter().map(|queued| queued.task.hook).collect()
}

#[test]
fn tasks_leave_the_queue_in_fifo_order() {
    let mut queue = queue();
    queue.push_back(task("a", "x"));
    queue.push_back(task("b", "x"));
    assert_eq!(queue.pop().map(|task| task.hook), Some("a"));
    assert_eq!(queue.pop().map(|task| task.hook), Some("b"));
    assert_eq!(queue.pop(), None);
}

#[test]
fn head_tasks_keep_their_order_before_the_old_head() {
    let mut queue = queue();
    queue.push_back(task("tail", "x"));
    queue.push_front(task("c", "x"));
    queue.push_front_all([task("a", "x"), task("b", "x")]);
    assert_eq!(hooks(&queue), ["a", "b", "c", "tail"]);
}

#[test]
fn default_backoff_grows_from_5_to_30_seconds() {
    let backoff = Backoff::default();
    let delays: Vec<u64> = (1..=6).map(|n| backoff.delay(n).as_secs()).collect();
    assert_eq!(delays, [5, 10, 20, 30, 30, 30]);
    assert_eq!(backoff.delay(u32::MAX), secs(30));
}

#[test]
fn backoff_is_configurable_for_fast_tests() {
    let backoff = Backoff {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(50),
        factor: 3,
    };
    let delays: Vec<u128> = (1..=4).map(|n| backoff.delay(n).as_millis()).collect();
    assert_eq!(delays, [10, 30, 50, 50]);
}

#[test]
fn a_failed_head_stays_and_waits_for_its_retry_time() {
    let mut queue = queue();
    queue.push_back(task("a", "x"));
    queue.push_back(task("b", "x"));
    assert_eq!(
        queue.fail_head(secs(100), hook_failure("boom")),
        Some(secs(105))
    );
    assert_eq!(queue.ready_head(secs(104)), None);
    assert_eq!(queue.next_ready_at(), Some(secs(105)));
    let head = queue.ready_head(secs(105)).unwrap();
    assert_eq!((head.task.hook, head.failures), ("a", 1));
    assert_eq!(
        queue.fail_head(secs(105), hook_failure("boom")),
        Some(secs(115))
    );
    assert_eq!(
        queue.fail_head(secs(115), hook_failure("boom")),
        Some(secs(135))
    );
    assert_eq!(
        queue.fail_head(secs(135), hook_failure("boom")),
        Some(secs(165))
    );
    assert_eq!(
        queue.fail_head(secs(165), hook_failure("boom")),
        Some(secs(195))
    );
    assert_eq!(hooks(&queue), ["a", "b"]);
}

#[test]
fn a_fresh_head_is_ready_at_once() {
    let mut queue = queue();
    assert_eq!(queue.next_ready_at(), None);
    queue.push_back(task("a", "x"));
    assert_eq!(queue.next_ready_at(), Some(Duration::ZERO));
    assert!(queue.ready_head(Duration::ZERO).is_some());
}

#[test]
fn cancelling_the_head_delay_keeps_its_failure_count() {
    let mut queue = queue();
    queue.push_back(task("a", "x"));
    queue.fail_head(secs(0), hook_failure("boom"));
    queue.cancel_head_delay();
    let head = queue.ready_head(secs(1)).unwrap();
    assert_eq!(head.failures, 1);
}

#[test]
fn consecutive_tasks_of_the_head_hook_are_taken_for_combining() {
    let mut queue = queue();
    for (hook, binding) in [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1"), ("a", "4")] {
        queue.push_back(task(hook, binding));
    }
    let followers = queue.take_followers(|head, other| head.hook == other.hook);
    assert_eq!(
        followers
            .iter()
            .map(|task| task.binding)
            .collect::<Vec<_>>(),
        ["2", "3"]
    );
    assert_eq!(hooks(&queue), ["a", "b", "a"]);
    assert_eq!(queue.peek().unwrap().task.binding, "1");
}

#[test]
fn combining_an_empty_queue_takes_nothing() {
    let mut queue = queue();
    assert!(queue.take_followers(|_, _| true).is_empty());
    queue.push_back(task("a", "1"));
    assert!(queue.take_followers(|_, _| true).is_empty());
    assert_eq!(queue.len(), 1);
}

#[test]
fn removing_tasks_spares_the_running_head() {
    let mut queue = queue();
    for (hook, binding) in [("a", "1"), ("b", "1"), ("a", "2")] {
        queue.push_back(task(hook, binding));
    }
    queue.start_head();
    let removed = queue.remove_where(|task| task.hook == "a");
    assert_eq!(removed, [task("a", "2")]);
    assert_eq!(hooks(&queue), ["a", "b"]);
}

#[test]
fn a_queue_dump_shows_status_failures_and_retry_time() {
    let mut queue = queue();
    queue.push_back(task("pods-hook.sh", "monitor-pods"));
    queue.push_back(task("pods-hook.sh", "every-minute"));
    queue.fail_head(secs(10), hook_failure("exit status 1"));
    let dump = queue.dump(secs(12));
    assert_eq!(
        dump.to_text(),
        "Queue 'main': length 2, status: 'sleep after fail for 5s (3s left of 5s delay)'\n\n \
         1. HookRun:main:kubernetes:pods-hook.sh:monitor-pods:failures 1:exit status 1\n \
         2. HookRun:main:kubernetes:pods-hook.sh:every-minute\n"
    );
    let json = serde_json::to_value(&dump).unwrap();
    assert_eq!(json["tasks"][0]["failures"], 1);
    assert_eq!(json["tasks"][0]["retryInSeconds"], 3.0);
    assert_eq!(json["tasks"][1].get("failures"), None);
    queue.start_head();
    assert_eq!(queue.status(secs(20)), "run first task");
}

#[test]
fn a_queue_list_dump_matches_the_upstream_shapes() {
    let mut set: QueueSet<Task> = QueueSet::new(Backoff::default());
    for name in ["q1", "q2", "q3"] {
        set.ensure(QueueName::new(name).unwrap());
    }
    let main = QueueName::main();
    set.push_back(&main, task("pods-hook.sh", "monitor-pods"))
        .unwrap();
    set.push_back(&main, task("pods-hook.sh", "every-minute"))
        .unwrap();
    let q2 = QueueName::new("q2").unwrap();
    for _ in 0..5 {
        set.push_back(&q2, task("h", "b")).unwrap();
    }
    set.get_mut(&main).unwrap().start_head();
    let dump = set.dump(secs(0), true);
    let text = dump.to_text();
    assert!(text.starts_with(
        "Queue 'main': length 2, status: 'run first task'\n\n \
         1. HookRun:main:kubernetes:pods-hook.sh:monitor-pods\n"
    ));
    assert!(text.ends_with(
        "Empty queues (2):\n- q1\n- q3\n\nSummary:\n- 'main' queue: 2 tasks.\n\
         - 3 other queues (1 active, 2 empty): 5 tasks.\n- total 7 tasks to handle.\n"
    ));
    let json = dump.to_json();
    assert_eq!(json["active"][0]["name"], "main");
    assert_eq!(json["active"][0]["tasksCount"], 2);
    assert_eq!(json["active"][0]["status"], "run first task");
    assert_eq!(
        json["active"][0]["tasks"][0],
        serde_json::json!({"index": 1, "description": "HookRun:main:kubernetes:pods-hook.sh:monitor-pods"})
    );
    assert_eq!(
        json["empty"][0],
        serde_json::json!({"name": "q1", "tasksCount": 0})
    );
    assert_eq!(
        json["summary"],
        serde_json::json!({"mainQueueTasks": 2, "otherQueues": {"active": 1, "empty": 2, "tasks": 5}, "totalTasks": 7})
    );
    assert_eq!(set.dump(secs(0), false).to_json().get("empty"), None);
}

#[test]
fn an_idle_queue_list_says_there_is_nothing_to_handle() {
    let set: QueueSet<Task> = QueueSet::new(Backoff::default());
    assert_eq!(
        set.dump(secs(0), false).to_text(),
        "Summary:\n- 'main' queue: 0 tasks.\n- 0 other queues (0 active, 0 empty): 0 tasks.\n\
         - no tasks to handle.\n"
    );
}

#[test]
fn pushing_to_an_unknown_queue_is_an_error() {
    let mut set: QueueSet<Task> = QueueSet::new(Backoff::default());
    let error = set
        .push_back(&QueueName::new("nope").unwrap(), task("a", "b"))
        .unwrap_err();
    assert_eq!(error.to_string(), "queue 'nope' is not created");
    assert_eq!(set.total_len(), 0);
}

#[test]
fn a_task_put_in_front_of_the_running_head_does_not_steal_its_result() {
    let mut queue = queue();
    queue.push_back(task("a", "x"));
    let running = queue.start_head().unwrap().id;
    queue.push_front(task("config", "x"));
    assert_eq!(
        queue.fail(running, secs(0), hook_failure("boom")),
        Some(secs(5))
    );
    assert_eq!(hooks(&queue), ["config", "a"]);
    assert_eq!(queue.peek().unwrap().failures, 0);
    assert_eq!(queue.complete(running), Some(task("a", "x")));
    assert_eq!(hooks(&queue), ["config"]);
}

#[test]
fn after_tasks_follow_the_task_that_created_them() {
    let mut queue = queue();
    let first = queue.push_back(task("a", "x"));
    queue.push_back(task("tail", "x"));
    queue.insert_after(first, [task("b", "x"), task("c", "x")]);
    assert_eq!(hooks(&queue), ["a", "b", "c", "tail"]);
    queue.complete(first);
    queue.insert_after(first, [task("d", "x")]);
    assert_eq!(hooks(&queue), ["d", "b", "c", "tail"]);
}

#[test]
fn task_ids_are_unique_within_a_queue() {
    let mut queue = queue();
    let ids = [
        queue.push_back(task("a", "x")),
        queue.push_front(task("b", "x")),
    ];
    assert_ne!(ids[0], ids[1]);
    assert_eq!(queue.get_mut(ids[1]).unwrap().task.hook, "b");
}

#[test]
fn a_failed_task_keeps_the_kind_and_message_of_its_last_failure() {
    let mut queue = queue();
    queue.push_back(task("a", "1"));
    queue.fail_head(secs(0), Failure::new(FailureKind::Hook, "exit status 1"));
    queue.fail_head(secs(5), Failure::new(FailureKind::Helm, "upgrade failed"));
    let head = queue.peek().unwrap();
    assert_eq!(
        head.last_failure,
        Some(Failure::new(FailureKind::Helm, "upgrade failed"))
    );
    assert!(head.description().ends_with(":failures 2:upgrade failed"));
}

#[test]
fn a_queue_gives_back_the_room_of_a_burst_once_it_drains() {
    let mut q = queue();
    for _ in 0..10_000 {
        q.push_back(task("h", "b"));
    }
    let burst = q.tasks.capacity();
    assert!(burst >= 10_000);
    while q.len() > 10 {
        q.pop();
    }
    assert!(q.tasks.capacity() <= SPARE_SLOTS, "{}", q.tasks.capacity());
    for _ in 0..5_000 {
        q.push_back(task("h", "b"));
    }
    let followers = q.take_followers(|_, _| true);
    assert_eq!((followers.len(), q.len()), (5_009, 1));
    assert!(q.tasks.capacity() <= SPARE_SLOTS, "{}", q.tasks.capacity());
    assert_eq!(hooks(&q), ["h"]);
}

#[test]
fn a_task_joins_a_waiting_tail_but_never_the_running_head() {
    let mut queue = queue();
    let join_same_hook = |tail: &mut Task, new: Task| {
        if tail.hook == new.hook {
            tail.binding = "joined";
            None
        } else {
            Some(new)
        }
    };
    queue.push_back(task("a", "x"));
    queue.start_head();
    // the running head takes nothing more: the event runs after it
    assert!(
        queue
            .push_back_or_join(task("a", "y"), join_same_hook)
            .is_some()
    );
    assert!(
        queue
            .push_back_or_join(task("a", "z"), join_same_hook)
            .is_none()
    );
    assert!(
        queue
            .push_back_or_join(task("b", "x"), join_same_hook)
            .is_some()
    );
    let tasks: Vec<(&str, &str)> = queue
        .iter()
        .map(|q| (q.task.hook, q.task.binding))
        .collect();
    assert_eq!(tasks, [("a", "x"), ("a", "joined"), ("b", "x")]);
}

#[test]
fn a_task_joins_the_last_waiting_run_of_its_hook_past_runs_of_other_hooks() {
    let mut queue = queue();
    let join_same_hook = |queued: &mut Task, new: Task| {
        if queued.hook == new.hook {
            queued.binding = "joined";
            None
        } else {
            Some(new)
        }
    };
    let other_hooks = |queued: &Task, new: &Task| queued.hook != new.hook && queued.hook != "stop";
    queue.push_back(task("a", "x"));
    queue.start_head();
    queue.push_back(task("a", "y"));
    queue.push_back(task("b", "x"));
    queue.push_back(task("c", "x"));
    // "a" passes "c" and "b" and joins the waiting run of "a", never the running head
    assert!(
        queue
            .push_back_or_join_back(task("a", "z"), other_hooks, join_same_hook)
            .is_none()
    );
    // a task it may not pass stops the search: the new run goes to the tail
    queue.push_back(task("stop", "x"));
    assert!(
        queue
            .push_back_or_join_back(task("b", "y"), other_hooks, join_same_hook)
            .is_some()
    );
    let tasks: Vec<(&str, &str)> = queue
        .iter()
        .map(|q| (q.task.hook, q.task.binding))
        .collect();
    assert_eq!(
        tasks,
        [
            ("a", "x"),
            ("a", "joined"),
            ("b", "x"),
            ("c", "x"),
            ("stop", "x"),
            ("b", "y")
        ]
    );
}
