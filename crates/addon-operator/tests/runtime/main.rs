//! Runtime scenarios: a whole operator on a module tree with fake hooks, fake Helm, fake
//! Kubernetes and an in-memory config, under paused time; each asserts the ordered history of
//! tasks and hook runs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod admin_reports;
mod config_writer;
mod drift;
mod failure_kinds;
mod metrics;
mod module_sdk;
mod parallel;
mod scenarios;
mod shared_watches;
mod staged_start;
mod state_ownership;
mod tree_reload;
mod webhooks;
