//! End-to-end tests: the real `addon-operator` binary on temporary module trees with bash hooks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod batch;
mod cel_rules;
mod chart_state;
mod check;
mod cluster;
mod cluster_flags;
mod config_file;
mod config_race;
mod dependencies;
mod drift;
mod embedded;
mod ha;
mod hook_run;
mod idle;
mod logs;
mod metrics;
mod module_sdk;
mod monitoring;
mod processes;
mod progress;
mod render;
mod scaffold;
mod shared_watches;
mod ship;
mod start;
mod startup_faults;
mod status_events;
mod support;
mod test_cmd;
mod tree_reload;
mod upstream;
mod webhook_certs;
#[path = "../webhook/client.rs"]
#[allow(
    dead_code,
    reason = "shared with the webhook tests; the e2e tests use part of it"
)]
mod webhook_client;
mod webhook_load;
mod webhooks;
