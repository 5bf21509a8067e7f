//! Benchmark: parsing a `$METRICS_PATH` file of N lines (default 1,000,000) vs counting its lines.
//!
//! Usage: `metrics_parse [N]`. Prints the time of each variant (best of 3) and the ratio to the
//! plain line count; never asserts.

use std::time::{Duration, Instant};

use addon_core::hook_output::metrics;

fn main() {
    let lines: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let text = file(lines);
    println!("{lines} lines, {} MB", text.len() / 1_000_000);
    let count = best_of(3, || text.lines().count());
    let stream = best_of(3, || {
        serde_json::Deserializer::from_str(&text)
            .into_iter::<serde_json::Value>()
            .count()
    });
    let parse = best_of(3, || metrics::parse(&text).map_or(0, |ops| ops.len()));
    report("line count (baseline)", count, count);
    report("serde_json stream only", stream, count);
    report("metrics::parse", parse, count);
}

/// A metrics file with the operations hooks write: gauges, counters, histograms, groups.
fn file(lines: usize) -> String {
    (0..lines)
        .map(|i| match i % 4 {
            0 => format!(r#"{{"name":"hook_gauge","action":"set","value":{i},"labels":{{"pod":"p{i}"}}}}"#),
            1 => format!(r#"{{"name":"hook_total","action":"add","value":1,"group":"g{}"}}"#, i % 10),
            2 => format!(r#"{{"name":"hook_seconds","action":"observe","value":0.{i},"buckets":[0.1,1,10]}}"#),
            _ => r#"{"name":"hook_shortcut","set":3}"#.to_string(),
        } + "\n")
        .collect()
}

fn best_of<T>(rounds: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = None;
    for _ in 0..rounds {
        let started = Instant::now();
        let out = f();
        let took = started.elapsed();
        if best.as_ref().is_none_or(|(b, _)| took < *b) {
            best = Some((took, out));
        }
    }
    best.unwrap_or_else(|| (Duration::ZERO, f()))
}

fn report<T: std::fmt::Debug, U>(name: &str, (took, out): (Duration, T), base: (Duration, U)) {
    let ratio = took.as_secs_f64() / base.0.as_secs_f64().max(1e-9);
    println!(
        "{name:<24} {:>10.1} ms  x{ratio:>7.1}  ({out:?})",
        took.as_secs_f64() * 1e3
    );
}
