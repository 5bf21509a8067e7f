//! The per-hook execution rate limit of `settings` (`executionMinInterval`, `executionBurst`): a
//! token bucket, as shell-operator's `rate.Limiter`, with time passed in.

use std::time::Duration;

use crate::hook_config::HookSettings;

/// A token bucket holding at most `burst` runs, refilled with one run per `interval`.
///
/// Kept as the theoretical time at which the bucket is full again (GCRA), so that it needs no
/// floating point and no timer: a run may start at `now` when `full_at - now` is at most
/// `(burst - 1) * interval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    interval: Duration,
    burst: u32,
    full_at: Duration,
}

impl RateLimit {
    /// The limit of a hook's settings; `None` when the hook is not limited (no
    /// `executionMinInterval`, as upstream where the rate is infinite then).
    pub fn from_settings(settings: &HookSettings) -> Option<Self> {
        if settings.execution_min_interval.is_zero() {
            return None;
        }
        Some(Self {
            interval: settings.execution_min_interval,
            burst: settings.execution_burst.max(1),
            full_at: Duration::ZERO,
        })
    }

    /// The earliest time the next run may start (in the past when it may start now).
    pub fn ready_at(&self) -> Duration {
        let tolerance = self.interval.saturating_mul(self.burst - 1);
        self.full_at.saturating_sub(tolerance)
    }

    /// Whether a run may start at `now`.
    pub fn is_ready(&self, now: Duration) -> bool {
        self.ready_at() <= now
    }

    /// Takes one run's token at `now` (call when the run starts).
    pub fn take(&mut self, now: Duration) {
        self.full_at = self.full_at.max(now).saturating_add(self.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(interval_ms: u64, burst: u32) -> RateLimit {
        RateLimit::from_settings(&HookSettings {
            execution_min_interval: Duration::from_millis(interval_ms),
            execution_burst: burst,
        })
        .unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_hook_without_min_interval_is_not_limited() {
        assert_eq!(RateLimit::from_settings(&HookSettings::default()), None);
    }

    #[test]
    fn burst_one_allows_one_run_per_interval() {
        let mut l = limit(1000, 1);
        assert!(l.is_ready(ms(0)));
        l.take(ms(0));
        assert!(!l.is_ready(ms(999)));
        assert_eq!(l.ready_at(), ms(1000));
        assert!(l.is_ready(ms(1000)));
        l.take(ms(1000));
        assert_eq!(l.ready_at(), ms(2000));
    }

    #[test]
    fn a_full_bucket_allows_burst_runs_at_once_then_one_per_interval() {
        let mut l = limit(1000, 3);
        for _ in 0..3 {
            assert!(l.is_ready(ms(5000)));
            l.take(ms(5000));
        }
        assert!(!l.is_ready(ms(5000)));
        assert_eq!(l.ready_at(), ms(6000));
        l.take(ms(6000));
        assert_eq!(l.ready_at(), ms(7000));
    }

    #[test]
    fn an_idle_bucket_refills_but_never_beyond_burst() {
        let mut l = limit(1000, 2);
        l.take(ms(0));
        l.take(ms(0));
        // a long pause refills two tokens, not more
        assert!(l.is_ready(ms(60_000)));
        l.take(ms(60_000));
        l.take(ms(60_000));
        assert_eq!(l.ready_at(), ms(61_000));
    }
}
