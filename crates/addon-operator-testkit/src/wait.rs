//! Waiting in tests for something to happen: a condition polled until it holds or a deadline
//! passes, then the test fails naming what it waited for. One helper for every test, instead of
//! fixed sleeps that are too short on a busy machine and too long everywhere else.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`wait_for`] polls (real time: processes, files, sockets).
const POLL_BLOCKING: Duration = Duration::from_millis(50);

/// How often [`wait_for_async`] polls (tokio time: cheap, and free under paused time).
const POLL_ASYNC: Duration = Duration::from_millis(10);

/// Blocks the thread until `done` holds, polling every 50 ms of real time; after `limit` fails
/// the test with `what` and `context()` (say, the operator's log).
pub fn wait_for(
    what: &str,
    limit: Duration,
    mut done: impl FnMut() -> bool,
    context: impl FnOnce() -> String,
) {
    let started = Instant::now();
    while !done() {
        if started.elapsed() >= limit {
            panic!(
                "timed out after {limit:?} waiting for {what}\n{}",
                context()
            );
        }
        std::thread::sleep(POLL_BLOCKING);
    }
}

/// Awaits until `done()` resolves to true, polling every 10 ms of tokio time (under paused time
/// the clock jumps, so timers the condition depends on fire); after `limit` of tokio time fails
/// the test with `what` and `context()`.
pub async fn wait_for_async<F>(
    what: &str,
    limit: Duration,
    mut done: impl FnMut() -> F,
    context: impl FnOnce() -> String,
) where
    F: Future<Output = bool>,
{
    let started = tokio::time::Instant::now();
    while !done().await {
        if started.elapsed() >= limit {
            panic!(
                "timed out after {limit:?} waiting for {what}\n{}",
                context()
            );
        }
        tokio::time::sleep(POLL_ASYNC).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn wait_for_returns_once_the_condition_holds() {
        let polls = AtomicUsize::new(0);
        wait_for(
            "the third poll",
            Duration::from_secs(5),
            || polls.fetch_add(1, Ordering::SeqCst) == 2,
            String::new,
        );
        assert_eq!(polls.load(Ordering::SeqCst), 3);
    }

    #[test]
    #[should_panic(expected = "waiting for never\nthe log")]
    fn wait_for_fails_naming_what_it_waited_for_with_the_context() {
        wait_for(
            "never",
            Duration::from_millis(120),
            || false,
            || "the log".into(),
        );
    }

    #[tokio::test(start_paused = true)]
    async fn wait_for_async_lets_paused_time_run_until_a_timer_fired() {
        let begin = tokio::time::Instant::now();
        let fired = tokio::spawn(tokio::time::sleep(Duration::from_secs(30)));
        wait_for_async(
            "the timer",
            Duration::from_secs(60),
            || async { fired.is_finished() },
            String::new,
        )
        .await;
        assert!(begin.elapsed() >= Duration::from_secs(30));
        assert!(begin.elapsed() < Duration::from_secs(31));
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "waiting for a run")]
    async fn wait_for_async_fails_after_its_limit_of_tokio_time() {
        wait_for_async(
            "a run",
            Duration::from_secs(5),
            || async { false },
            String::new,
        )
        .await;
    }
}
