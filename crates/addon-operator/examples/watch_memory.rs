//! Benchmark: what the operator keeps per watched object, part by part, on the shape of
//! `bench/watch-memory/tree.sh` (issue 39): N ConfigMaps of ~1 KB in SHARDS shards; each shard's
//! watch keeps the objects' bodies and serves MODULES / SHARDS bindings keeping full objects with
//! the jqFilter `{name: .metadata.name, ts: .data.ts}` (one result text shared by them, as the
//! runtime shares it); a global watch of all N keeps no bodies and serves one lean binding
//! (`.metadata.name`). Each part is built as the runtime builds it (the edge's listing, then the
//! binding's cache, a page at a time, each object dropped once its page is in) and measured as
//! the growth of this process's RSS (jemalloc, as the operator), so allocator size classes and
//! B-tree slack are in the figures.
//! Run: `cargo run --profile profiling -p addon-operator --example watch_memory -- [N=100000]`
//! (env SHARDS=10 MODULES=60 SIZE=1024).

use addon_core::binding_context::KeptObject;
use addon_core::hook_config::{HookScope, KubernetesBinding, parse};
use addon_core::monitor::MonitorCache;
use addon_core::names::HookName;
use addon_operator::edges::kube::known::{KnownObjects, Listing};
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Objects listed at once, as the watch pages its list.
const PAGE: usize = 100;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident bytes of this process.
fn rss() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no resident pages in /proc/self/statm"))?;
    Ok(pages * 4096)
}

/// A ConfigMap as the bench creates it and an API server lists it.
fn config_map(i: usize, shards: usize, pad: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": format!("cm-{i:05}"), "namespace": "bench",
            "uid": format!("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", i * 2_654_435_761 % (1 << 32), i % 65_536, i % 4096, (i * 7) % 4096, i * 104_729),
            "resourceVersion": (1000 + i).to_string(),
            "creationTimestamp": "2026-11-27T22:00:00Z",
            "labels": {"shard": (i % shards).to_string()},
        },
        "data": {"ts": "0", "payload": pad},
    })
}

fn binding(config: &str) -> anyhow::Result<KubernetesBinding> {
    let hook = HookName::new("h")?;
    let config = parse(&hook, HookScope::Module, config)
        .map_err(|e| anyhow::anyhow!("hook config: {e:?}"))?;
    config
        .kubernetes
        .first()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no kubernetes binding"))
}

/// Prints one part's growth of RSS per object.
struct Meter {
    last: u64,
    objects: usize,
    total: f64,
}

impl Meter {
    fn part(&mut self, what: &str, per_object_times: f64) -> anyhow::Result<()> {
        let now = rss()?;
        let grown = now.saturating_sub(self.last) as f64 / self.objects as f64;
        self.last = now;
        self.total += grown;
        println!(
            "{what:<58} {grown:>7.0} B/object{}",
            if per_object_times > 1.0 {
                format!(
                    " ({:.0} each of {per_object_times})",
                    grown / per_object_times
                )
            } else {
                String::new()
            }
        );
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let shards = env("SHARDS", 10).max(1);
    let per_shard = (env("MODULES", 60) / shards).max(1);
    let pad = "x".repeat(env("SIZE", 1024).saturating_sub(250));
    let full = binding(
        "configVersion: v1\nkubernetes:\n- name: shard\n  kind: ConfigMap\n  labelSelector: {matchLabels: {shard: '0'}}\n  jqFilter: '{name: .metadata.name, ts: .data.ts}'\n",
    )?;
    let lean = binding(
        "configVersion: v1\nkubernetes:\n- name: all\n  kind: ConfigMap\n  jqFilter: .metadata.name\n  keepFullObjectsInMemory: false\n",
    )?;
    let text = config_map(0, shards, &pad).to_string().len();
    println!(
        "{n} ConfigMaps of {text} B of JSON, {shards} shards, {per_shard} full bindings a shard, one lean global binding"
    );
    let mut meter = Meter {
        last: rss()?,
        objects: n,
        total: 0.0,
    };
    let objects = |shard: usize| (0..n).filter(move |i| i % shards == shard);

    // the shard watches, keeping the bodies
    let mut bodies: Vec<(KnownObjects, Vec<KeptObject>)> = Vec::new();
    for shard in 0..shards {
        let mut listing = Listing::new(true);
        let mut kept = Vec::new();
        for page in chunks(objects(shard), PAGE) {
            let page: Vec<Value> = page.iter().map(|&i| config_map(i, shards, &pad)).collect();
            kept.extend(listing.extend(&page).into_iter().flatten());
        }
        bodies.push((listing.done(), kept));
    }
    meter.part("shard watch: identity, resourceVersion, body", 1.0)?;

    // the first binding of each shard: its filter results and its cache, sharing the bodies
    let mut caches: Vec<MonitorCache> = Vec::new();
    for (shard, (_, kept)) in bodies.iter().enumerate() {
        let mut listing = MonitorCache::listing(&full);
        for (i, body) in objects(shard).zip(kept) {
            let object = config_map(i, shards, &pad);
            listing.push(&object, Some(body.clone()), &full.filter_object(&object)?);
        }
        caches.push(listing.done());
    }
    meter.part("first full binding: entry, name, filter result text", 1.0)?;
    // the other bindings of the shard take the first one's results, as the runtime's do
    for _ in 1..per_shard {
        for (shard, (_, kept)) in bodies.iter().enumerate() {
            let mut listing = MonitorCache::listing(&full);
            for (i, body) in objects(shard).zip(kept) {
                let object = config_map(i, shards, &pad);
                let filtered = MonitorCache::filtered_copy(&[&caches[shard]], &object, body)
                    .ok_or_else(|| anyhow::anyhow!("no result to share"))?;
                listing.push(&object, Some(body.clone()), &filtered);
            }
            caches.push(listing.done());
        }
    }
    meter.part(
        "other full bindings: entry (name and result shared)",
        (per_shard - 1) as f64,
    )?;

    // the global lean watch and its binding
    let mut global = Listing::new(false);
    for page in chunks(0..n, PAGE) {
        let page: Vec<Value> = page.iter().map(|&i| config_map(i, shards, &pad)).collect();
        global.extend(&page);
    }
    let global = global.done();
    meter.part("global lean watch: identity, resourceVersion", 1.0)?;
    let mut cache = MonitorCache::listing(&lean);
    for page in chunks(0..n, PAGE) {
        let page: Vec<Value> = page.iter().map(|&i| config_map(i, shards, &pad)).collect();
        for object in &page {
            cache.push(object, None, &lean.filter_object(object)?);
        }
    }
    let cache = cache.done();
    meter.part("global lean binding: entry, name, filter result text", 1.0)?;
    let (text, held) = (bodies.iter().flat_map(|(_, kept)| kept))
        .fold((0, 0), |(t, h), k| (t + k.len(), h + k.held()));
    println!(
        "a body: {} B of JSON text, held in {} B",
        text / n.max(1),
        held / n.max(1)
    );
    println!(
        "{:<58} {:>7.0} B/object ({} caches, {} watches)",
        "total",
        meter.total,
        caches.len() + 1,
        bodies.len() + 1
    );
    std::hint::black_box((&bodies, &caches, &global, &cache));
    Ok(())
}

/// `items` in vectors of `size`.
fn chunks(items: impl Iterator<Item = usize>, size: usize) -> Vec<Vec<usize>> {
    let items: Vec<usize> = items.collect();
    items.chunks(size).map(<[usize]>::to_vec).collect()
}
