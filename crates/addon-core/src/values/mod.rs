//! The values store: static `values.yaml` layers, config, schema defaults and hook patches merged
//! into the documents hooks, `enabled` scripts and Helm receive.

pub mod checksum;
pub mod config;
pub mod merge;
pub mod patch;
pub mod static_values;
pub mod store;

pub use checksum::checksum;
pub use merge::{deep_merge, merged};
pub use patch::{HookRef, PatchError, PatchKind, Scope, ValuesPatch};
pub use static_values::{ModuleStatic, Section, StaticError, StaticLayer};
pub use store::{ConfigPatchOutcome, HookValues, PatchOutcome, ValuesError, ValuesStore};
