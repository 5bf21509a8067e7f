//! The main HTTP server's routes (port 9650): metrics, health, readiness, converge status.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::runtime::edges::status::StatusSource;
use crate::runtime::metrics::{Exposition, Metrics, PROMETHEUS_TEXT_CONTENT_TYPE};

/// Routes of the main server, as `/discovery` lists them.
pub const ROUTES: &[&str] = &[
    "/",
    "/healthz",
    "/readyz",
    "/status/converge[?output=json]",
    "/metrics",
    "/metrics/hooks",
    "/discovery",
    "/queue",
];

#[derive(Clone)]
struct AppState {
    metrics: Arc<Metrics>,
    status: Arc<dyn StatusSource>,
}

/// The axum router of the main server.
pub fn router(metrics: Arc<Metrics>, status: Arc<dyn StatusSource>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/status/converge", get(converge_status))
        .route("/metrics", get(metrics_text))
        .route("/metrics/hooks", get(hook_metrics_text))
        .route("/discovery", get(discovery))
        .route("/queue", get(queue))
        .with_state(AppState { metrics, status })
}

async fn index() -> Html<String> {
    let links: String = ROUTES
        .iter()
        .filter(|r| **r != "/")
        .map(|r| {
            let href = r.split('[').next().unwrap_or(r);
            format!("      <a href=\"{href}\">{r}</a><br>\n")
        })
        .collect();
    Html(format!(
        "<html>\n  <head><title>Addon-operator</title></head>\n  <body>\n    <h1>Addon-operator</h1>\n    <p>\n{links}    </p>\n  </body>\n</html>\n"
    ))
}

/// The queues as text, where the HOOKS document says to look (`curl <pod>:<port>/queue`).
async fn queue(State(state): State<AppState>) -> String {
    state.status.queue_list(false).to_text()
}

async fn healthz() -> StatusCode {
    StatusCode::OK
}

async fn readyz(State(state): State<AppState>) -> (StatusCode, String) {
    if state.status.ready() {
        return (StatusCode::OK, "Startup converge done.\n".into());
    }
    let text = match state.status.not_ready_reason() {
        Some(reason) => format!("Not ready: {reason}\n"),
        None => "Startup converge in progress\n".into(),
    };
    (StatusCode::SERVICE_UNAVAILABLE, text)
}

async fn converge_status(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let status = state.status.converge_status();
    if query.get("output").is_some_and(|o| o == "json") {
        return axum::Json(status.to_json()).into_response();
    }
    let mut text = status.lines().join("\n");
    text.push('\n');
    text.into_response()
}

/// `/metrics` in the format the `Accept` header asks for (classic text unless OpenMetrics).
async fn metrics_text(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Exposition::negotiate(accept);
    let metrics = state.metrics.clone();
    let body = encode_off_runtime(move || metrics.encode_as(format)).await;
    ([(header::CONTENT_TYPE, format.content_type())], body).into_response()
}

async fn hook_metrics_text(State(state): State<AppState>) -> Response {
    let metrics = state.metrics.clone();
    let body = encode_off_runtime(move || metrics.encode_hooks()).await;
    ([(header::CONTENT_TYPE, PROMETHEUS_TEXT_CONTENT_TYPE)], body).into_response()
}

/// Encodes on the blocking pool: with a series per hook the page runs to megabytes (34 MB and
/// 0.13 s for 4,000 hooks), which would hold a runtime worker that hook runs need.
async fn encode_off_runtime(encode: impl FnOnce() -> String + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(encode).await {
        Ok(body) => body.into_response(),
        Err(error) => {
            tracing::warn!(%error, "encoding the metrics failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn discovery() -> String {
    ROUTES.iter().map(|r| format!("GET {r}\n")).collect()
}
