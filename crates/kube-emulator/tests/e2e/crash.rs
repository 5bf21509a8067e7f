//! The `kube-emulator` binary: `--help`, and crash safety of `--data-dir` under `kill -9`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::client_for;

const BIN: &str = env!("CARGO_BIN_EXE_kube-emulator");

/// Starts the binary and returns it with the URL it printed.
async fn spawn(data_dir: &Path, kubeconfig: &Path, port: u16) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args([
            "--port",
            &port.to_string(),
            "--data-dir",
            data_dir.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line.rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    (child, url)
}

#[tokio::test]
async fn a_killed_emulator_restarts_with_every_acknowledged_write_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kubeconfig = dir.path().join("kubeconfig");
    let (mut child, _) = spawn(&data, &kubeconfig, 0).await;
    let cms: Api<ConfigMap> = Api::namespaced(
        client_for(&std::fs::read_to_string(&kubeconfig).unwrap()).await,
        "default",
    );
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("c{i:02}")}, "data": {"i": i.to_string()}}),
        )
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
        let patch = json!({"data": {"patched": "yes"}});
        let patched = cms
            .patch(
                &format!("c{i:02}"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .unwrap();
        acknowledged.push((
            patched.metadata.name.unwrap(),
            patched.metadata.resource_version.unwrap(),
        ));
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    let (_child, _) = spawn(&data, &kubeconfig, 0).await;
    let cms: Api<ConfigMap> = Api::namespaced(
        client_for(&std::fs::read_to_string(&kubeconfig).unwrap()).await,
        "default",
    );
    let listed = cms.list(&ListParams::default()).await.unwrap();
    let restored: Vec<(String, String)> = listed
        .items
        .into_iter()
        .map(|c| {
            (
                c.metadata.name.unwrap(),
                c.metadata.resource_version.unwrap(),
            )
        })
        .collect();
    assert_eq!(restored, acknowledged);
    let next = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "next"}})).unwrap(),
        )
        .await
        .unwrap();
    let last: u64 = acknowledged.last().unwrap().1.parse().unwrap();
    assert!(
        next.metadata
            .resource_version
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > last
    );
}

#[tokio::test]
async fn help_documents_every_flag() {
    let out = Command::new(BIN).arg("--help").output().await.unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--port",
        "--data-dir",
        "--kubeconfig",
        "--history-limit",
        "--bookmark-seconds",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_during_writes_loses_no_acknowledged_write_and_the_port_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kubeconfig = dir.path().join("kubeconfig");
    let (mut child, url) = spawn(&data, &kubeconfig, 0).await;
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let kubeconfig_text = std::fs::read_to_string(&kubeconfig).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client_for(&kubeconfig_text).await, "default");
    let (acked_tx, mut acked_rx) = tokio::sync::mpsc::unbounded_channel();
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (cms, acked_tx) = (cms.clone(), acked_tx.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let cm: ConfigMap =
                        serde_json::from_value(json!({"metadata": {"name": format!("w{w}-{i}")}}))
                            .unwrap();
                    match cms.create(&PostParams::default(), &cm).await {
                        Ok(created) => acked_tx
                            .send((
                                created.metadata.name.unwrap(),
                                created.metadata.resource_version.unwrap(),
                            ))
                            .unwrap(),
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    drop(acked_tx);
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 60 {
        acknowledged.push(acked_rx.recv().await.unwrap());
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    for writer in writers {
        writer.await.unwrap();
    }
    while let Some(ack) = acked_rx.recv().await {
        acknowledged.push(ack);
    }

    let (_child, restarted) = spawn(&data, &kubeconfig, port).await;
    assert_eq!(restarted, url);
    let listed = cms.list(&ListParams::default()).await.unwrap();
    let stored: std::collections::HashMap<String, String> = listed
        .items
        .into_iter()
        .map(|c| {
            (
                c.metadata.name.unwrap(),
                c.metadata.resource_version.unwrap(),
            )
        })
        .collect();
    for (name, rv) in &acknowledged {
        assert_eq!(
            stored.get(name),
            Some(rv),
            "acknowledged {name} at {rv} was lost"
        );
    }
}
