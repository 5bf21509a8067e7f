//! The operator's webhook server under idle connections: many more idle TCP connections than its handshake bound leave it answering, and the operator's descriptors stay bounded.

use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::Duration;

use crate::support::{Running, start_command, wait_for};
use crate::webhook_client::{connector_trusting, request};
use crate::webhooks::{POLICY_HOOK, cron_tree, free_port};

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn idle_connections_past_the_bounds_keep_the_server_answering_with_few_descriptors() {
    let tmp = cron_tree(&[("policy", POLICY_HOOK)]);
    let root = tmp.path();
    let port = free_port();
    let log = root.join("operator.log");
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .args(["--validating-webhook-listen-address", "127.0.0.1"])
        .args(["--validating-webhook-listen-port", &port.to_string()])
        .args(["--webhook-max-handshakes", "8"])
        .args(["--webhook-max-connections", "32"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let running = Running(child);
    let pid = running.0.id();
    let ca = root.join("tmp/webhook-certs/validating/ca.crt");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let healthz = || {
        let connector = connector_trusting(&ca, None);
        rt.block_on(async {
            let asked = request(&connector, addr, "GET", "/healthz", "");
            tokio::time::timeout(Duration::from_secs(5), asked).await
        })
    };
    wait_for("the admission server", &log, || {
        ca.exists() && matches!(healthz(), Ok(Ok((200, _))))
    });
    // the hooks' and tree's descriptors settle once the start is done
    std::thread::sleep(Duration::from_millis(500));
    let before = descriptors(pid);

    let idle: Vec<TcpStream> = (0..400)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(healthz().unwrap(), Ok((200, "ok".to_string())));
    let during = descriptors(pid);
    // at most the 8 handshakes under way, and a few the runtime may open meanwhile
    assert!(
        during <= before + 8 + 4,
        "{during} descriptors with {} idle connections, {before} before",
        idle.len()
    );
}
