//! What becomes of one Event before it is sent, with client-go's EventCorrelator rules: similar
//! events (same object, type, reason, source; another message) beyond [`MAX_SIMILAR`] in
//! [`SIMILAR_WINDOW`] are combined into one, identical ones update the count of the Event already
//! sent, and a token bucket per object drops bursts. Time is an input; no I/O.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Distinct messages of similar events in [`SIMILAR_WINDOW`] before they are combined.
pub const MAX_SIMILAR: usize = 10;
/// The window similar events are counted in.
pub const SIMILAR_WINDOW: Duration = Duration::from_secs(600);
/// Events an object may get at once (client-go's spam filter burst).
pub const SPAM_BURST: u32 = 25;
/// One more event per object after this long (client-go's spam filter refill).
pub const SPAM_REFILL: Duration = Duration::from_secs(300);
/// Entries each cache holds at most (client-go's LRU size); the oldest go first.
pub const MAX_ENTRIES: usize = 4096;
/// How often the counts of Events the spam filter held back are sent (one PATCH per Event).
pub const DEFERRED_FLUSH: Duration = Duration::from_secs(10);
/// The prefix of a combined Event's message (client-go's words).
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// One Event to record, as the correlator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The involved object, as one string (kind, namespace, name, uid).
    pub object: String,
    /// `Normal` or `Warning`.
    pub kind: String,
    pub reason: String,
    pub message: String,
}

/// What to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A new Event object with count 1; `key` goes to [`Correlator::created`] with its name.
    Create { key: String, message: String },
    /// The Event object made for an identical event gets this count and message.
    Patch {
        key: String,
        name: String,
        count: u32,
        message: String,
    },
    /// Out of tokens, but the Event exists: its count is sent later, at most once per
    /// [`DEFERRED_FLUSH`] (client-go would leave the count behind until the next token).
    Defer {
        key: String,
        name: String,
        count: u32,
        message: String,
    },
    /// The spam filter dropped it: a new Event object would have been made.
    Drop,
}

#[derive(Debug)]
struct Similar {
    messages: HashSet<String>,
    since: Duration,
}

#[derive(Debug)]
struct Sent {
    /// `None` until the API named the created Event.
    name: Option<String>,
    count: u32,
    at: Duration,
}

#[derive(Debug)]
struct Bucket {
    tokens: u32,
    refilled: Duration,
}

/// The correlator's caches.
#[derive(Debug, Default)]
pub struct Correlator {
    similar: HashMap<String, Similar>,
    sent: HashMap<String, Sent>,
    buckets: HashMap<String, Bucket>,
}

impl Correlator {
    /// Decides what `event` becomes at `now`. A `Create` must be followed by [`Self::created`]
    /// with the name the API gave it, so that the next identical event patches it.
    pub fn observe(&mut self, event: &Incoming, now: Duration) -> Decision {
        let (message, combined) = self.combine(event, now);
        // combined events are one Event whose message is the latest (client-go's aggregate key)
        let key = sent_key(event, if combined { COMBINED_PREFIX } else { &message });
        let sent = self.sent.entry(key.clone()).or_insert(Sent {
            name: None,
            count: 0,
            at: now,
        });
        sent.count = sent.count.saturating_add(1);
        sent.at = now;
        let (count, name) = (sent.count, sent.name.clone());
        trim(&mut self.sent, |s| s.at);
        let token = self.take_token(&event.object, now);
        match (name, token) {
            (Some(name), true) => Decision::Patch {
                key,
                name,
                count,
                message,
            },
            (Some(name), false) => Decision::Defer {
                key,
                name,
                count,
                message,
            },
            (None, true) => Decision::Create { key, message },
            (None, false) => Decision::Drop,
        }
    }

    /// The Event made for the decision with `key` is called `name`.
    pub fn created(&mut self, key: &str, name: String) {
        if let Some(sent) = self.sent.get_mut(key) {
            sent.name = Some(name);
        }
    }

    /// The Event of `key` is gone (the API said 404 to a patch): the next one is created.
    pub fn forget(&mut self, key: &str) {
        self.sent.remove(key);
    }

    /// The message `event` is sent with: its own, or the combined one once more than
    /// [`MAX_SIMILAR`] distinct messages came in the window.
    fn combine(&mut self, event: &Incoming, now: Duration) -> (String, bool) {
        let key = [&event.object, &event.kind, &event.reason].map(String::as_str);
        let similar = self.similar.entry(key.join("\u{0}")).or_insert(Similar {
            messages: HashSet::new(),
            since: now,
        });
        if now.saturating_sub(similar.since) > SIMILAR_WINDOW {
            similar.messages.clear();
            similar.since = now;
        }
        similar.messages.insert(event.message.clone());
        let combined = similar.messages.len() > MAX_SIMILAR;
        trim(&mut self.similar, |s| s.since);
        match combined {
            true => (format!("{COMBINED_PREFIX}{}", event.message), true),
            false => (event.message.clone(), false),
        }
    }

    /// The spam filter: a token of `object`'s bucket, if it has one left.
    fn take_token(&mut self, object: &str, now: Duration) -> bool {
        let bucket = (self.buckets.entry(object.to_string())).or_insert(Bucket {
            tokens: SPAM_BURST,
            refilled: now,
        });
        let periods = now.saturating_sub(bucket.refilled).as_secs() / SPAM_REFILL.as_secs();
        if periods > 0 {
            let add = u32::try_from(periods).unwrap_or(u32::MAX);
            bucket.tokens = bucket.tokens.saturating_add(add).min(SPAM_BURST);
            bucket.refilled += SPAM_REFILL * add.min(SPAM_BURST);
            if bucket.tokens == SPAM_BURST {
                bucket.refilled = now;
            }
        }
        let ok = bucket.tokens > 0;
        bucket.tokens = bucket.tokens.saturating_sub(1);
        trim(&mut self.buckets, |b| b.refilled);
        ok
    }
}

