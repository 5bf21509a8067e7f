//! The addon-operator application, in three rooms: `cli` (arguments and the commands), `runtime`
//! (state, queues, workers, event intake and the handlers that execute the core's lifecycle
//! decisions) and `edges` (one folder per outside system: hook processes, jq sandbox, Helm,
//! Kubernetes, the config file, HTTP, metrics, the module tree on disk). `logging` is shared by all.

pub mod cli;
pub mod edges;
pub mod env;
pub mod logging;
pub mod runtime;

#[cfg(test)]
mod house_plan_tests;
