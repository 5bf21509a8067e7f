//! End-to-end tests: the real `addon-operator` binary on temporary module trees with bash hooks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod chart_state;
mod batch;
mod check;
mod config_file;
mod config_race;
mod cluster;
mod embedded;
mod ha;
mod hook_run;
mod metrics;
mod processes;
mod render;
mod start;
mod startup_faults;
mod support;
mod upstream;
