//! Benchmark: the jq engine's cost per object on the filters hooks use, in this process (no sandbox).
//!
//! Usage: `jq_engine [N]` (default 20,000 pods of ~520 bytes). Prints µs per object for each
//! filter, best of 3 rounds; never asserts. `bench/jq-sandbox/run.sh` runs it beside the
//! sandbox figures.

use std::time::Instant;

use addon_core::jq::JqFilter;
use serde_json::{Value, json};

const FILTERS: &[&str] = &[
    "{name: .metadata.name, labels: .metadata.labels, node: .spec.nodeName}",
    ".metadata.name",
    ".metadata.labels | to_entries | map(\"\\(.key)=\\(.value)\") | join(\",\")",
    "[.spec.containers[] | {name, image}]",
    ".metadata.labels.checked = \"yes\"",
    ".",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let objects: Vec<Value> = (0..n).map(pod).collect();
    println!(
        "{n} pods of {} bytes",
        serde_json::to_vec(&objects[0])?.len()
    );
    for src in FILTERS {
        let filter = JqFilter::compile(src)?;
        let mut best = f64::MAX;
        for _ in 0..3 {
            let start = Instant::now();
            for o in &objects {
                std::hint::black_box(filter.apply(o)?);
            }
            best = best.min(start.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
        println!("{best:>8.2} µs/object  {src}");
    }
    Ok(())
}

fn pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i}"),
            "namespace": "default",
            "uid": format!("00000000-0000-0000-0000-{i:012}"),
            "resourceVersion": format!("{}", 1000 + i),
            "labels": {"app": "proxy", "tier": "web", "pod-template-hash": "5d4f8c"},
            "annotations": {"checksum/config": "0123456789abcdef"}
        },
        "spec": {
            "nodeName": format!("node-{:02}", i % 16),
            "containers": [{"name": "proxy", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]
        },
        "status": {"phase": "Running", "podIP": format!("10.0.{}.{}", i / 256 % 256, i % 256)}
    })
}
