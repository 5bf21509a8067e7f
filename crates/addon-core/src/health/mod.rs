//! Release health: the status of one object by the kstatus rules (generation observed, workloads
//! rolled out and available, Jobs complete, `Ready`/`Stalled`/`Reconciling` conditions of other
//! kinds) and a module's readiness from the statuses of its release's objects and a timeout.

mod rules;

use std::time::Duration;

pub use rules::assess;

/// The status of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectHealth {
    /// Reconciled and serving.
    Current,
    /// Not there yet, and why.
    InProgress(String),
    /// Will not get there without a change, and why.
    Failed(String),
}

/// A module's readiness after its Helm run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleHealth {
    /// Every object of the release is current.
    Ready,
    /// The first object that is not, and why.
    Progressing { object: String, reason: String },
    /// An object failed, or one was still progressing when the timeout passed.
    Failed { object: String, reason: String },
}

impl ModuleHealth {
    /// `ready`, `progressing` or `failed` (metric labels, the debug API).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Progressing { .. } => "progressing",
            Self::Failed { .. } => "failed",
        }
    }

    /// The object it names and why, for logs and Events.
    pub fn detail(&self) -> Option<(&str, &str)> {
        match self {
            Self::Ready => None,
            Self::Progressing { object, reason } | Self::Failed { object, reason } => {
                Some((object, reason))
            }
        }
    }
}

/// The module's readiness from its objects' statuses (`name`, status), `elapsed` since its
/// Helm run: a failed object fails it at once, an object in progress fails it after `timeout`.
pub fn summarize<'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a ObjectHealth)>,
    elapsed: Duration,
    timeout: Duration,
) -> ModuleHealth {
    let mut progressing = None;
    for (name, health) in objects {
        match health {
            ObjectHealth::Current => {}
            ObjectHealth::Failed(reason) => {
                return ModuleHealth::Failed {
                    object: name.to_string(),
                    reason: reason.clone(),
                };
            }
            ObjectHealth::InProgress(reason) => {
                progressing.get_or_insert_with(|| (name.to_string(), reason.clone()));
            }
        }
    }
    match progressing {
        None => ModuleHealth::Ready,
        Some((object, reason)) if elapsed >= timeout => ModuleHealth::Failed {
            object,
            reason: format!("not ready after {}s: {reason}", timeout.as_secs()),
        },
        Some((object, reason)) => ModuleHealth::Progressing { object, reason },
    }
}

#[cfg(test)]
mod tests;
