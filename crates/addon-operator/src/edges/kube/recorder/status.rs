//! What one Module status object shows: the runtime's [`StatusUpdate`]s folded into a state,
//! rendered as the object's `status` (phase, enabled, Ready condition, last error, revision,
//! drift, times).

use serde_json::{Value, json};

use crate::runtime::edges::report::RELEASE_HEALTHY;
use crate::runtime::edges::{LastError, StatusCondition, StatusUpdate};

/// The longest `lastError.summary` (the printer column).
const SUMMARY_CHARS: usize = 80;

/// A module's lifecycle as the status shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    #[default]
    Pending,
    Running,
    Ready,
    Failed,
    Disabled,
    Deleted,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Ready => "Ready",
            Self::Failed => "Failed",
            Self::Disabled => "Disabled",
            Self::Deleted => "Deleted",
        }
    }
}

/// The state of one status object; `time` is an RFC 3339 wall-clock time given by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleStatus {
    pub enabled: Option<bool>,
    pub disabled_reason: String,
    pub phase: Phase,
    pub revision: Option<u64>,
    pub drift: u64,
    pub last_error: Option<(LastError, String)>,
    pub last_run: Option<String>,
    /// Conditions of other writers (release health, drift), by type.
    pub conditions: Vec<(StatusCondition, String)>,
    /// When the Ready condition last changed.
    pub ready_since: Option<String>,
}

impl ModuleStatus {
    /// Folds `update` in at `time`.
    pub fn apply(&mut self, update: StatusUpdate, time: &str) {
        let was_ready = self.ready();
        match update {
            StatusUpdate::Enablement { enabled, reason } => {
                self.enabled = Some(enabled);
                self.disabled_reason = if enabled { String::new() } else { reason };
                if !enabled && self.phase != Phase::Deleted {
                    self.phase = Phase::Disabled;
                } else if enabled && matches!(self.phase, Phase::Disabled | Phase::Deleted) {
                    self.phase = Phase::Pending;
                }
            }
            StatusUpdate::Running => {
                if self.phase != Phase::Failed {
                    self.phase = Phase::Running;
                }
            }
            StatusUpdate::Ready { revision } => {
                self.phase = Phase::Ready;
                self.revision = revision.or(self.revision);
                self.last_error = None;
                self.last_run = Some(time.to_string());
            }
            StatusUpdate::Deleted => {
                self.phase = Phase::Deleted;
                self.revision = None;
                self.last_error = None;
            }
            StatusUpdate::Failed(error) => {
                self.phase = Phase::Failed;
                self.last_error = Some((error, time.to_string()));
            }
            StatusUpdate::Drift { count } => self.drift = count,
            StatusUpdate::Condition(condition) => self.set_condition(condition, time),
        }
        if self.ready() != was_ready || self.ready_since.is_none() {
            self.ready_since = Some(time.to_string());
        }
    }

    fn set_condition(&mut self, condition: StatusCondition, time: &str) {
        match self
            .conditions
            .iter_mut()
            .find(|(c, _)| c.kind == condition.kind)
        {
            Some((c, since)) => {
                if c.status != condition.status {
                    *since = time.to_string();
                }
                *c = condition;
            }
            None => self.conditions.push((condition, time.to_string())),
        }
    }

    fn ready(&self) -> bool {
        self.phase == Phase::Ready && self.unhealthy_release().is_none()
    }

    /// The `ReleaseHealthy` condition when it is false: the last run succeeded but an object of
    /// the release is not ready (or failed).
    fn unhealthy_release(&self) -> Option<&StatusCondition> {
        (self.conditions.iter())
            .map(|(c, _)| c)
            .find(|c| c.kind == RELEASE_HEALTHY && !c.status)
    }

    /// The Ready condition's reason and message.
    fn ready_reason(&self) -> (&'static str, String) {
        match self.phase {
            Phase::Pending => ("Pending", "waiting for its first run".into()),
            Phase::Running => ("Running", "a run is in progress".into()),
            Phase::Ready => match self.unhealthy_release() {
                Some(c) => ("ReleaseNotReady", c.message.clone()),
                None => ("RunSucceeded", "the last run succeeded".into()),
            },
            Phase::Failed => {
                let message = (self.last_error.as_ref()).map_or(String::new(), |(e, _)| {
                    let first = e.message.lines().next().unwrap_or_default();
                    first.to_string()
                });
                ("RunFailed", message)
            }
            Phase::Disabled => ("Disabled", self.disabled_reason.clone()),
            Phase::Deleted => ("Deleted", "disabled; its release was deleted".into()),
        }
    }

