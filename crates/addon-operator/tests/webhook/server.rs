//! One webhook server with a stub answerer.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use addon_operator::edges::webhook::{Answerer, Reply, TlsFiles, WebhookServer};
use futures::future::BoxFuture;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

use crate::client::{certs, connector, post_declaring, request, request_with_peer};

/// Records what it is asked and echoes the path; waits on `barrier` first when given.
#[derive(Default)]
struct Echo {
    seen: Mutex<Vec<(String, Value)>>,
    barrier: Option<Arc<Barrier>>,
}

impl Answerer for Echo {
    fn answer(&self, path: String, review: Value) -> BoxFuture<'static, Reply> {
        self.seen.lock().unwrap().push((path.clone(), review));
        let barrier = self.barrier.clone();
        Box::pin(async move {
            if let Some(b) = barrier {
                b.wait().await;
            }
            if path == "/bad" {
                return Reply::BadRequest("not a review".into());
            }
            Reply::Review(json!({"path": path}))
        })
    }
}

fn files(dir: &std::path::Path, client_cas: Vec<PathBuf>) -> TlsFiles {
    TlsFiles {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
        client_cas,
    }
}

async fn start(tls: &TlsFiles, answerer: Arc<Echo>) -> (SocketAddr, CancellationToken) {
    let server = WebhookServer::bind("127.0.0.1:0".parse().unwrap(), tls)
        .await
        .unwrap()
        .with_body_timeout(Duration::from_millis(500));
    let addr = server.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(server.run(answerer, stop.clone()));
    (addr, stop)
}

#[tokio::test]
async fn healthz_answers_over_tls_checked_against_the_ca() {
    let (addr, stop) = start(&files(&certs(), vec![]), Arc::default()).await;
    let got = request(&connector(None), addr, "GET", "/healthz", "").await;
    assert_eq!(got, Ok((200, "ok".to_string())));
    stop.cancel();
}

#[tokio::test]
async fn a_posted_review_reaches_the_answerer_with_its_path() {
    let echo = Arc::new(Echo::default());
    let (addr, stop) = start(&files(&certs(), vec![]), echo.clone()).await;
    let c = connector(None);
    let (status, body) = request(
        &c,
        addr,
        "POST",
        "/hooks/policy-example-com",
        r#"{"kind":"AdmissionReview"}"#,
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"path": "/hooks/policy-example-com"})
    );
    assert_eq!(
        echo.seen.lock().unwrap().clone(),
        vec![(
            "/hooks/policy-example-com".to_string(),
            json!({"kind": "AdmissionReview"})
        )]
    );
    let (status, body) = request(&c, addr, "POST", "/x", "{not json").await.unwrap();
    assert_eq!(status, 400);
    assert!(body.starts_with("Invalid JSON payload"), "{body}");
    let (status, body) = request(&c, addr, "POST", "/bad", "{}").await.unwrap();
    assert_eq!((status, body.as_str()), (400, "not a review\n"));
    stop.cancel();
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_or_is_too_large_is_refused_before_the_answerer() {
    let echo = Arc::new(Echo::default());
    let (addr, stop) = start(&files(&certs(), vec![]), echo.clone()).await;
    let c = connector(None);
    // 100 bytes announced, 2 sent, the connection kept open: answered when the time is up
    let trickled = post_declaring(&c, addr, 100, "{}");
    let (status, body) = tokio::time::timeout(Duration::from_secs(20), trickled)
        .await
        .expect("a request whose body never arrives is answered")
        .unwrap();
    assert_eq!(status, 408, "{body}");
    assert!(body.contains("did not arrive within"), "{body}");
    let huge = addon_operator::edges::webhook::MAX_BODY_BYTES + 1;
    let (status, body) = post_declaring(&c, addr, huge, "{}").await.unwrap();
    assert_eq!(status, 413, "{body}");
    assert!(
        echo.seen.lock().unwrap().is_empty(),
        "the answerer was asked"
    );
    // the server goes on serving
    let got = request(&c, addr, "POST", "/ok", "{}").await.unwrap();
    assert_eq!(got.0, 200);
    stop.cancel();
}

