#!/usr/bin/env bash
# jqFilter cost per object: in process vs the jq sandbox child (batched, and one object per request).
# Usage: bench/jq-sandbox/run.sh [N] (default 20000 objects).
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "rustc: $(rustc --version)"
cargo build --release -q -p addon-operator --bin addon-operator --example jq_overhead
./target/release/examples/jq_overhead "${1:-20000}" ./target/release/addon-operator
