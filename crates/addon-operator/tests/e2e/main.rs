//! End-to-end tests: the real `addon-operator` binary on temporary module trees with bash hooks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod chart_state;
mod check;
mod embedded;
mod ha;
mod hook_run;
mod idle;
mod render;
mod start;
mod support;
