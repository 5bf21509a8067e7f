//! Change events: what every write emits, keeps in a bounded history and sends to watches.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::resources::ResKey;

/// The watch event types a write produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The wire name (`ADDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed change, at one resourceVersion.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    /// The resourceVersion this write produced.
    pub rv: u64,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// Which resource.
    #[serde(flatten)]
    pub key: ResKey,
    /// The object after the change (for deletes, the last state).
    pub object: Value,
    /// The object before a modification (not persisted).
    #[serde(skip)]
    pub previous: Option<Value>,
}

/// The last events, for watches that resume from a resourceVersion.
#[derive(Debug, Default)]
pub struct History {
    events: VecDeque<Arc<Event>>,
    limit: usize,
    /// Versions at or below this are no longer fully covered: resuming from them is `410 Gone`.
    compacted_rv: u64,
}

impl History {
    /// An empty history keeping at most `limit` events, covering versions after `compacted_rv`.
    pub fn new(limit: usize, compacted_rv: u64) -> Self {
        Self {
            events: VecDeque::new(),
            limit: limit.max(1),
            compacted_rv,
        }
    }

    /// Appends an event, evicting the oldest beyond the limit.
    pub fn push(&mut self, event: Arc<Event>) {
        self.events.push_back(event);
        while self.events.len() > self.limit {
            if let Some(old) = self.events.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
    }

    /// Events after `rv`, or `Err(oldest_resumable)` when some of them were evicted.
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<Event>>, u64> {
        if rv < self.compacted_rv {
            return Err(self.compacted_rv);
        }
        Ok(self.events.iter().filter(|e| e.rv > rv).cloned().collect())
    }

    /// Highest evicted version.
    pub fn compacted_rv(&self) -> u64 {
        self.compacted_rv
    }

    /// Marks everything up to `rv` as no longer resumable.
    pub fn compact_to(&mut self, rv: u64) {
        self.events.retain(|e| e.rv > rv);
        self.compacted_rv = self.compacted_rv.max(rv);
    }

    /// The kept events, oldest first.
    pub fn events(&self) -> impl Iterator<Item = &Arc<Event>> {
        self.events.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(rv: u64) -> Arc<Event> {
        Arc::new(Event {
            rv,
            kind: EventType::Added,
            key: ResKey::new("", "configmaps"),
            object: json!({}),
            previous: None,
        })
    }

    #[test]
    fn resuming_before_evicted_events_is_refused() {
        let mut h = History::new(2, 0);
        for rv in 1..=4 {
            h.push(event(rv));
        }
        assert_eq!(h.since(2).unwrap().len(), 2);
        assert_eq!(h.since(1).unwrap_err(), 2);
        assert_eq!(h.since(4).unwrap().len(), 0);
    }

    #[test]
    fn events_serialize_with_flattened_key() {
        let v = serde_json::to_value(event(7).as_ref()).unwrap();
        assert_eq!(
            v,
            json!({"rv": 7, "type": "ADDED", "group": "", "resource": "configmaps", "object": {}})
        );
    }
}
