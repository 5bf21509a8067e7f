//! Benchmark client: merge-patches ConfigMaps as fast as a paced, highly concurrent kube-rs client
//! can, each write giving `data.n` a new sequence number; prints how many writes it made and at
//! what rate. Run by `bench/kube-events/run.sh`.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// What to write.
struct Plan {
    namespace: String,
    /// Writes go round-robin to `cm-0` .. `cm-{objects-1}` (they must exist).
    objects: usize,
    writes: usize,
    /// Writes per second to aim at (0: no pacing).
    rate: f64,
    concurrency: usize,
}

fn plan() -> anyhow::Result<(String, Plan)> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: KUBECONFIG NAMESPACE OBJECTS WRITES RATE CONCURRENCY";
    let mut next = || args.next().context(usage);
    let kubeconfig = next()?;
    let plan = Plan {
        namespace: next()?,
        objects: next()?.parse().context("OBJECTS")?,
        writes: next()?.parse().context("WRITES")?,
        rate: next()?.parse().context("RATE")?,
        concurrency: next()?.parse().context("CONCURRENCY")?,
    };
    anyhow::ensure!(plan.objects > 0 && plan.concurrency > 0, "{usage}");
    Ok((kubeconfig, plan))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (kubeconfig, plan) = plan()?;
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    let client = kube::Client::try_from(config)?;
    let api: Api<ConfigMap> = Api::namespaced(client, &plan.namespace);
    let started = Instant::now();
    let results: Vec<bool> = futures::stream::iter(0..plan.writes)
        .map(|seq| write(&api, &plan, started, seq))
        .buffer_unordered(plan.concurrency)
        .collect()
        .await;
    let seconds = started.elapsed().as_secs_f64();
    let ok = results.iter().filter(|ok| **ok).count();
    println!(
        "written {ok} failed {} seconds {seconds:.3} rate {:.0}",
        plan.writes - ok,
        ok as f64 / seconds
    );
    Ok(())
}

/// Write number `seq`: waits for its slot when paced, then sets `data.n` of its object to `seq`.
async fn write(api: &Api<ConfigMap>, plan: &Plan, started: Instant, seq: usize) -> bool {
    if plan.rate > 0.0 {
        let slot = started + Duration::from_secs_f64(seq as f64 / plan.rate);
        tokio::time::sleep_until(slot.into()).await;
    }
    let name = format!("cm-{}", seq % plan.objects);
    let patch = serde_json::json!({"data": {"n": seq.to_string()}});
    let written = api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
    if let Err(e) = &written {
        eprintln!("write {seq} to {name}: {e}");
    }
    written.is_ok()
}
