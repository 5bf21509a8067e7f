//! The admission chain's failure handling: an unreachable webhook or one that never answers within `timeoutSeconds` follows its `failurePolicy`; rules and object selectors decide which requests it sees.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::common::{RawResponse, raw_request, start};

fn ca_bundle() -> String {
    let ca = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../addon-operator/tests/fixtures/webhook-certs/ca.crt");
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(ca).unwrap())
}

fn configuration(name: &str, url: &str, policy: &str, selector: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": format!("{name}.example.com"),
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
            "objectSelector": selector,
            "failurePolicy": policy,
            "timeoutSeconds": 1,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": url, "caBundle": ca_bundle()}
        }]
    })
}

async fn post(url: &str, path: &str, body: &Value) -> RawResponse {
    raw_request(
        url,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await
}

fn configmap(name: &str, label: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"w": label}}})
}

#[tokio::test]
async fn unreachable_and_silent_webhooks_follow_their_failure_policy() {
    let env = start().await;
    let url = env.emu.url();
    // a port nobody listens on, and a listener that never answers the handshake
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("https://{}/x", closed.local_addr().unwrap());
    drop(closed);
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("https://{}/x", silent.local_addr().unwrap());
    let configs = [
        configuration(
            "ignore",
            &closed_url,
            "Ignore",
            json!({"matchLabels": {"w": "ignore"}}),
        ),
        configuration(
            "fail",
            &closed_url,
            "Fail",
            json!({"matchLabels": {"w": "fail"}}),
        ),
        configuration(
            "late",
            &silent_url,
            "Fail",
            json!({"matchLabels": {"w": "late"}}),
        ),
    ];
    let path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    for c in &configs {
        assert_eq!(post(&url, path, c).await.status, 201);
    }
    let cms = "/api/v1/namespaces/default/configmaps";
    assert_eq!(post(&url, cms, &configmap("a", "ignore")).await.status, 201);
    assert_eq!(post(&url, cms, &configmap("b", "none")).await.status, 201);
    let failed = post(&url, cms, &configmap("c", "fail")).await;
    assert_eq!(failed.status, 500);
    let message = failed.json()["message"].as_str().unwrap().to_string();
    assert!(
        message
            .starts_with("Internal error occurred: failed calling webhook \"fail.example.com\":"),
        "{message}"
    );
    let late = post(&url, cms, &configmap("d", "late")).await;
    assert_eq!(late.status, 500);
    assert_eq!(
        late.json()["message"],
        "Internal error occurred: failed calling webhook \"late.example.com\": context deadline exceeded"
    );
    // nothing was stored for the refused requests
    let get = raw_request(&url, "GET", &format!("{cms}/c"), &[], b"").await;
    assert_eq!(get.status, 404);
    drop(silent);
}
