//! The fight guard: a field restored too often within a window is left alone for a while, so
//! the operator and another controller that both write it do not loop.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Fields one guard tracks, at most; the oldest are forgotten first.
const MAX_TRACKED: usize = 1024;

/// What to do about a drifted field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Write it back.
    Restore,
    /// This restore would be one too many: stop enforcing it until `until` (say so once).
    BackOff { until: Instant },
    /// Backing off already: leave it.
    Paused,
}

/// Restores per field within a window; time is passed in.
#[derive(Debug, Clone)]
pub struct FightGuard {
    limit: usize,
    window: Duration,
    pause: Duration,
    fields: HashMap<String, Field>,
}

#[derive(Debug, Clone, Default)]
struct Field {
    restores: VecDeque<Instant>,
    paused_until: Option<Instant>,
}

impl FightGuard {
    /// At most `limit` restores of one field within `window`; the next is refused and the
    /// field is left alone for `pause`.
    pub fn new(limit: usize, window: Duration, pause: Duration) -> Self {
        Self {
            limit: limit.max(1),
            window,
            pause,
            fields: HashMap::new(),
        }
    }

    /// Decides about restoring `field` (an object's identity and JSON pointer) at `now`, and
    /// counts the restore when the answer is [`Verdict::Restore`].
    pub fn check(&mut self, field: &str, now: Instant) -> Verdict {
        if !self.fields.contains_key(field) && self.fields.len() >= MAX_TRACKED {
            self.forget_oldest();
        }
        let state = self.fields.entry(field.to_string()).or_default();
        if let Some(until) = state.paused_until {
            if now < until {
                return Verdict::Paused;
            }
            state.paused_until = None;
            state.restores.clear();
        }
        while state
            .restores
            .front()
            .is_some_and(|at| now.saturating_duration_since(*at) >= self.window)
        {
            state.restores.pop_front();
        }
        if state.restores.len() >= self.limit {
            let until = now.checked_add(self.pause).unwrap_or(now);
            state.paused_until = Some(until);
            return Verdict::BackOff { until };
        }
        state.restores.push_back(now);
        Verdict::Restore
    }

    fn forget_oldest(&mut self) {
        let oldest = self
            .fields
            .iter()
            .min_by_key(|(_, f)| f.restores.back().copied())
            .map(|(k, _)| k.clone());
        if let Some(key) = oldest {
            self.fields.remove(&key);
        }
    }
}
