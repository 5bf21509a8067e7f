//! Limits on every Kubernetes API call: a time limit for each request (watches excepted: they
//! are bounded by the read timeout) and bounded retries of transient answers that honour
//! `Retry-After`, as tower layers around kube-rs's client stack.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use tower::retry::Policy;
use tower::{BoxError, Service};

/// Timeouts and retries of API calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiSettings {
    /// Time to open a connection.
    pub connect_timeout: Duration,
    /// Longest silence while reading an answer; above the 290 s after which servers end a
    /// watch, so a quiet watch is never cut, and a stalled connection is given up.
    pub read_timeout: Duration,
    /// Time limit of one attempt of a request that is not a watch.
    pub request_timeout: Duration,
    /// Retries of a transient answer before the caller sees the error.
    pub retries: u32,
    /// Delay before the first retry; it doubles for each next one.
    pub first_delay: Duration,
    /// Cap of every retry delay, `Retry-After` included (the queues' retry delay, 30 s at most).
    pub max_delay: Duration,
}

impl Default for ApiSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(295),
            request_timeout: Duration::from_secs(60),
            retries: 5,
            first_delay: Duration::from_millis(200),
            max_delay: MAX_RETRY_DELAY,
        }
    }
}

/// No retry delay is longer, whatever the server or the settings say.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

impl ApiSettings {
    /// The delay before retry number `attempt` (0-based) of a request that got `result`, or
    /// `None` when the answer is final: 429, 503 and 504 for any request (the server did not
    /// act); 500, 502 and connection errors only for reads (`GET`, `HEAD`), which are safe to repeat.
    pub fn retry_delay<B>(
        &self,
        method: &Method,
        result: &Result<Response<B>, BoxError>,
        attempt: u32,
    ) -> Option<Duration> {
        if attempt >= self.retries {
            return None;
        }
        let read = method == Method::GET || method == Method::HEAD;
        let retry_after = match result {
            Ok(response) => match response.status() {
                StatusCode::TOO_MANY_REQUESTS
                | StatusCode::SERVICE_UNAVAILABLE
                | StatusCode::GATEWAY_TIMEOUT => retry_after(response),
                StatusCode::INTERNAL_SERVER_ERROR | StatusCode::BAD_GATEWAY if read => None,
                _ => return None,
            },
            Err(_) if read => None,
            Err(_) => return None,
        };
        let backoff = self
            .first_delay
            .saturating_mul(2u32.saturating_pow(attempt));
        let cap = self.max_delay.min(MAX_RETRY_DELAY);
        Some(retry_after.unwrap_or(backoff).min(cap))
    }
}

/// `Retry-After` in seconds (the form the API server sends).
fn retry_after<B>(response: &Response<B>) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Whether a request is a watch (`?watch=true`), which streams until the server ends it.
fn is_watch<B>(req: &Request<B>) -> bool {
    req.uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"))
}

/// The retry policy of [`ApiSettings`]; one clone per request counts its attempts.
#[derive(Debug, Clone)]
pub struct TransientRetry {
    settings: ApiSettings,
    attempt: u32,
}

impl TransientRetry {
    pub fn new(settings: ApiSettings) -> Self {
        Self {
            settings,
            attempt: 0,
        }
    }
}

impl<B> Policy<Request<Body>, Response<B>, BoxError> for TransientRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        let delay = self
            .settings
            .retry_delay(req.method(), result, self.attempt)?;
        self.attempt += 1;
        let answer = match result {
            Ok(response) => response.status().to_string(),
            Err(error) => error.to_string(),
        };
        tracing::debug!(method = %req.method(), uri = %req.uri(), %answer, attempt = self.attempt,
            delay_ms = delay.as_millis() as u64, "Kubernetes API call retried");
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        let body = req.body().try_clone()?;
        let mut copy = Request::new(body);
        *copy.method_mut() = req.method().clone();
        *copy.uri_mut() = req.uri().clone();
        *copy.version_mut() = req.version();
        *copy.headers_mut() = req.headers().clone();
        *copy.extensions_mut() = req.extensions().clone();
        Some(copy)
    }
}

