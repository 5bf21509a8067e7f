#!/usr/bin/env bash
# Hook execution overhead: N no-op hooks through the operator's pipeline vs a bare spawn loop.
# Usage: bench/hook-overhead/run.sh [N]   (default 1000). Prints the machine, then both rates.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-1000}"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "rustc: $(rustc --version)"
cargo build --release -q -p addon-operator --example hook_overhead
./target/release/examples/hook_overhead "$runs"
