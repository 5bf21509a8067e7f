//! Leader election over a Lease: one holder at a time, takeover after expiry, loss detected.

use std::time::Duration;

use addon_operator::kube::leader::{LeaderElection, LeaderSettings};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio_util::sync::CancellationToken;

use crate::common::start;

fn settings(identity: &str) -> LeaderSettings {
    LeaderSettings {
        lease_duration: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
        ..LeaderSettings::new("default", identity)
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
    let started = std::time::Instant::now();
    assert!(b.acquire(&stop).await);
    assert!(started.elapsed() < Duration::from_secs(5));
    let lease: Lease = Api::namespaced(env.client().await, "default")
        .get("addon-operator-leader")
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
    let mut lease = api.get("addon-operator-leader").await.unwrap();
    lease.spec.as_mut().unwrap().holder_identity = Some("pod-z".into());
    api.replace("addon-operator-leader", &Default::default(), &lease)
        .await
        .unwrap();
    let lost = CancellationToken::new();
    let held =
        tokio::time::timeout(Duration::from_secs(5), a.hold(stop.clone(), lost.clone())).await;
    assert!(held.is_ok() && lost.is_cancelled());
}