#[tokio::test]
async fn requests_are_served_concurrently() {
    // both requests must be inside the answerer at once for either to finish
    let echo = Arc::new(Echo {
        barrier: Some(Arc::new(Barrier::new(2))),
        ..Echo::default()
    });
    let (addr, stop) = start(&files(&certs(), vec![]), echo).await;
    let c = connector(None);
    let both = futures::future::join(
        request(&c, addr, "POST", "/a", "{}"),
        request(&c, addr, "POST", "/b", "{}"),
    );
    let (a, b) = tokio::time::timeout(Duration::from_secs(20), both)
        .await
        .expect("two requests waiting for each other deadlocked: they are served one at a time");
    assert_eq!(a.unwrap().0, 200);
    assert_eq!(b.unwrap().0, 200);
    stop.cancel();
}

#[tokio::test]
async fn with_a_client_ca_only_clients_with_a_signed_certificate_get_in() {
    let tls = files(&certs(), vec![certs().join("client-ca.crt")]);
    let (addr, stop) = start(&tls, Arc::default()).await;
    let anonymous = request(&connector(None), addr, "GET", "/healthz", "").await;
    assert!(anonymous.is_err(), "{anonymous:?}");
    let signed = connector(Some(("client.crt", "client.key")));
    assert_eq!(
        request(&signed, addr, "GET", "/healthz", "").await,
        Ok((200, "ok".to_string()))
    );
    // a server certificate is no client certificate of the client CA
    let other = connector(Some(("tls.crt", "tls.key")));
    assert!(request(&other, addr, "GET", "/healthz", "").await.is_err());
    stop.cancel();
}

#[tokio::test]
async fn a_rotated_certificate_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(certs().join("tls.crt"), dir.path().join("tls.crt")).unwrap();
    std::fs::copy(certs().join("tls.key"), dir.path().join("tls.key")).unwrap();
    let (addr, stop) = start(&files(dir.path(), vec![]), Arc::default()).await;
    let der = |name: &str| {
        CertificateDer::from_pem_file(certs().join(name))
            .unwrap()
            .to_vec()
    };
    let c = connector(None);
    let (_, _, first) = request_with_peer(&c, addr, "GET", "/healthz", "")
        .await
        .unwrap();
    assert_eq!(first, der("tls.crt"));
    // as cert-manager does: new files in place (key first, then the certificate)
    std::fs::copy(certs().join("tls2.key"), dir.path().join("tls.key")).unwrap();
    std::fs::copy(certs().join("tls2.crt"), dir.path().join("tls.crt")).unwrap();
    // a new client: a resumed TLS session would not show the server's certificate again
    let fresh = connector(None);
    let (status, _, second) = request_with_peer(&fresh, addr, "GET", "/healthz", "")
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(second, der("tls2.crt"));
    stop.cancel();
}

#[tokio::test]
async fn missing_certificates_fail_the_start_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let err = WebhookServer::bind("127.0.0.1:0".parse().unwrap(), &files(dir.path(), vec![]))
        .await
        .err()
        .unwrap();
    // the path is said once along the chain (the top error does not repeat its cause)
    let chain = addon_core::error::error_chain(&err);
    assert!(chain.starts_with("webhook server: read "), "{chain}");
    assert_eq!(chain.matches("tls.crt").count(), 1, "{chain}");
}

#[tokio::test]
async fn a_taken_port_fails_the_start_saying_the_cause_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let err = WebhookServer::bind(address, &files(&certs(), vec![]))
        .await
        .err()
        .unwrap();
    let chain = addon_core::error::error_chain(&err);
    assert!(
        chain.starts_with("webhook server: listen on 127.0.0.1:"),
        "{chain}"
    );
    assert_eq!(
        chain.matches("Address already in use").count(),
        1,
        "{chain}"
    );
}
