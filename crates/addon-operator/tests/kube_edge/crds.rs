//! A module's CRDs are served once Established; a CRD that never appears is a clear error.

use std::time::Duration;

use addon_operator::edges::kube::crds::{CrdWaitError, wait_established};
use serde_json::json;

use crate::common::start;

#[tokio::test]
async fn a_created_crd_is_established_and_a_missing_one_times_out() {
    let env = start().await;
    env.create(
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
                 "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
    )
    .await;
    let client = env.client().await;
    let names = ["crontabs.stable.example.com".to_string()];
    wait_established(&client, &names, Duration::from_secs(5))
        .await
        .unwrap();
    let missing = ["backups.stable.example.com".to_string()];
    let error = wait_established(&client, &missing, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(
        matches!(error, CrdWaitError::NotEstablished { .. }),
        "{error}"
    );
    let error = error.to_string();
    assert!(error.contains("backups.stable.example.com") && error.contains("not Established"));
}
