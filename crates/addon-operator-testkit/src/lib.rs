//! The test kit of addon-operator: in-memory edges, the runtime scenario harness and the one
//! helper tests wait with. Only tests depend on it (a dev-dependency), so none of it ships.

// A test kit fails the test that uses it by panicking, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod edges_fake;
mod helm;
pub mod real_cluster;
pub mod scenario;
pub mod tools;
pub mod wait;

pub use edges_fake::{FakeHooks, FakeKube, HookCall, HookSpan};
pub use helm::{FakeHelm, HelmCall};
