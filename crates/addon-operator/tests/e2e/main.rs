//! End-to-end tests: the real `addon-operator` binary on temporary module trees with bash hooks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod check;
mod embedded;
mod ha;
mod hook_run;
mod logs;
mod render;
mod ship;
mod start;
mod support;
