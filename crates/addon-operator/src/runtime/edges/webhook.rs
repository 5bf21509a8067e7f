//! The webhook port: how the runtime answers the reviews the webhook servers (`edges/webhook`)
//! receive.

use futures::future::BoxFuture;
use serde_json::Value;

/// What the server answers a review with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `200` with this JSON (the review with its response).
    Review(Value),
    /// `400` with this text (the body is not a review).
    BadRequest(String),
    /// `500` with this text: no answer in time, so the API server applies the webhook's
    /// `failurePolicy` (as it does when the server cannot be reached).
    Unavailable(String),
}

/// Answers the reviews posted to one server.
pub trait Answerer: Send + Sync + 'static {
    fn answer(&self, path: String, review: Value) -> BoxFuture<'static, Reply>;
}
