//! Pure domain model and decisions of addon-operator: names, module and hook definitions, hook
//! configuration, binding contexts, values, schemas, module enablement and the lifecycle's
//! decisions (which tasks follow which outcome). No I/O lives here.

pub mod binding_context;
pub mod config_change;
pub mod discovery;
pub mod drift;
pub mod enablement;
pub mod error;
pub mod health;
pub mod hook_config;
pub mod hook_output;
pub mod jq;
pub mod labels;
pub mod lifecycle;
pub mod module_definition;
pub mod module_graph;
pub mod monitor;
pub mod names;
pub mod queue;
pub mod quote;
pub mod schema;
pub mod setup;
pub mod tree_diff;
pub mod values;
pub mod webhook;
pub mod words;
pub mod yaml;
pub mod yaml_splice;

/// The config layer lives with the values (`values::config`); its old path stays.
pub use values::config;
