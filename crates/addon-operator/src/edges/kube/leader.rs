//! Leader election with a `coordination.k8s.io/v1` Lease, so that several replicas can run and
//! only one of them works: acquire (create, take over an expired or released lease), renew, and
//! release on shutdown (as client-go's `ReleaseOnCancel`). A leader whose last renewal is older
//! than the renew deadline stops taking tasks ([`Leadership`]) and then stops.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::runtime::edges::Leading;

/// The Lease of the Go operator, so that a mixed rollout still elects one leader.
pub const DEFAULT_LEASE_NAME: &str = "addon-operator-leader-election";

/// How the lease is held.
#[derive(Debug, Clone)]
pub struct LeaderSettings {
    pub namespace: String,
    /// The Lease name (default [`DEFAULT_LEASE_NAME`]).
    pub name: String,
    /// This replica (the pod name).
    pub identity: String,
    /// A holder that has not renewed for this long has lost the lease (for the others).
    pub lease_duration: Duration,
    /// The holder stops working when its last renewal is older than this (shorter than
    /// `lease_duration`, so it stops before another replica may take over).
    pub renew_deadline: Duration,
    /// How often the holder renews (and others retry).
    pub retry_period: Duration,
}

impl LeaderSettings {
    /// client-go's defaults: lease 15 s, renew deadline 10 s, retry 2 s.
    pub fn new(namespace: &str, identity: &str) -> Self {
        Self::with_lease_duration(namespace, identity, Duration::from_secs(15))
    }

    /// The renew deadline and retry period in client-go's default proportions of the lease
    /// duration (2/3 and 2/15; the retry period at least 100 ms).
    pub fn with_lease_duration(namespace: &str, identity: &str, lease: Duration) -> Self {
        Self {
            namespace: namespace.to_string(),
            name: DEFAULT_LEASE_NAME.to_string(),
            identity: identity.to_string(),
            lease_duration: lease,
            renew_deadline: lease * 2 / 3,
            retry_period: (lease * 2 / 15).max(Duration::from_millis(100)),
        }
    }
}

/// Whether this replica may start a task now: it holds the lease and renewed it within the renew
/// deadline. Shared with the queue workers, which check it before every task start.
#[derive(Debug)]
pub struct Leadership {
    renew_deadline: Duration,
    state: Mutex<LeadershipState>,
}

#[derive(Debug, Default)]
struct LeadershipState {
    last_renewal: Option<Instant>,
    lost: bool,
}