/// A request that is not a watch and took longer than its limit.
#[derive(Debug, thiserror::Error)]
#[error("the Kubernetes API did not answer within {0:?}")]
pub struct RequestTimedOut(pub Duration);

/// Limits each non-watch request to `limit`.
#[derive(Debug, Clone)]
pub struct RequestTimeout<S> {
    inner: S,
    limit: Duration,
}

impl<S> RequestTimeout<S> {
    pub fn new(inner: S, limit: Duration) -> Self {
        Self { inner, limit }
    }
}

type Answer<R> = Pin<Box<dyn Future<Output = Result<R, BoxError>> + Send>>;

impl<S, B> Service<Request<B>> for RequestTimeout<S>
where
    S: Service<Request<B>, Error = BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Answer<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let watch = is_watch(&req);
        let answer = self.inner.call(req);
        let limit = self.limit;
        Box::pin(async move {
            if watch {
                return answer.await;
            }
            match tokio::time::timeout(limit, answer).await {
                Ok(result) => result,
                Err(_) => Err(Box::new(RequestTimedOut(limit)) as BoxError),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, retry_after: Option<&str>) -> Result<Response<()>, BoxError> {
        let mut response = Response::builder().status(status);
        if let Some(value) = retry_after {
            response = response.header("Retry-After", value);
        }
        Ok(response.body(()).unwrap())
    }

    #[test]
    fn throttling_is_retried_after_the_servers_delay_within_the_cap() {
        let api = ApiSettings::default();
        let delay = |status, after, attempt| {
            api.retry_delay(&Method::POST, &answer(status, after), attempt)
        };
        assert_eq!(delay(429, Some("3"), 0), Some(Duration::from_secs(3)));
        assert_eq!(delay(429, Some("3600"), 0), Some(MAX_RETRY_DELAY));
        assert_eq!(delay(503, None, 0), Some(Duration::from_millis(200)));
        assert_eq!(delay(504, None, 3), Some(Duration::from_millis(1600)));
        assert_eq!(delay(429, None, 20), None, "only `retries` retries");
        assert_eq!(delay(409, None, 0), None);
        assert_eq!(
            delay(500, None, 0),
            None,
            "a write that failed is not repeated"
        );
    }

    #[test]
    fn reads_are_retried_on_server_errors_and_lost_connections() {
        let api = ApiSettings {
            max_delay: Duration::from_secs(2),
            ..ApiSettings::default()
        };
        let get = |result, attempt| api.retry_delay(&Method::GET, &result, attempt);
        assert_eq!(get(answer(500, None), 1), Some(Duration::from_millis(400)));
        assert_eq!(
            get(answer(502, None), 4),
            Some(Duration::from_secs(2)),
            "capped"
        );
        assert_eq!(
            get(Err("connection refused".into()), 0),
            Some(Duration::from_millis(200))
        );
        assert_eq!(get(answer(404, None), 0), None);
        assert_eq!(get(answer(200, None), 0), None);
    }

    #[test]
    fn watches_are_told_apart_by_their_query() {
        let req = |uri: &str| Request::get(uri).body(()).unwrap();
        assert!(is_watch(&req("/api/v1/pods?labelSelector=a&watch=true")));
        assert!(!is_watch(&req("/api/v1/pods?labelSelector=watch%3Dtrue")));
        assert!(!is_watch(&req("/api/v1/namespaces/default/configmaps/x")));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_does_not_answer_times_out_and_a_watch_does_not() {
        let never = tower::service_fn(|_req: Request<()>| async {
            std::future::pending::<Result<(), BoxError>>().await
        });
        let mut timed = RequestTimeout::new(never, Duration::from_secs(60));
        let get = timed.call(Request::get("/api/v1/pods").body(()).unwrap());
        let error = get.await.unwrap_err();
        assert!(error.is::<RequestTimedOut>(), "{error}");
        let watch = timed.call(Request::get("/api/v1/pods?watch=true").body(()).unwrap());
        let waited = tokio::time::timeout(Duration::from_secs(3600), watch).await;
        assert!(waited.is_err(), "a watch has no request time limit");
    }
}
