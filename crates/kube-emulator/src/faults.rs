//! Fault injection for tests: drop open watches, fail the next requests; and counters of list
//! requests tests can read.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use crate::status::ApiError;

/// Switches tests flip to make the emulator misbehave.
#[derive(Debug)]
pub struct Faults {
    drops: watch::Sender<u64>,
    failures: Mutex<(u32, u16)>,
    /// List requests without `continue` (list starts), and those of them with a `limit`.
    lists: [AtomicU64; 2],
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            drops: watch::channel(0).0,
            failures: Mutex::new((0, 500)),
            lists: Default::default(),
        }
    }
}

impl Faults {
    /// Ends every open watch (clients see the stream close and re-watch).
    pub fn drop_watches(&self) {
        self.drops.send_modify(|n| *n += 1);
    }

    /// A receiver that changes whenever watches are dropped.
    pub fn drop_signal(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }

    /// Makes the next `count` API requests fail with `code` (429 answers carry `Retry-After`).
    pub fn fail_next(&self, count: u32, code: u16) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        *failures = (count, code);
    }

    /// Counts a list request (a later page, with `continue`, is not a new list).
    pub fn count_list(&self, first_page: bool, limited: bool) {
        if first_page {
            self.lists[0].fetch_add(1, Ordering::Relaxed);
            if limited {
                self.lists[1].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// (lists started, of which paged with `limit`) so far.
    pub fn lists(&self) -> (u64, u64) {
        let read = |i: usize| self.lists[i].load(Ordering::Relaxed);
        (read(0), read(1))
    }

    /// The injected failure for this request, if one is pending.
    pub fn take_failure(&self) -> Option<ApiError> {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.0 == 0 {
            return None;
        }
        failures.0 -= 1;
        Some(match failures.1 {
            429 => ApiError::TooManyRequests("injected fault: too many requests".into()),
            code => ApiError::Internal(format!("injected fault ({code})")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_consumed_one_per_request() {
        let f = Faults::default();
        f.fail_next(2, 429);
        assert_eq!(f.take_failure().unwrap().code(), 429);
        assert!(f.take_failure().is_some());
        assert!(f.take_failure().is_none());
    }
}
