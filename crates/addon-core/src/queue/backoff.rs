//! The delay before a failed task runs again: exponential from `initial` to `max`.

use std::time::Duration;

/// `delay(n) = min(initial * factor^(n-1), max)` for the n-th failure. The default follows the
/// seeds ("an exponentially growing delay (from 5s to 30s)"): 5 s, 10 s, 20 s, 30 s, 30 s, ...
/// Upstream's jitter is left out so that runs are reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
    pub factor: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(30),
            factor: 2,
        }
    }
}

impl Backoff {
    /// The delay after the `failures`-th failure (1 for the first).
    pub fn delay(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1);
        let multiplier = self.factor.max(1).checked_pow(exponent).unwrap_or(u32::MAX);
        self.initial
            .checked_mul(multiplier)
            .unwrap_or(self.max)
            .min(self.max)
    }
}
