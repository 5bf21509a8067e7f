//! Transient API errors while the operator starts (it reads its ConfigMap first) never stop it:
//! it stays not ready with the reason on `/readyz`, retries, becomes ready and keeps running.

use std::time::{Duration, Instant};

use crate::cluster::{Cluster, get, http_addr, operator_log, start_operator};
use crate::support::write;

/// Starts an operator while the next 20 API requests answer `code`; returns the `/readyz`
/// answers seen before it became ready (within 120 s, without exiting).
fn start_through_faults(code: u16) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("global-hooks/startup"),
        "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; fi\n",
        true,
    );
    std::fs::create_dir_all(root.join("modules")).unwrap();
    let cluster = Cluster::start(root);
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\n  namespace: default\ndata:\n  global: \"a: 1\"\n";
    cluster
        .kubectl(&["apply", "--validate=false", "-f", "-"], Some(config))
        .unwrap();
    cluster.emulator.fail_next_requests(20, code);
    let mut operator = start_operator(root, &cluster, &[]);
    let addr = http_addr(root);
    let started = Instant::now();
    let mut not_ready = Vec::new();
    loop {
        match get(&addr, "/readyz") {
            Some((200, _)) => break,
            Some((_, body)) => not_ready.push(body),
            None => {}
        }
        let exited = operator.0.try_wait().unwrap();
        assert!(
            exited.is_none() && started.elapsed() < Duration::from_secs(120),
            "the operator exited ({exited:?}) or is not ready after {:?}:\n{}",
            started.elapsed(),
            operator_log(root)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(operator.0.try_wait().unwrap().is_none(), "still running");
    not_ready
}

#[test]
fn internal_errors_while_reading_the_configmap_delay_readiness_only() {
    let not_ready = start_through_faults(500);
    assert!(
        not_ready
            .iter()
            .any(|b| b.starts_with("Not ready: reading the config failed") && b.contains("500")),
        "{not_ready:?}"
    );
}

#[test]
fn throttling_at_startup_is_retried_after_the_servers_delay() {
    // 20 answers with `Retry-After: 1` cost about 20 s; kube-rs's default retries kept the
    // operator unready for minutes, past the 120 s `start_through_faults` allows
    let not_ready = start_through_faults(429);
    assert!(
        not_ready.iter().any(|b| b.starts_with("Not ready: ")),
        "{not_ready:?}"
    );
}
