//! The Kubernetes edge against the project's API server emulator: binding watches, the
//! ConfigMap config store and the object patcher, each test on its own emulator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api_limits;
mod cluster_target;
mod common;
mod configmap;
mod crds;
mod events;
mod leader;
mod own_release;
mod patcher;
mod shared;
