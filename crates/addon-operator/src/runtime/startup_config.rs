//! Reading the config at startup until the store answers: a failed read (the API server
//! restarting, throttling, a network cut) is retried with the queues' backoff while `/readyz`
//! and the log say why; the answer is then handed to the runtime as the store's first load.

use std::sync::{Arc, Mutex, PoisonError};

use addon_core::config::Config;
use addon_core::queue::Backoff;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::edges::{ConfigBackend, ConfigBackendError, ConfigUpdate, SavedConfig};
use addon_core::config_change::ConfigKeyChange;
use addon_core::error::error_chain;

/// Loads the config until the load does not fail to read (an invalid config is an answer too:
/// the runtime reports it); `starting` is told why it is not ready meanwhile. Returns the store whose first `load` gives that answer, or `None`
/// when `stop` fired first.
pub async fn wait_for_config(
    config: Arc<dyn ConfigBackend>,
    backoff: Backoff,
    starting: &(dyn Fn(String) + Sync),
    stop: &CancellationToken,
) -> Option<Arc<dyn ConfigBackend>> {
    let mut failures = 0u32;
    loop {
        let answer = tokio::select! {
            answer = config.load() => answer,
            () = stop.cancelled() => return None,
        };
        let error = match answer {
            Err(error @ ConfigBackendError::Load(_)) => error,
            answer => return Some(Arc::new(Preloaded::new(config, answer))),
        };
        failures = failures.saturating_add(1);
        let delay = backoff.delay(failures);
        let reason = format!(
            "reading the config failed {failures} time(s), next try in {}s: {}",
            delay.as_secs_f64(),
            error_chain(&error)
        );
        tracing::warn!(failures, retry_in_s = delay.as_secs_f64(), error = %error_chain(&error),
            "cannot read the config yet; not ready, retrying");
        starting(reason);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop.cancelled() => return None,
        }
    }
}

/// A config store whose first `load` answers with what was already read.
struct Preloaded {
    inner: Arc<dyn ConfigBackend>,
    first: Mutex<Option<Result<Config, ConfigBackendError>>>,
}

impl Preloaded {
    fn new(inner: Arc<dyn ConfigBackend>, first: Result<Config, ConfigBackendError>) -> Self {
        Self {
            inner,
            first: Mutex::new(Some(first)),
        }
    }
}

impl ConfigBackend for Preloaded {
    fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
        let first = self
            .first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match first {
            Some(answer) => Box::pin(async move { answer }),
            None => self.inner.load(),
        }
    }

    fn apply<'a>(
        &'a self,
        change: &'a ConfigKeyChange,
    ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>> {
        self.inner.apply(change)
    }

    fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
        self.inner.watch()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::edges::http::{StartupStatus, StatusSource};

    /// Fails to read `failing` times, then answers with an empty config.
    struct Flaky {
        failing: u32,
        loads: AtomicU32,
    }

    impl ConfigBackend for Flaky {
        fn load(&self) -> BoxFuture<'_, Result<Config, ConfigBackendError>> {
            let n = self.loads.fetch_add(1, Ordering::SeqCst);
            let failing = self.failing;
            Box::pin(async move {
                if n < failing {
                    Err(ConfigBackendError::Load("500 Internal Server Error".into()))
                } else {
                    Ok(Config::empty())
                }
            })
        }
        fn apply<'a>(
            &'a self,
            _: &'a ConfigKeyChange,
        ) -> BoxFuture<'a, Result<SavedConfig, ConfigBackendError>> {
            Box::pin(async { Err(ConfigBackendError::Save("not used by these tests".into())) })
        }
        fn watch(&self) -> mpsc::UnboundedReceiver<ConfigUpdate> {
            mpsc::unbounded_channel().1
        }
    }

    fn backoff() -> Backoff {
        Backoff {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(30),
            factor: 2,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn read_failures_are_retried_with_backoff_and_shown_as_the_not_ready_reason() {
        let flaky = Arc::new(Flaky {
            failing: 20,
            loads: AtomicU32::new(0),
        });
        let status = Arc::new(StartupStatus::new("starting"));
        let stop = CancellationToken::new();
        let (store, st) = (flaky.clone(), status.clone());
        let waiting = tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let found = wait_for_config(
                store,
                backoff(),
                &|r| st.starting(r),
                &CancellationToken::new(),
            )
            .await;
            (found.is_some(), started.elapsed())
        });
        tokio::time::sleep(Duration::from_secs(6)).await;
        let reason = status.not_ready_reason().unwrap_or_default();
        assert!(
            reason.contains("failed 2 time(s), next try in 10s"),
            "{reason}"
        );
        assert!(reason.contains("500 Internal Server Error"), "{reason}");
        let (found, waited) = waiting.await.unwrap();
        assert!(found);
        // 5 + 10 + 20 and then 30 s for each of the 17 other failures
        assert_eq!(waited, Duration::from_secs(35 + 17 * 30));
        assert_eq!(flaky.loads.load(Ordering::SeqCst), 21);
        drop(stop);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_load_after_the_wait_is_the_answer_already_read() {
        let flaky = Arc::new(Flaky {
            failing: 1,
            loads: AtomicU32::new(0),
        });
        let status = StartupStatus::new("starting");
        let stop = CancellationToken::new();
        let store = wait_for_config(flaky.clone(), backoff(), &|r| status.starting(r), &stop)
            .await
            .unwrap();
        assert!(store.load().await.is_ok());
        assert_eq!(flaky.loads.load(Ordering::SeqCst), 2, "no new read");
        assert!(store.load().await.is_ok());
        assert_eq!(flaky.loads.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_ends_the_wait() {
        let flaky = Arc::new(Flaky {
            failing: u32::MAX,
            loads: AtomicU32::new(0),
        });
        let status = StartupStatus::new("starting");
        let stop = CancellationToken::new();
        stop.cancel();
        assert!(
            wait_for_config(flaky, backoff(), &|r| status.starting(r), &stop)
                .await
                .is_none()
        );
    }
}
