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

/// Where admin-facing reports go. Calls never block on the API: an implementation queues,
/// aggregates and rate-limits (as client-go's recorder does) and drops what it cannot send.
pub trait Reporter: Send + Sync + std::fmt::Debug {
    fn event(&self, event: AdminEvent);
}

/// No cluster, or reports turned off.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoReports;

impl Reporter for NoReports {
    fn event(&self, _event: AdminEvent) {}
}

/// Keeps every report in memory, for tests and `hook run`.
#[derive(Debug, Default, Clone)]
pub struct KeptReports(Arc<Mutex<Vec<AdminEvent>>>);

impl KeptReports {
    pub fn events(&self) -> Vec<AdminEvent> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Reporter for KeptReports {
    fn event(&self, event: AdminEvent) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
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
}
