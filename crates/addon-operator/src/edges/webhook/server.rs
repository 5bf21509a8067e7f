//! One HTTPS webhook server: connections bounded and TLS handshakes off the accept loop ([`super::accept`]), `GET /healthz`, and every `POST` handed as JSON to an [`Answerer`] with its URL path; requests are served concurrently.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::accept::{Accepted, Limits, accept_loop};
use super::tls::{TlsError, TlsFiles, server_config};
pub use crate::runtime::edges::webhook::{Answerer, Reply};

/// The largest request body read (a ConversionReview may carry many objects).
pub const MAX_BODY_BYTES: usize = 32 << 20;
/// Reviews answered at once (each may start a hook process); more wait for a turn.
pub const MAX_CONCURRENT_REVIEWS: usize = 32;
/// A review that found no turn by then is answered 503, so the webhook's failurePolicy decides.
const TURN_TIMEOUT: Duration = Duration::from_secs(10);
/// A request whose body has not fully arrived by then is answered 408 (a client trickling bytes
/// must not hold a review turn or its connection for ever).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// A server that failed to start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("webhook server")]
    Tls(#[from] TlsError),
    #[error("webhook server: listen on {address}")]
    Listen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A bound server, not yet serving.
pub struct WebhookServer {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    body_timeout: Duration,
    limits: Limits,
}

impl WebhookServer {
    /// Reads the certificates and binds `address` (port 0 picks a free port).
    pub async fn bind(address: SocketAddr, tls: &TlsFiles) -> Result<Self, ServerError> {
        let config = server_config(tls)?;
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| ServerError::Listen { address, source })?;
        Ok(Self {
            listener,
            acceptor: TlsAcceptor::from(config),
            body_timeout: DEFAULT_BODY_TIMEOUT,
            limits: Limits::default(),
        })
    }

    /// The bounds on connections and handshakes ([`Limits::default`] unless set).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a request's body may take to arrive ([`DEFAULT_BODY_TIMEOUT`] unless set).
    pub fn with_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves until `cancel`.
    pub async fn run(self, answerer: Arc<dyn Answerer>, cancel: CancellationToken) {
        let (tx, rx) = mpsc::channel(64);
        let local = self.local_addr();
        tokio::spawn(accept_loop(
            self.listener,
            self.acceptor,
            self.limits,
            tx,
            cancel.clone(),
        ));
        let app = router(answerer, self.body_timeout);
        let served = axum::serve(TlsListener { rx, local }, app)
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "webhook server stopped");
        }
    }
}

/// Connections whose TLS handshake finished, for `axum::serve`.
struct TlsListener {
    rx: mpsc::Receiver<Accepted>,
    local: Option<SocketAddr>,
}

impl axum::serve::Listener for TlsListener {
    type Io = super::accept::Bounded<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(pair) => pair,
            // the accept loop ended (shutdown): wait for the graceful shutdown to finish
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.local
            .ok_or_else(|| std::io::Error::other("webhook server has no local address"))
    }
}

/// What every request of one server shares: who answers, and the turns to answer in.
#[derive(Clone)]
struct Served {
    answerer: Arc<dyn Answerer>,
    turns: Arc<tokio::sync::Semaphore>,
    body_timeout: Duration,
}

fn router(answerer: Arc<dyn Answerer>, body_timeout: Duration) -> Router {
    let served = Served {
        answerer,
        turns: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_REVIEWS)),
        body_timeout,
    };
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .fallback(review)
        .with_state(served)
}

/// The whole body within `timeout` and [`MAX_BODY_BYTES`], or the answer refusing it.
async fn read_body(
    headers: &axum::http::HeaderMap,
    body: Body,
    timeout: Duration,
) -> Result<Bytes, Response> {
    let declared =
        (headers.get(header::CONTENT_LENGTH)).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let too_large = || {
        let message = format!("the request body is larger than {MAX_BODY_BYTES} bytes\n");
        (StatusCode::PAYLOAD_TOO_LARGE, message).into_response()
    };
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        // without a declared length, the limit is what stops a chunked body
        Ok(Err(_)) if declared.is_none() => Err(too_large()),
        Ok(Err(e)) => {
            Err((StatusCode::BAD_REQUEST, format!("reading the body: {e}\n")).into_response())
        }
        Err(_) => {
            let message = format!("the request body did not arrive within {timeout:?}\n");
            Err((StatusCode::REQUEST_TIMEOUT, message).into_response())
        }
    }
}

async fn review(
    State(served): State<Served>,
    method: axum::http::Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: Body,
) -> Response {
    if method != axum::http::Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, "POST a review\n").into_response();
    }
    let body = match read_body(&headers, body, served.body_timeout).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let Ok(Ok(_turn)) = tokio::time::timeout(TURN_TIMEOUT, served.turns.acquire()).await else {
        let message = format!("more than {MAX_CONCURRENT_REVIEWS} reviews at once\n");
        return (StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    };
    let answerer = served.answerer;
    let review: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("Invalid JSON payload: {e}\n"),
            )
                .into_response();
        }
    };
    match answerer.answer(uri.path().to_string(), review).await {
        Reply::Review(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response(),
        Reply::BadRequest(message) => {
            (StatusCode::BAD_REQUEST, format!("{message}\n")).into_response()
        }
        Reply::Unavailable(message) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("{message}\n")).into_response()
        }
    }
}
