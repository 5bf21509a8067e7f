//! Fault injection for tests: drop open watches, fail the next requests; and counters of list
//! requests and open watches tests can read.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::resources::ResKey;
use crate::status::ApiError;

/// Switches tests flip to make the emulator misbehave.
#[derive(Debug)]
pub struct Faults {
    drops: watch::Sender<u64>,
    failures: Mutex<(u32, u16)>,
    /// List requests without `continue` (list starts), and those of them with a `limit`.
    lists: [AtomicU64; 2],
    /// Watch streams being served now, per resource (a test's signal that a watch started).
    watches: Arc<Mutex<BTreeMap<ResKey, usize>>>,
    /// Streaming lists (watches with `sendInitialEvents`) asked for so far.
    streaming_lists: AtomicU64,
    /// Whether streaming lists are refused as a server without the `WatchList` feature does.
    refuse_streaming: AtomicBool,
    /// Whether `sendInitialEvents` is ignored (the objects sent, never the end of them), as a
    /// server that does not know the parameter would.
    ignore_streaming: AtomicBool,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            drops: watch::channel(0).0,
            failures: Mutex::new((0, 500)),
            lists: Default::default(),
            watches: Arc::default(),
            streaming_lists: AtomicU64::new(0),
            refuse_streaming: AtomicBool::new(false),
            ignore_streaming: AtomicBool::new(false),
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

    /// Counts a streaming list: `Ok(true)` to serve it, `Ok(false)` to ignore `sendInitialEvents`,
    /// or the error to answer when they are refused (as kube-apiserver before 1.27, or with the
    /// `WatchList` feature off, answers `422`).
    pub fn streaming_list(&self) -> Result<bool, ApiError> {
        self.streaming_lists.fetch_add(1, Ordering::Relaxed);
        if self.refuse_streaming.load(Ordering::Relaxed) {
            return Err(ApiError::Invalid(
                "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: \
                 sendInitialEvents is forbidden for watch unless the WatchList feature gate is \
                 enabled"
                    .into(),
            ));
        }
        Ok(!self.ignore_streaming.load(Ordering::Relaxed))
    }

    /// Streaming lists asked for so far (refused or not).
    pub fn streaming_lists(&self) -> u64 {
        self.streaming_lists.load(Ordering::Relaxed)
    }

    /// Refuses streaming lists from now on (`true`), or serves them again.
    pub fn refuse_streaming_lists(&self, refuse: bool) {
        self.refuse_streaming.store(refuse, Ordering::Relaxed);
    }

    /// Ignores `sendInitialEvents` from now on (`true`), or serves streaming lists again.
    pub fn ignore_streaming_lists(&self, ignore: bool) {
        self.ignore_streaming.store(ignore, Ordering::Relaxed);
    }

    /// Counts a watch of `key` as open until the returned guard is dropped.
    pub fn open_watch(&self, key: ResKey) -> OpenWatch {
        *lock(&self.watches).entry(key.clone()).or_default() += 1;
        OpenWatch {
            key,
            watches: Arc::clone(&self.watches),
        }
    }

    /// Watch streams of `key` being served now.
    pub fn open_watches(&self, key: &ResKey) -> usize {
        lock(&self.watches).get(key).copied().unwrap_or_default()
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

/// One open watch stream; dropping it (the stream ended) takes it off the count.
#[derive(Debug)]
pub struct OpenWatch {
    key: ResKey,
    watches: Arc<Mutex<BTreeMap<ResKey, usize>>>,
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        if let Some(n) = lock(&self.watches).get_mut(&self.key) {
            *n = n.saturating_sub(1);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

    #[test]
    fn a_watch_counts_as_open_until_its_guard_is_dropped() {
        let f = Faults::default();
        let pods = ResKey::new("", "pods");
        let first = f.open_watch(pods.clone());
        let second = f.open_watch(pods.clone());
        assert_eq!(f.open_watches(&pods), 2);
        assert_eq!(f.open_watches(&ResKey::new("", "configmaps")), 0);
        drop(first);
        assert_eq!(f.open_watches(&pods), 1);
        drop(second);
        assert_eq!(f.open_watches(&pods), 0);
    }
}
