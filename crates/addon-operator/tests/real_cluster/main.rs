//! The real-cluster tier: the real binary against a real kube-apiserver and etcd (built by
//! `scripts/install-tools`), connecting with a service-account token bound only by the RBAC of
//! `deploy/base/rbac.yaml` plus the rules each tree documents. One control plane serves the
//! whole binary; each test works in a namespace of its own. See docs/kubernetes.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bindings;
mod chart;
mod config_edits;
mod converge;
mod drift;
mod lease;
mod status_events;
mod support;
mod webhooks;
