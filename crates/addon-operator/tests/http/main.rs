//! The HTTP server and the debug API on real sockets with a fake runtime status, and the debug CLI
//! (the built binary) against the socket.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client;
mod debug_api;
mod debug_cli;
mod debug_hooks;
mod fake;
mod metrics_formats;
mod server;