impl Leadership {
    fn new(renew_deadline: Duration) -> Self {
        Self {
            renew_deadline,
            state: Mutex::new(LeadershipState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LeadershipState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Held, not lost, and renewed less than the renew deadline ago.
    pub fn is_leading(&self) -> bool {
        let state = self.lock();
        !state.lost
            && state
                .last_renewal
                .is_some_and(|at| at.elapsed() < self.renew_deadline)
    }

    fn renewed(&self) {
        self.lock().last_renewal = Some(Instant::now());
    }

    fn renewal_too_old(&self) -> bool {
        self.lock()
            .last_renewal
            .is_none_or(|at| at.elapsed() >= self.renew_deadline)
    }

    fn lose(&self) {
        self.lock().lost = true;
    }
}

/// A leader election step that failed (logged; the loop goes on).
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("read the lease {name}")]
    Read {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("write the lease {name}")]
    Write {
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl LeaderError {
    pub fn category(&self) -> &'static str {
        "leader_election"
    }
}

/// A replica taking part in the election.
pub struct LeaderElection {
    api: Api<Lease>,
    settings: LeaderSettings,
    leadership: Arc<Leadership>,
}

impl LeaderElection {
    pub fn new(client: Client, settings: LeaderSettings) -> Self {
        Self {
            api: Api::namespaced(client, &settings.namespace),
            leadership: Arc::new(Leadership::new(settings.renew_deadline)),
            settings,
        }
    }

    /// The gate the queue workers check before every task start.
    pub fn leadership(&self) -> Arc<Leadership> {
        Arc::clone(&self.leadership)
    }

    /// Waits until this replica holds the lease (or `stop` fires: `false`).
    pub async fn acquire(&self, stop: &CancellationToken) -> bool {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    self.leadership.renewed();
                    tracing::info!(identity = %self.settings.identity, lease = %self.settings.name, "became the leader");
                    return true;
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %addon_core::error::error_chain(&e), "leader election")
                }
            }
            tokio::select! {
                () = tokio::time::sleep(self.settings.retry_period) => {}
                () = stop.cancelled() => return false,
            }
        }
    }

    /// Renews the lease until `stop` fires, then releases it; fires `lost` when the last
    /// renewal is older than the renew deadline (and releases the lease if still its holder) or
    /// another replica took the lease.
    pub async fn hold(&self, stop: CancellationToken, lost: CancellationToken) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.settings.retry_period) => {}
                () = stop.cancelled() => break,
            }
            if self.leadership.renewal_too_old() {
                tracing::error!(lease = %self.settings.name, "lease not renewed within the renew deadline: leadership lost");
                self.lose(&lost);
                break;
            }
            match self.try_acquire_or_renew().await {
                Ok(true) => self.leadership.renewed(),
                Ok(false) => {
                    tracing::error!(lease = %self.settings.name, "another replica holds the lease now");
                    return self.lose(&lost);
                }
                Err(e) => {
                    tracing::warn!(error = %addon_core::error::error_chain(&e), "lease renewal failed");
                }
            }
        }
        match self.release().await {
            Ok(()) => tracing::info!(lease = %self.settings.name, "lease released"),
            Err(e) => {
                tracing::warn!(error = %addon_core::error::error_chain(&e), "lease not released")
            }
        }
    }

    fn lose(&self, lost: &CancellationToken) {
        self.leadership.lose();
        lost.cancel();
    }

    /// Clears the holder of a lease this replica holds, so that a standby takes it at its next
    /// retry instead of waiting for the lease to expire.
    async fn release(&self) -> Result<(), LeaderError> {
        self.leadership.lose();
        let name = &self.settings.name;
        let lease = self
            .api
            .get_opt(name)
            .await
            .map_err(|source| LeaderError::Read {
                name: name.clone(),
                source,
            })?;
        let Some(mut lease) = lease else {
            return Ok(());
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return Ok(());
        }
        let now = MicroTime(Timestamp::now());
        lease.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: spec.lease_transitions,
            ..LeaseSpec::default()
        });
        self.api
            .replace(name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
            .map_err(|source| LeaderError::Write {
                name: name.clone(),
                source,
            })
    }

    /// One step: create the lease, renew it when ours, or take it over when expired. `Ok(true)`
    /// when this replica holds it afterwards.
    async fn try_acquire_or_renew(&self) -> Result<bool, LeaderError> {
        let name = &self.settings.name;
        let read = |source| LeaderError::Read {
            name: name.clone(),
            source,
        };
        let write = |source| LeaderError::Write {
            name: name.clone(),
            source,
        };
        let now = Timestamp::now();
        let Some(mut lease) = self.api.get_opt(name).await.map_err(read)? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(now, now, 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(write(e)),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.as_deref().unwrap_or_default();
        let ours = holder == self.settings.identity;
        if !ours && !holder.is_empty() && !self.expired(&spec, now) {
            return Ok(false);
        }
        let acquired = if ours {
            spec.acquire_time.map_or(now, |t| t.0)
        } else {
            now
        };
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        lease.spec = Some(self.spec(acquired, now, transitions));
        match self.api.replace(name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(write(e)),
        }
    }

    fn expired(&self, spec: &LeaseSpec, now: Timestamp) -> bool {
        let Some(renewed) = &spec.renew_time else {
            return true;
        };
        let seconds = spec
            .lease_duration_seconds
            .map_or(self.settings.lease_duration.as_secs() as i64, i64::from);
        renewed
            .0
            .checked_add(SignedDuration::from_secs(seconds))
            .map_or(true, |deadline| deadline < now)
    }

    fn spec(&self, acquired: Timestamp, renewed: Timestamp, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.settings.identity.clone()),
            lease_duration_seconds: Some(self.settings.lease_duration.as_secs() as i32),
            acquire_time: Some(MicroTime(acquired)),
            renew_time: Some(MicroTime(renewed)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}
impl Leading for Leadership {
    fn is_leading(&self) -> bool {
        Leadership::is_leading(self)
    }
}
