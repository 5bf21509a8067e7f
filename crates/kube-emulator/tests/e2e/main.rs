//! End-to-end tests: unmodified kube-rs, kubectl and helm against the emulator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod admission;
mod api_semantics;
mod common;
mod crash;
mod helm;
mod kube_rs;
mod kubectl;
