//! One webhook server's bounds: past `max_connections` new connections are closed until one ends, and idle sockets past `max_handshakes` are dropped oldest first so a real client still gets in.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use addon_operator::edges::webhook::{Answerer, Limits, Reply, TlsFiles, WebhookServer};
use futures::future::BoxFuture;
use rustls_pki_types::ServerName;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::client::{certs, connector, request};

struct Nobody;

impl Answerer for Nobody {
    fn answer(&self, _path: String, _review: Value) -> BoxFuture<'static, Reply> {
        Box::pin(async { Reply::BadRequest("no".into()) })
    }
}

async fn start(limits: Limits) -> (SocketAddr, CancellationToken) {
    let tls = TlsFiles {
        cert: certs().join("tls.crt"),
        key: certs().join("tls.key"),
        client_cas: Vec::new(),
    };
    let server = WebhookServer::bind("127.0.0.1:0".parse().unwrap(), &tls)
        .await
        .unwrap()
        .with_limits(limits);
    let addr = server.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(server.run(Arc::new(Nobody), stop.clone()));
    (addr, stop)
}

async fn healthz(addr: SocketAddr) -> Result<(u16, String), String> {
    request(&connector(None), addr, "GET", "/healthz", "").await
}

#[tokio::test]
async fn past_max_connections_new_connections_are_closed_until_one_ends() {
    let limits = Limits {
        max_connections: 3,
        ..Limits::default()
    };
    let (addr, stop) = start(limits).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        held.push(connector(None).connect(name, tcp).await.unwrap());
    }
    assert!(
        healthz(addr).await.is_err(),
        "a fourth connection was served"
    );
    held.pop();
    let mut answered = None;
    for _ in 0..50 {
        if let Ok(answer) = healthz(addr).await {
            answered = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(answered, Some((200, "ok".to_string())));
    stop.cancel();
}

#[tokio::test]
async fn idle_sockets_past_max_handshakes_are_dropped_oldest_first_and_a_client_gets_in() {
    let limits = Limits {
        max_handshakes: 4,
        ..Limits::default()
    };
    let (addr, stop) = start(limits).await;
    let mut idle = Vec::new();
    for _ in 0..50 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let answered = tokio::time::timeout(Duration::from_secs(5), healthz(addr)).await;
    assert_eq!(answered.unwrap(), Ok((200, "ok".to_string())));
    // the server closed all but the newest handshakes (well before the 10 s timeout)
    let mut closed = 0;
    for socket in &mut idle {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_millis(200), socket.read(&mut byte)).await;
        closed += usize::from(matches!(read, Ok(Ok(0)) | Ok(Err(_))));
    }
    assert!(closed >= 46, "{closed} of 50 idle sockets closed");
    stop.cancel();
}
