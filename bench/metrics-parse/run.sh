#!/usr/bin/env bash
# Metrics file parsing: N lines of hook metric operations through addon_core::hook_output::metrics::parse
# vs a plain line count of the same text. Usage: bench/metrics-parse/run.sh [N] (default 1000000).
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "rustc: $(rustc --version)"
cargo build --release -q -p addon-core --example metrics_parse
./target/release/examples/metrics_parse "${1:-1000000}"