/// The identity of an Event sent: object, type, reason and the message it was sent with.
fn sent_key(event: &Incoming, message: &str) -> String {
    [event.object.as_str(), &event.kind, &event.reason, message].join("\u{0}")
}

/// Drops the oldest entries of `map` (by `at`) when it holds more than [`MAX_ENTRIES`].
fn trim<T>(map: &mut HashMap<String, T>, at: impl Fn(&T) -> Duration) {
    if map.len() <= MAX_ENTRIES {
        return;
    }
    let mut times: Vec<Duration> = map.values().map(&at).collect();
    times.sort_unstable();
    let cut = times[times.len() - MAX_ENTRIES];
    map.retain(|_, v| at(v) >= cut);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(message: &str) -> Incoming {
        Incoming {
            object: "Module//web/uid-1".into(),
            kind: "Warning".into(),
            reason: "HookFailed".into(),
            message: message.into(),
        }
    }

    /// Runs `events` at `every` apart; returns the Event objects made, as name -> (count, message).
    fn record(
        c: &mut Correlator,
        events: impl IntoIterator<Item = Incoming>,
        every: Duration,
    ) -> (HashMap<String, (u32, String)>, usize) {
        let mut objects = HashMap::new();
        let mut dropped = 0;
        for (i, event) in events.into_iter().enumerate() {
            let now = every * u32::try_from(i).unwrap();
            match c.observe(&event, now) {
                Decision::Create { key, message } => {
                    let name = format!("web.{i}");
                    c.created(&key, name.clone());
                    objects.insert(name, (1, message));
                }
                // a deferred count reaches the Event at the next flush
                Decision::Patch {
                    name,
                    count,
                    message,
                    ..
                }
                | Decision::Defer {
                    name,
                    count,
                    message,
                    ..
                } => {
                    let object = objects.get_mut(&name).unwrap();
                    *object = (count, message);
                }
                Decision::Drop => dropped += 1,
            }
        }
        (objects, dropped)
    }

    #[test]
    fn identical_failures_for_ten_minutes_update_one_event_count() {
        let mut c = Correlator::default();
        let events = (0..120).map(|_| failure("hook 'a' failed (exit status 1): boom"));
        let (objects, dropped) = record(&mut c, events, Duration::from_secs(5));
        assert_eq!(objects.len(), 1, "{objects:?}");
        let (count, _) = objects.values().next().unwrap();
        // the spam filter holds back PATCHes, not the count
        assert_eq!(*count, 120);
        assert_eq!(dropped, 0, "no new Event object was needed");
    }

    #[test]
    fn similar_events_beyond_ten_are_combined_into_one_event() {
        let mut c = Correlator::default();
        let events = (0..30).map(|i| failure(&format!("hook 'a' failed: attempt {i}")));
        let (objects, dropped) = record(&mut c, events, Duration::from_secs(1));
        assert_eq!(
            dropped, 0,
            "the 5 without a token are counted into the combined Event"
        );
        // 10 distinct messages, then one combined Event for the rest
        assert_eq!(objects.len(), 11, "{objects:?}");
        let combined: Vec<_> = (objects.values())
            .filter(|(_, m)| m.starts_with(COMBINED_PREFIX))
            .collect();
        assert_eq!(combined.len(), 1);
        assert_eq!(combined[0].0, 20, "every later similar event counted");
    }

    #[test]
    fn spam_filter_refills_one_event_per_five_minutes() {
        let mut c = Correlator::default();
        let burst = (0..30).map(|i| failure(&format!("m{i}")));
        let (objects, dropped) = record(&mut c, burst, Duration::ZERO);
        assert_eq!(
            (objects.len(), dropped),
            (11, 0),
            "10 Events and a combined one"
        );
        let new_object = Incoming {
            reason: "Other".into(),
            ..failure("x")
        };
        assert_eq!(
            c.observe(&new_object, Duration::from_secs(10)),
            Decision::Drop
        );
        let later = failure("m0");
        assert!(matches!(
            c.observe(&later, Duration::from_secs(10)),
            Decision::Defer { .. }
        ));
        assert!(matches!(
            c.observe(&later, SPAM_REFILL + Duration::from_secs(1)),
            Decision::Patch { .. }
        ));
        let other = Incoming {
            object: "Module//db/uid-2".into(),
            ..later
        };
        assert!(matches!(
            c.observe(&other, Duration::from_secs(11)),
            Decision::Create { .. }
        ));
    }

    #[test]
    fn a_forgotten_event_is_created_again() {
        let mut c = Correlator::default();
        let event = failure("x");
        let Decision::Create { key, .. } = c.observe(&event, Duration::ZERO) else {
            panic!("first is created");
        };
        c.created(&key, "web.1".into());
        c.forget(&key);
        assert!(matches!(
            c.observe(&event, Duration::from_secs(1)),
            Decision::Create { .. }
        ));
    }

    #[test]
    fn caches_stay_bounded() {
        let mut c = Correlator::default();
        for i in 0..(MAX_ENTRIES + 100) {
            let event = Incoming {
                object: format!("o{i}"),
                ..failure("x")
            };
            c.observe(&event, Duration::from_secs(i as u64));
        }
        assert!(c.sent.len() <= MAX_ENTRIES);
        assert!(c.similar.len() <= MAX_ENTRIES);
        assert!(c.buckets.len() <= MAX_ENTRIES);
    }
}
