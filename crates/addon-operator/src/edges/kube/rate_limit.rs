//! The client-side request rate limit of a Kubernetes client, as client-go's: a token bucket of `burst` tokens refilled at `qps` a second, one token taken by every request (each retry and each watch start included), as a tower layer in front of kube-rs's stack.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tower::{BoxError, Service, ServiceExt as _};

/// client-go's defaults (`rest.DefaultQPS`, `rest.DefaultBurst`).
pub const DEFAULT_QPS: f32 = 5.0;
pub const DEFAULT_BURST: u32 = 10;

/// Requests a second and at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub qps: f32,
    pub burst: u32,
}

impl RateLimit {
    /// The limit of a `--*-qps` / `--*-burst` pair as client-go reads them: 0 is the default,
    /// a negative QPS turns the limit off (`None`).
    pub fn from_flags(qps: f32, burst: u32) -> Option<Self> {
        let qps = if qps == 0.0 { DEFAULT_QPS } else { qps };
        let burst = if burst == 0 { DEFAULT_BURST } else { burst };
        (qps > 0.0 && qps.is_finite()).then_some(Self { qps, burst })
    }
}

/// Tokens and when they were counted.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A token bucket shared by every clone of a client.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    limit: RateLimit,
    bucket: Arc<Mutex<Bucket>>,
}

impl TokenBucket {
    /// Full: `burst` requests go at once.
    pub fn new(limit: RateLimit) -> Self {
        let bucket = Bucket {
            tokens: f64::from(limit.burst),
            at: Instant::now(),
        };
        Self {
            limit,
            bucket: Arc::new(Mutex::new(bucket)),
        }
    }

    /// Takes a token now and says how long to wait before it may be used (requests get their
    /// turns in the order they asked).
    fn reserve(&self) -> Duration {
        let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let qps = f64::from(self.limit.qps);
        let refilled = bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * qps;
        bucket.tokens = refilled.min(f64::from(self.limit.burst)) - 1.0;
        bucket.at = now;
        match bucket.tokens < 0.0 {
            true => Duration::from_secs_f64(-bucket.tokens / qps),
            false => Duration::ZERO,
        }
    }

    /// Waits for a token.
    pub async fn acquire(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// Each request waits for a token of `bucket` (none: no limit), then goes to `inner` (a
/// cloneable service: the buffer at the bottom of the client's stack).
#[derive(Debug, Clone)]
pub struct RateLimited<S> {
    inner: S,
    bucket: Option<TokenBucket>,
}

impl<S> RateLimited<S> {
    pub fn new(inner: S, bucket: Option<TokenBucket>) -> Self {
        Self { inner, bucket }
    }
}

type Answer<R> = Pin<Box<dyn Future<Output = Result<R, BoxError>> + Send>>;

impl<S, R> Service<R> for RateLimited<S>
where
    S: Service<R, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    R: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Answer<S::Response>;

    /// Always ready: the inner service's readiness is awaited after the token.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: R) -> Self::Future {
        let (inner, bucket) = (self.inner.clone(), self.bucket.clone());
        Box::pin(async move {
            if let Some(bucket) = bucket {
                bucket.acquire().await;
            }
            inner.oneshot(req).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_client_gos_default_and_a_negative_qps_is_no_limit() {
        let default = RateLimit::from_flags(0.0, 0);
        assert_eq!(
            default,
            Some(RateLimit {
                qps: 5.0,
                burst: 10
            })
        );
        assert_eq!(RateLimit::from_flags(-1.0, 10), None);
        let given = RateLimit::from_flags(50.0, 100);
        assert_eq!(
            given,
            Some(RateLimit {
                qps: 50.0,
                burst: 100
            })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_goes_at_once_then_requests_go_at_qps() {
        let bucket = TokenBucket::new(RateLimit {
            qps: 5.0,
            burst: 10,
        });
        let start = Instant::now();
        for _ in 0..10 {
            bucket.acquire().await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
        for _ in 0..5 {
            bucket.acquire().await;
        }
        // five more at 5 a second: the last one a second after the burst
        let elapsed = start.elapsed();
        assert!(
            (Duration::from_millis(999)..=Duration::from_millis(1001)).contains(&elapsed),
            "{elapsed:?}"
        );
        // an idle bucket fills up to the burst, not beyond
        tokio::time::advance(Duration::from_secs(60)).await;
        let again = Instant::now();
        for _ in 0..11 {
            bucket.acquire().await;
        }
        let elapsed = again.elapsed();
        assert!(
            (Duration::from_millis(199)..=Duration::from_millis(201)).contains(&elapsed),
            "{elapsed:?}"
        );
    }
}
