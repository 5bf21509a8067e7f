//! The addon-operator application: command line, runtime, and the edges it talks to (filesystem,
//! hook processes, Helm, Kubernetes, config store, HTTP), shared by `main` and the integration tests.

pub mod batch_hooks;
pub mod check;
pub mod cli;
pub mod config_file;
pub mod debug_cli;
pub mod dirs;
pub mod exec;
pub mod helm;
pub mod hook_configs;
pub mod hook_run_cli;
pub mod http;
pub mod jq_sandbox;
pub mod kube;
pub mod loader;
pub mod logging;
pub mod metrics;
pub mod render;
pub mod runtime;
pub mod schedule;
pub mod start;
pub mod tree;
pub mod upstream_flags;
