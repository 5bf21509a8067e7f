//! [`Reporter`]: what the runtime tells cluster admins outside logs and metrics: Kubernetes Events
//! (on a module's status object, the global hooks' one, or an object of a release) and the state
//! each module's status shows.

use std::sync::{Arc, Mutex, PoisonError};

use addon_core::hook_output::kube_patch::ObjectRef;
use addon_core::names::ModuleName;

/// An Event's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Normal,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// What an Event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A module (its status object when there is one).
    Module(ModuleName),
    /// The global hooks.
    Global,
    /// An object of a module's release (drift, health).
    Object {
        module: ModuleName,
        object: ObjectRef,
    },
}

/// One Event for admins: `reason` is a CamelCase word (`HookFailed`, `Installed`, `DriftRestored`),
/// `message` a sentence naming the hook, binding, object or field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminEvent {
    pub subject: Subject,
    pub severity: Severity,
    pub reason: String,
    pub message: String,
}

impl AdminEvent {
    pub fn new(
        subject: Subject,
        severity: Severity,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            subject,
            severity,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Whose status object an update is for: a module's, or the global hooks'.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    Module(ModuleName),
    Global,
}

impl Owner {
    pub fn of(module: Option<&ModuleName>) -> Self {
        module.map_or(Self::Global, |m| Self::Module(m.clone()))
    }
}

/// A failure the status shows: the hook (empty when the failure is not a hook's), its binding,
/// and the error with the tail of the hook's stderr (bounded by [`bounded_tail`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LastError {
    pub hook: String,
    pub binding: String,
    pub message: String,
}

/// A condition another part of the operator owns (release health, drift): replaces the
/// condition of the same `type` on the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCondition {
    pub kind: String,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

/// The condition type release health sets: a module is Ready only when it holds too.
pub const RELEASE_HEALTHY: &str = "ReleaseHealthy";

/// One change to what a status object shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusUpdate {
    /// Module discovery decided: enabled or not, and why not when the runtime knows.
    Enablement { enabled: bool, reason: String },
    /// A run (or delete) of the module started.
    Running,
    /// A run succeeded; the release's revision when the module has one.
    Ready { revision: Option<u64> },
    /// The disabled module's release and hooks are gone.
    Deleted,
    /// A task failed and is retried.
    Failed(LastError),
    /// How many objects of the release drifted (0 when none).
    Drift { count: u64 },
    /// A condition of its own type (`ReleaseHealthy`, `NoDrift`, ...).
    Condition(StatusCondition),
}

/// Where admin-facing reports go. Calls never block on the API: an implementation queues,
/// aggregates and rate-limits (as client-go's recorder does) and drops what it cannot send.
pub trait Reporter: Send + Sync + std::fmt::Debug {
    fn event(&self, event: AdminEvent);
    /// The modules the tree has now: each gets a status object, objects of modules that left
    /// the tree go.
    fn tree(&self, modules: &[ModuleName]) {
        let _ = modules;
    }
    /// A change of the status of `owner`'s object.
    fn status(&self, owner: Owner, update: StatusUpdate) {
        let _ = (owner, update);
    }
}

/// At most the last `lines` lines and `bytes` bytes of `text` (cut at a character boundary),
/// for Events and status fields that show a hook's stderr.
pub fn bounded_tail(text: &str, lines: usize, bytes: usize) -> String {
    let text = text.trim_end();
    let start = text
        .rmatch_indices('\n')
        .nth(lines.saturating_sub(1))
        .map_or(0, |(at, _)| at + 1);
    let tail = &text[start..];
    if tail.len() <= bytes {
        return tail.to_string();
    }
    let mut cut = tail.len() - bytes;
    while !tail.is_char_boundary(cut) {
        cut += 1;
    }
    format!("...{}", &tail[cut..])
}

/// No cluster, or reports turned off.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoReports;

impl Reporter for NoReports {
    fn event(&self, _event: AdminEvent) {}
}

/// Keeps every report in memory, for tests and `hook run`.
#[derive(Debug, Default, Clone)]
pub struct KeptReports {
    events: Arc<Mutex<Vec<AdminEvent>>>,
    statuses: Arc<Mutex<Vec<(Owner, StatusUpdate)>>>,
}

impl KeptReports {
    pub fn events(&self) -> Vec<AdminEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn statuses(&self) -> Vec<(Owner, StatusUpdate)> {
        self.statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Reporter for KeptReports {
    fn event(&self, event: AdminEvent) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }

    fn status(&self, owner: Owner, update: StatusUpdate) {
        self.statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((owner, update));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_reports_keep_events_in_order() {
        let kept = KeptReports::default();
        let module = ModuleName::new("web").unwrap();
        kept.event(AdminEvent::new(
            Subject::Module(module.clone()),
            Severity::Warning,
            "HookFailed",
            "a",
        ));
        kept.event(AdminEvent::new(
            Subject::Global,
            Severity::Normal,
            "Ready",
            "b",
        ));
        let events = kept.events();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].subject, Subject::Module(module));
        assert_eq!(events[1].severity.as_str(), "Normal");
        NoReports.event(events[0].clone());
    }

    #[test]
    fn bounded_tail_keeps_the_last_lines_and_bytes() {
        let text = "1\n2\n3\n4\n5\n6\n7\n";
        assert_eq!(bounded_tail(text, 5, 1024), "3\n4\n5\n6\n7");
        assert_eq!(bounded_tail("short", 5, 1024), "short");
        let long = "é".repeat(600);
        let cut = bounded_tail(&long, 5, 1024);
        assert!(cut.len() <= 1024 + 3 + 1, "{}", cut.len());
        assert!(cut.starts_with("..."));
    }
}
