#!/usr/bin/env bash
# jqFilter cost per object: in process vs the jq sandbox child (batched, and one object per request),
# then the jq engine alone on the filters hooks use (crates/addon-core/examples/jq_engine.rs).
# Usage: bench/jq-sandbox/run.sh [N] (default 20000 objects).
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "rustc: $(rustc --version)"
cargo build --release -q -p addon-operator --bin addon-operator --example jq_overhead
cargo build --release -q -p addon-core --example jq_engine
./target/release/examples/jq_overhead "${1:-20000}" ./target/release/addon-operator
./target/release/examples/jq_engine "${1:-20000}"