    /// The object's `status`.
    pub fn render(&self, time: &str) -> Value {
        let (reason, message) = self.ready_reason();
        let since = self.ready_since.as_deref().unwrap_or(time);
        let mut conditions = vec![json!({
            "type": "Ready",
            "status": if self.ready() { "True" } else { "False" },
            "reason": reason,
            "message": message,
            "lastTransitionTime": since,
        })];
        conditions.extend(self.conditions.iter().map(|(c, since)| {
            json!({
                "type": c.kind,
                "status": if c.status { "True" } else { "False" },
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": since,
            })
        }));
        let last_error = self.last_error.as_ref().map(|(e, at)| {
            json!({
                "hook": e.hook,
                "binding": e.binding,
                "message": e.message,
                "summary": summary(&e.message),
                "time": at,
            })
        });
        json!({
            "enabled": self.enabled,
            "disabledReason": self.disabled_reason,
            "phase": self.phase.as_str(),
            "ready": if self.ready() { "True" } else { "False" },
            "revision": self.revision,
            "driftCount": self.drift,
            "lastError": last_error,
            "lastRunTime": self.last_run,
            "updateTime": time,
            "conditions": conditions,
        })
    }
}

/// The first line of `message` and its last one (where a hook's stderr says what went wrong),
/// at most [`SUMMARY_CHARS`] characters.
fn summary(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    let line = match lines.next_back() {
        Some(last) => format!("{first} {last}"),
        None => first.to_string(),
    };
    match line.char_indices().nth(SUMMARY_CHARS) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(message: &str) -> StatusUpdate {
        StatusUpdate::Failed(LastError {
            hook: "hooks/a.sh".into(),
            binding: "beforeHelm".into(),
            message: message.into(),
        })
    }

    #[test]
    fn a_failure_then_a_success_clear_the_last_error() {
        let mut s = ModuleStatus::default();
        s.apply(
            StatusUpdate::Enablement {
                enabled: true,
                reason: String::new(),
            },
            "t0",
        );
        s.apply(StatusUpdate::Running, "t1");
        s.apply(failed(&format!("{}\nsecond", "x".repeat(100))), "t2");
        let status = s.render("t2");
        assert_eq!(status["phase"], "Failed");
        assert_eq!(status["ready"], "False");
        assert_eq!(status["lastError"]["hook"], "hooks/a.sh");
        assert_eq!(status["lastError"]["binding"], "beforeHelm");
        assert_eq!(status["lastError"]["summary"].as_str().unwrap().len(), 83);
        s.apply(failed("exit status 3, stderr:\nline 1\nline 2\n"), "t2");
        let status = s.render("t2");
        assert_eq!(
            status["lastError"]["summary"],
            "exit status 3, stderr: line 2"
        );
        assert_eq!(status["conditions"][0]["reason"], "RunFailed");
        s.apply(StatusUpdate::Ready { revision: Some(3) }, "t3");
        let status = s.render("t3");
        assert_eq!(status["phase"], "Ready");
        assert_eq!(status["revision"], 3);
        assert_eq!(status["lastError"], Value::Null);
        assert_eq!(status["conditions"][0]["status"], "True");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t3");
    }

    #[test]
    fn disabled_modules_show_why_and_other_conditions_are_kept_by_type() {
        let mut s = ModuleStatus::default();
        let disabled = StatusUpdate::Enablement {
            enabled: false,
            reason: "webEnabled: false in the config".into(),
        };
        s.apply(disabled, "t0");
        let drift = |status| {
            StatusUpdate::Condition(StatusCondition {
                kind: "NoDrift".into(),
                status,
                reason: "Checked".into(),
                message: String::new(),
            })
        };
        s.apply(drift(true), "t1");
        s.apply(drift(false), "t2");
        s.apply(StatusUpdate::Drift { count: 2 }, "t2");
        let status = s.render("t2");
        assert_eq!(status["phase"], "Disabled");
        assert_eq!(status["enabled"], false);
        assert_eq!(status["disabledReason"], "webEnabled: false in the config");
        assert_eq!(status["driftCount"], 2);
        assert_eq!(status["conditions"].as_array().unwrap().len(), 2);
        assert_eq!(status["conditions"][1]["status"], "False");
        assert_eq!(status["conditions"][1]["lastTransitionTime"], "t2");
    }

    #[test]
    fn an_unhealthy_release_keeps_a_module_that_ran_from_ready_and_says_which_object() {
        let mut s = ModuleStatus::default();
        let health = |status, reason: &str, message: &str| {
            StatusUpdate::Condition(StatusCondition {
                kind: RELEASE_HEALTHY.into(),
                status,
                reason: reason.into(),
                message: message.into(),
            })
        };
        s.apply(StatusUpdate::Ready { revision: Some(1) }, "t1");
        s.apply(
            health(
                false,
                "Progressing",
                "default/Deployment/web: available: 0/1",
            ),
            "t2",
        );
        let status = s.render("t2");
        assert_eq!(status["phase"], "Ready");
        assert_eq!(status["ready"], "False");
        assert_eq!(status["conditions"][0]["reason"], "ReleaseNotReady");
        assert_eq!(
            status["conditions"][0]["message"],
            "default/Deployment/web: available: 0/1"
        );
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t2");
        s.apply(health(true, "Ready", "every object is ready"), "t3");
        let status = s.render("t3");
        assert_eq!(status["ready"], "True");
        assert_eq!(status["conditions"][0]["reason"], "RunSucceeded");
        assert_eq!(status["conditions"][1]["type"], "ReleaseHealthy");
    }
}
