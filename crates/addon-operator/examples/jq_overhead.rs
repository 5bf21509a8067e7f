//! Benchmark: the cost per object of evaluating a binding's jqFilter in the jq sandbox process
//! (batched like a listing, and one object per request like a watch event) vs the interpreter in
//! this process vs the projection fast path (`JqFilter::apply_projection`, which the runtime
//! takes before the sandbox for filters like this one).
//!
//! Usage: `jq_overhead [N] [ADDON_OPERATOR_BINARY]` (default 20,000 objects; the binary defaults
//! to `addon-operator` next to this example's directory). Prints µs per object; never asserts.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use addon_core::jq::JqFilter;
use addon_operator::edges::jq::{JqSandbox, MAX_BATCH, SandboxSettings};
use serde_json::{Value, json};

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let program = std::env::args()
        .nth(2)
        .map(PathBuf::from)
        .or_else(default_binary)
        .ok_or_else(|| anyhow::anyhow!("give the addon-operator binary"))?;
    let objects: Vec<Value> = (0..n).map(pod).collect();
    let size = serde_json::to_vec(&objects[0])?.len();
    println!(
        "{n} pods of {size} bytes, filter '{FILTER}', child {}",
        program.display()
    );
    let filter = JqFilter::compile(FILTER)?;
    let mut settings = SandboxSettings::for_current_exe(Duration::from_secs(30), 1 << 30);
    settings.program = program;
    // The sandbox itself, not `JqRunner`: the runner would answer this projection in process.
    let sandbox = JqSandbox::new(settings);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let _ = sandbox.run(&filter, &objects[..1]).await; // start the child
        let local = time(|| async {
            let results: Vec<_> = objects.iter().map(|o| filter.apply(o)).collect();
            Ok(results.len())
        })
        .await;
        let fast = time(|| async {
            let results: Vec<_> = objects.iter().map(|o| filter.apply_projection(o)).collect();
            Ok(results.len())
        })
        .await;
        let batched = time(|| async {
            let mut count = 0;
            for chunk in objects.chunks(MAX_BATCH) {
                count += sandbox.run(&filter, chunk).await?.len();
            }
            Ok(count)
        })
        .await;
        let single = time(|| async {
            let mut count = 0;
            for object in &objects {
                sandbox.run(&filter, std::slice::from_ref(object)).await?;
                count += 1;
            }
            Ok(count)
        })
        .await;
        for (name, took) in [
            ("in process", local),
            ("projection fast path", fast),
            ("sandbox, batches of 256", batched),
            ("sandbox, one per request", single),
        ] {
            let per = took.as_secs_f64() * 1e6 / n as f64;
            println!(
                "{name:<26} {per:>8.1} µs/object  x{:>5.1}",
                per / (local.as_secs_f64() * 1e6 / n as f64)
            );
        }
    });
    Ok(())
}

const FILTER: &str = "{name: .metadata.name, labels: .metadata.labels, node: .spec.nodeName}";

fn default_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("addon-operator"))
}

async fn time<F, Fut>(f: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<usize, addon_core::jq::JqError>>,
{
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let _ = f().await;
        best = best.min(started.elapsed());
    }
    best
}

fn pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i}"), "namespace": "default", "uid": format!("uid-{i}"),
            "resourceVersion": "1", "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "abc"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}},
        "spec": {"nodeName": format!("node-{}", i % 10), "containers": [{"name": "web", "image": "nginx:1.27",
            "ports": [{"containerPort": 80}], "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
    })
}
