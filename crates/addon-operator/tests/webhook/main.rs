//! The webhook servers on real sockets over TLS (test certificates in tests/fixtures/webhook-certs): health, reviews handed to the answerer, concurrency, client certificates and certificate rotation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client;
mod limits;
mod server;
