//! What every error shares: its one-line chain of causes ([`error_chain`]) and the kind of a task failure ([`FailureKind`]).

use std::error::Error;
use std::fmt;

/// An error with its causes (`source()` chain), on one line: `outer: cause: root cause`. A
/// multi-line message (a YAML snippet, a helm stderr) keeps only its first line. The runtime's
/// logs and task failures, the commands and the checks all print errors through this.
pub fn error_chain(err: &dyn Error) -> String {
    let mut out = first_line(err);
    let mut cur = err.source();
    while let Some(next) = cur {
        out.push_str(": ");
        out.push_str(&first_line(next));
        cur = next.source();
    }
    out
}

fn first_line(err: &dyn Error) -> String {
    let text = err.to_string();
    text.lines()
        .next()
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

/// The outside system or step a failed task tripped on: the queue records it with the failure,
/// the logs carry it as `error.kind`, so nothing reads the kind out of a message's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// A hook process: could not start, exited non-zero, timed out, wrote invalid output.
    Hook,
    /// The `helm` binary or a release's stored state.
    Helm,
    /// The Kubernetes API (object patches, watches, CRDs).
    Kube,
    /// The config store (ConfigMap or file): read, parse, write.
    Config,
    /// The values store: a patch or a schema rejected the values.
    Values,
    /// Module enablement or discovery (an `enabled` script, an unknown module).
    Module,
}

impl FailureKind {
    /// A stable lowercase label for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hook => "hook",
            Self::Helm => "helm",
            Self::Kube => "kube",
            Self::Config => "config",
            Self::Values => "values",
            Self::Module => "module",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed attempt of a task as the queue keeps it: what kind of thing failed and the message
/// (the error's chain) shown to people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("run hook 'a.sh'")]
        Run {
            #[source]
            source: Inner,
        },
    }

    #[derive(Debug, thiserror::Error)]
    #[error("exit status 1\nsecond line of stderr")]
    struct Inner;

    #[test]
    fn error_chain_joins_every_cause_and_keeps_first_lines() {
        let err = Outer::Run { source: Inner };
        assert_eq!(error_chain(&err), "run hook 'a.sh': exit status 1");
    }

    #[test]
    fn error_chain_of_an_error_without_source_is_its_message() {
        assert_eq!(error_chain(&Inner), "exit status 1");
    }

    #[test]
    fn failure_kinds_have_stable_labels() {
        let labels: Vec<&str> = [
            FailureKind::Hook,
            FailureKind::Helm,
            FailureKind::Kube,
            FailureKind::Config,
            FailureKind::Values,
            FailureKind::Module,
        ]
        .into_iter()
        .map(FailureKind::as_str)
        .collect();
        assert_eq!(
            labels,
            ["hook", "helm", "kube", "config", "values", "module"]
        );
        assert_eq!(
            Failure::new(FailureKind::Helm, "x").kind.to_string(),
            "helm"
        );
    }
}
