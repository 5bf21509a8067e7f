//! Shared harness: an emulator per test, a client built like the operator builds it, and helpers to create objects and await events.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use addon_core::hook_config::{self, HookScope, KubernetesBinding};
use addon_core::names::HookName;
use addon_operator::edges::kube::{KindResolver, KubeEdge, connect};
use addon_operator::runtime::edges::{KubeEvent, MonitorKey};
use addon_operator_testkit::wait::wait_for_async;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use kube_emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::mpsc;

/// One emulator and a kubeconfig pointing at it.
pub struct Env {
    pub emu: EmulatorHandle,
    pub _dir: TempDir,
    pub kubeconfig: PathBuf,
}

pub async fn start() -> Env {
    let emu = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig).unwrap();
    Env {
        emu,
        _dir: dir,
        kubeconfig,
    }
}

impl Env {
    /// Waits until the emulator serves exactly `n` watches of the core `resource`: the edge's
    /// watch started (or, with fewer than before, one stopped).
    pub async fn watching(&self, resource: &str, n: usize) {
        let open = || async { self.emu.open_watches("", resource) == n };
        let seen = || format!("open: {}", self.emu.open_watches("", resource));
        let what = format!("{n} open watch(es) of {resource}");
        wait_for_async(&what, Duration::from_secs(10), open, seen).await;
    }

    pub async fn client(&self) -> kube::Client {
        connect(Some(&self.kubeconfig)).await.unwrap()
    }

    /// The edge as the operator builds it.
    pub async fn edge(&self) -> KubeEdge {
        KubeEdge::connect(Some(&self.kubeconfig)).await.unwrap()
    }

    pub async fn resolver(&self) -> Arc<KindResolver> {
        self.edge().await.resolver
    }

    /// Creates a namespace (namespaced objects need theirs to exist).
    pub async fn namespace(&self, name: &str) {
        self.create(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
            .await;
    }

    /// Creates `object` (JSON with apiVersion, kind, metadata) and returns it as stored.
    pub async fn create(&self, object: Value) -> Value {
        let api = self.api_of(&object).await;
        let obj: DynamicObject = serde_json::from_value(object).unwrap();
        serde_json::to_value(api.create(&PostParams::default(), &obj).await.unwrap()).unwrap()
    }

    /// The API for the kind and namespace of `object`.
    pub async fn api_of(&self, object: &Value) -> Api<DynamicObject> {
        let resolver = self.resolver().await;
        let resolved = resolver
            .resolve(
                object["apiVersion"].as_str(),
                object["kind"].as_str().unwrap(),
            )
            .await
            .unwrap();
        let ar: ApiResource = resolved.resource;
        match object["metadata"]["namespace"].as_str() {
            Some(ns) => Api::namespaced_with(self.client().await, ns, &ar),
            None => Api::all_with(self.client().await, &ar),
        }
    }
}

/// The kubernetes bindings of a v1 hook config given as YAML.
pub fn bindings(yaml: &str) -> Vec<KubernetesBinding> {
    let text = format!("configVersion: v1\nkubernetes:\n{yaml}");
    let hook = HookName::new("test-hook").unwrap();
    hook_config::parse(&hook, HookScope::Global, &text)
        .unwrap()
        .kubernetes
}

pub fn key(binding: usize) -> MonitorKey {
    MonitorKey {
        module: None,
        hook: HookName::new("test-hook").unwrap(),
        binding,
    }
}

pub fn pod(ns: &str, name: &str, app: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    })
}

/// `(event, namespace/name)` of a watch event.
pub fn describe(ev: &KubeEvent) -> (String, String) {
    let meta = &ev.object["metadata"];
    (
        ev.event.as_str().to_string(),
        format!(
            "{}/{}",
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default()
        ),
    )
}

/// The next `n` events, failing after 10 s.
pub async fn next_events(rx: &mut mpsc::Receiver<KubeEvent>, n: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(ev)) => out.push(describe(&ev)),
            Ok(None) => panic!("channel closed; got {out:?}"),
            Err(_) => panic!("timed out waiting for {n} events; got {out:?}"),
        }
    }
    out
}

/// Fails if an event arrives within `wait`.
pub async fn no_events(rx: &mut mpsc::Receiver<KubeEvent>, wait: Duration) {
    if let Ok(Some(ev)) = tokio::time::timeout(wait, rx.recv()).await {
        panic!("unexpected event {:?}", describe(&ev));
    }
}

/// Names (`namespace/name`) of a list of objects, sorted.
pub fn names(objects: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    out
}
