//! The main HTTP server on 127.0.0.1:0: every route, readiness before and after the first converge.

use std::net::SocketAddr;
use std::sync::Arc;

use addon_core::hook_output::metrics::parse;
use addon_operator::edges::http;
use addon_operator::runtime::metrics::Metrics;
use tokio_util::sync::CancellationToken;

use crate::client::get;
use crate::fake::FakeStatus;

pub struct Running {
    pub addr: SocketAddr,
    pub metrics: Arc<Metrics>,
    status: Arc<FakeStatus>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), http::HttpError>>,
}

pub async fn start() -> Running {
    let listener = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let metrics = Arc::new(Metrics::default());
    let status = Arc::new(FakeStatus::new());
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(http::serve_listener(
        listener,
        metrics.clone(),
        status.clone(),
        shutdown.clone(),
    ));
    Running {
        addr,
        metrics,
        status,
        shutdown,
        task,
    }
}

#[tokio::test]
async fn healthz_answers_200_while_the_server_runs() {
    let server = start().await;
    assert_eq!(get(server.addr, "/healthz").await.status, 200);
}

#[tokio::test]
async fn readyz_is_503_until_the_first_converge_is_done_then_200() {
    let server = start().await;
    let before = get(server.addr, "/readyz").await;
    assert_eq!(
        (before.status, before.body.as_str()),
        (503, "Startup converge in progress\n")
    );
    server.status.set_ready(true);
    let after = get(server.addr, "/readyz").await;
    assert_eq!(
        (after.status, after.body.as_str()),
        (200, "Startup converge done.\n")
    );
}

#[tokio::test]
async fn status_converge_is_text_or_json() {
    let server = start().await;
    let text = get(server.addr, "/status/converge").await;
    assert_eq!(text.body, "STARTUP_CONVERGE_IN_PROGRESS: 1 tasks\n");
    server.status.set_ready(true);
    let text = get(server.addr, "/status/converge").await;
    assert_eq!(text.body, "STARTUP_CONVERGE_DONE\nCONVERGE_WAIT_TASK\n");
    let json = get(server.addr, "/status/converge?output=json").await;
    let doc: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(doc["STARTUP_CONVERGE_DONE"], true);
    assert_eq!(doc["CONVERGE_WAIT_TASK"], true);
    assert_eq!(json.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn metrics_serve_openmetrics_text_with_upstream_names() {
    let server = start().await;
    server.metrics.config_values_error();
    server.metrics.queue_length("main", 2);
    let accept = Some("application/openmetrics-text; version=1.0.0");
    let response = crate::client::get_accepting(server.addr, "/metrics", accept).await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(
        response
            .body
            .contains("\naddon_operator_config_values_errors_total 1\n"),
        "{}",
        response.body
    );
    assert!(
        response
            .body
            .contains("addon_operator_tasks_queue_length{queue=\"main\"} 2.0")
    );
    assert!(response.body.ends_with("# EOF\n"));
}

#[tokio::test]
async fn metrics_hooks_serve_the_hook_registry_as_prometheus_text() {
    let server = start().await;
    let ops = parse(r#"{"name":"my_hook_metric","action":"add","value":3}"#).unwrap();
    server
        .metrics
        .hook_metric_ops("global-hooks/h.sh", None, &ops)
        .unwrap();
    let response = get(server.addr, "/metrics/hooks").await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(
        response.body,
        "# TYPE my_hook_metric counter\nmy_hook_metric{hook=\"global-hooks/h.sh\"} 3\n"
    );
}

#[tokio::test]
async fn index_and_discovery_list_the_routes() {
    let server = start().await;
    let index = get(server.addr, "/").await;
    assert!(
        index.body.contains("href=\"/metrics/hooks\""),
        "{}",
        index.body
    );
    let discovery = get(server.addr, "/discovery").await;
    assert!(
        discovery.body.contains("GET /readyz\n"),
        "{}",
        discovery.body
    );
    assert_eq!(get(server.addr, "/nope").await.status, 404);
}

#[tokio::test]
async fn the_server_stops_on_shutdown() {
    let server = start().await;
    server.shutdown.cancel();
    server.task.await.unwrap().unwrap();
    assert!(tokio::net::TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test]
async fn a_taken_port_is_a_bind_error() {
    let server = start().await;
    let err = http::bind(server.addr).await.unwrap_err();
    assert_eq!(err.category(), "http_bind");
    assert!(err.to_string().starts_with("listen on 127.0.0.1:"), "{err}");
}

#[tokio::test]
async fn queue_on_the_main_port_is_the_text_dump_the_hooks_doc_points_to() {
    let server = start().await;
    let reply = get(server.addr, "/queue").await;
    assert_eq!(reply.status, 200);
    assert!(reply.body.starts_with("Queue 'main'"), "{}", reply.body);
    server.shutdown.cancel();
}

#[tokio::test]
async fn readyz_says_why_while_the_operator_starts_then_follows_the_runtime() {
    let listener = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let startup = Arc::new(http::StartupStatus::new("starting"));
    let shutdown = CancellationToken::new();
    tokio::spawn(http::serve_listener(
        listener,
        Arc::new(Metrics::default()),
        startup.clone(),
        shutdown.clone(),
    ));
    startup.starting("reading the config failed 1 time(s), next try in 5s: 500");
    let starting = get(addr, "/readyz").await;
    assert_eq!(
        (starting.status, starting.body.as_str()),
        (
            503,
            "Not ready: reading the config failed 1 time(s), next try in 5s: 500\n"
        )
    );
    assert_eq!(get(addr, "/queue").await.status, 200);
    let runtime = Arc::new(FakeStatus::new());
    startup.running(runtime.clone());
    assert_eq!(
        get(addr, "/readyz").await.body,
        "Startup converge in progress\n"
    );
    runtime.set_ready(true);
    assert_eq!(get(addr, "/readyz").await.status, 200);
    shutdown.cancel();
}
