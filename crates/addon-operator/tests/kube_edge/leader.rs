//! Leader election over a Lease: one holder at a time, takeover after expiry, loss detected.

use std::time::Duration;

use addon_operator::edges::kube::leader::{DEFAULT_LEASE_NAME, LeaderElection, LeaderSettings};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio_util::sync::CancellationToken;

use crate::common::start;

fn settings(identity: &str) -> LeaderSettings {
    LeaderSettings {
        retry_period: Duration::from_millis(200),
        ..LeaderSettings::with_lease_duration("default", identity, Duration::from_secs(2))
    }
}

#[tokio::test]
async fn one_replica_leads_and_another_takes_over_when_it_stops_renewing() {
    let env = start().await;
    let a = LeaderElection::new(env.client().await, settings("pod-a"));
    let b = LeaderElection::new(env.client().await, settings("pod-b"));
    let stop = CancellationToken::new();
    assert!(a.acquire(&stop).await);

    let a_stop = CancellationToken::new();
    let a_lost = CancellationToken::new();
    let holding = tokio::spawn({
        let (s, l) = (a_stop.clone(), a_lost.clone());
        async move { a.hold(s, l).await }
    });
    let b_waits = tokio::time::timeout(Duration::from_secs(3), b.acquire(&stop)).await;
    assert!(b_waits.is_err(), "b must not lead while a renews");

    a_stop.cancel();
    holding.await.unwrap();
    assert!(!a_lost.is_cancelled());
    let released: Lease = Api::namespaced(env.client().await, "default")
        .get(DEFAULT_LEASE_NAME)
        .await
        .unwrap();
    assert_eq!(
        released.spec.unwrap().holder_identity,
        None,
        "a released it"
    );
    let started = std::time::Instant::now();
    assert!(b.acquire(&stop).await);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "a released lease is taken at once, not after its 2 s duration"
    );
    let lease: Lease = Api::namespaced(env.client().await, "default")
        .get(DEFAULT_LEASE_NAME)
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("pod-b"));
    assert_eq!(spec.lease_transitions, Some(1));
}

#[tokio::test]
async fn a_leader_whose_lease_was_taken_notices_it() {
    let env = start().await;
    let a = LeaderElection::new(env.client().await, settings("pod-a"));
    let stop = CancellationToken::new();
    assert!(a.acquire(&stop).await);
    // another replica writes itself into the lease (as after a network partition)
    let api: Api<Lease> = Api::namespaced(env.client().await, "default");
    let mut lease = api.get(DEFAULT_LEASE_NAME).await.unwrap();
    lease.spec.as_mut().unwrap().holder_identity = Some("pod-z".into());
    api.replace(DEFAULT_LEASE_NAME, &Default::default(), &lease)
        .await
        .unwrap();
    let lost = CancellationToken::new();
    let held =
        tokio::time::timeout(Duration::from_secs(5), a.hold(stop.clone(), lost.clone())).await;
    assert!(held.is_ok() && lost.is_cancelled());
}

#[tokio::test]
async fn a_leader_that_did_not_renew_within_the_renew_deadline_stops_leading() {
    let env = start().await;
    let a = LeaderElection::new(env.client().await, settings("pod-a"));
    let leadership = a.leadership();
    assert!(!leadership.is_leading(), "not before the lease is acquired");
    let stop = CancellationToken::new();
    assert!(a.acquire(&stop).await);
    assert!(leadership.is_leading());
    // nobody renews (as when the process is frozen): past the 1.33 s renew deadline, before the
    // 2 s lease expires for the others
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!leadership.is_leading());
    let lost = CancellationToken::new();
    a.hold(stop.clone(), lost.clone()).await;
    assert!(lost.is_cancelled(), "the first renewal attempt gives up");
    assert!(!leadership.is_leading());
}

#[test]
fn the_default_lease_is_the_go_operators() {
    let s = LeaderSettings::new("ns", "me");
    assert_eq!(s.name, "addon-operator-leader-election");
    assert!(s.renew_deadline < s.lease_duration && s.retry_period < s.renew_deadline);
}
