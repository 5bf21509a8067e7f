//! Leader election with a `coordination.k8s.io/v1` Lease, so that several replicas can run and
//! only one of them works: acquire (create, or take over an expired lease), then renew; a leader
//! that cannot renew within the lease duration has lost the lease.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio_util::sync::CancellationToken;

/// How the lease is held.
#[derive(Debug, Clone)]
pub struct LeaderSettings {
    pub namespace: String,
    /// The Lease name (default `addon-operator-leader`).
    pub name: String,
    /// This replica (the pod name).
    pub identity: String,
    /// A holder that has not renewed for this long has lost the lease.
    pub lease_duration: Duration,
    /// How often the holder renews (and others retry).
    pub retry_period: Duration,
}

impl LeaderSettings {
    pub fn new(namespace: &str, identity: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
            name: "addon-operator-leader".to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            retry_period: Duration::from_secs(2),
        }
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
}

impl LeaderElection {
    pub fn new(client: Client, settings: LeaderSettings) -> Self {
        Self {
            api: Api::namespaced(client, &settings.namespace),
            settings,
        }
    }

    /// Waits until this replica holds the lease (or `stop` fires: `false`).
    pub async fn acquire(&self, stop: &CancellationToken) -> bool {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(identity = %self.settings.identity, lease = %self.settings.name, "became the leader");
                    return true;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %crate::check::error_chain(&e), "leader election"),
            }
            tokio::select! {
                () = tokio::time::sleep(self.settings.retry_period) => {}
                () = stop.cancelled() => return false,
            }
        }
    }

    /// Renews the lease until `stop` fires; fires `lost` (and returns) when it could not renew
    /// for a whole lease duration or another replica took it.
    pub async fn hold(&self, stop: CancellationToken, lost: CancellationToken) {
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.settings.retry_period) => {}
                () = stop.cancelled() => return,
            }
            match self.try_acquire_or_renew().await {
                Ok(true) => last_renewal = tokio::time::Instant::now(),
                Ok(false) => {
                    tracing::error!(lease = %self.settings.name, "another replica holds the lease now");
                    lost.cancel();
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %crate::check::error_chain(&e), "lease renewal failed");
                    if last_renewal.elapsed() >= self.settings.lease_duration {
                        tracing::error!(lease = %self.settings.name, "lease not renewed in time: leadership lost");
                        lost.cancel();
                        return;
                    }
                }
            }
        }
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
        let ours = spec.holder_identity.as_deref() == Some(self.settings.identity.as_str());
        if !ours && !self.expired(&spec, now) {
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
