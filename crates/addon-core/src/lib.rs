//! Pure domain model and decisions of addon-operator: names, module and hook definitions, hook
//! configuration, binding contexts, values, schemas and module enablement. No I/O lives here.

pub mod names;
pub mod queue;
pub mod yaml;
