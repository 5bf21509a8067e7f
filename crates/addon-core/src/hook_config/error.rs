//! Errors of hook configuration parsing: every problem found, each naming the hook and the field.

use std::fmt;

use crate::names::HookName;

/// One problem in a hook's `--config` output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookConfigError {
    /// The output is not a YAML or JSON document.
    #[error("hook '{hook}': read --config output: {message}")]
    ReadOutput { hook: HookName, message: String },
    /// The document as a whole is wrong (not an object, no bindings, bad version).
    #[error("hook '{hook}': {message}")]
    ValidateDocument { hook: HookName, message: String },
    /// A field is wrong.
    #[error("hook '{hook}': {path}: {message}")]
    ValidateField {
        hook: HookName,
        path: String,
        message: String,
    },
}

impl HookConfigError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadOutput { .. } => "hook_config_read",
            Self::ValidateDocument { .. } | Self::ValidateField { .. } => "hook_config_invalid",
        }
    }
}

/// All problems found in one hook's configuration (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookConfigErrors {
    pub errors: Vec<HookConfigError>,
}

impl HookConfigErrors {
    /// A stable label for metrics (of the first problem).
    pub fn category(&self) -> &'static str {
        self.errors
            .first()
            .map_or("hook_config_invalid", HookConfigError::category)
    }
}

impl fmt::Display for HookConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.errors.as_slice() {
            return write!(f, "{only}");
        }
        write!(f, "{} problems in hook config:", self.errors.len())?;
        for e in &self.errors {
            write!(f, "\n  - {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for HookConfigErrors {}
