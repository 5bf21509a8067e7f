//! Field-level drift of a release's objects: which fields a chart sets (the baseline), how a
//! live object differs from it, the per-object settings module authors put in annotations, and
//! the back-off that stops two controllers fighting over one field.

mod backoff;
mod baseline;
mod settings;

pub use backoff::{FightGuard, Verdict};
pub use baseline::{Baseline, DriftedField, MAX_FIELDS};
pub use settings::{
    DriftMode, IGNORE_ANNOTATION, IgnoreRules, MODE_ANNOTATION, ObjectSettings, is_helm_hook,
};

#[cfg(test)]
mod tests;
