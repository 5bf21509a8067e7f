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
async fn spawn(data_dir: &Path, kubeconfig: &Path) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args([
            "--port",
            "0",
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
    let (mut child, _) = spawn(&data, &kubeconfig).await;
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

    let (_child, _) = spawn(&data, &kubeconfig).await;
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
