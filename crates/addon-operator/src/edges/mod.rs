//! The outside systems the runtime talks to, one folder each, every one behind a port trait of
//! `runtime::edges` where the runtime needs to swap it (tests, local mode).

pub mod config;
pub mod exec;
pub mod files;
pub mod helm;
pub mod http;
pub mod jq;
pub mod kube;
pub mod tree;
pub mod webhook;
