#!/usr/bin/env bash
# Performance against the Go addon-operator (issue 35): the same trees on the same API server,
# one operator after the other. Rows: start to ready, RSS after ready and after 3,000 and 51,000
# updates of watched objects (the production-shaped tree of bench/watch-memory/tree.sh), CPU
# seconds per 1,000 hook runs, event-to-hook latency p50/p99, Helm converge of 20 and 50 chart
# modules. Prints a table (docs/benchmarks.md, "Side by side with the Go operator").
#
# Usage: GO_ADDON_OPERATOR=/path/to/go/addon-operator bench/vs-go/perf.sh
# Env:   ADDON_OPERATOR_BIN (default target/release/addon-operator: cargo build --release
#        -p addon-operator -p kube-emulator), SERVER=real|emulator (default real), OUT=dir (kept),
#        and the sizes of bench/vs-go/perf.py (N, MODULES, SHARDS, UPDATES_TOTAL, LAT_WRITES, ...).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${GO_ADDON_OPERATOR:?set GO_ADDON_OPERATOR to the Go addon-operator binary}"
export GO_ADDON_OPERATOR
export ADDON_OPERATOR_BIN=${ADDON_OPERATOR_BIN:-$root/target/release/addon-operator}
export KUBE_EMULATOR_BIN=${KUBE_EMULATOR_BIN:-$(dirname "$ADDON_OPERATOR_BIN")/kube-emulator}
emu=$KUBE_EMULATOR_BIN
export SERVER=${SERVER:-real}
export PATH="$root/.tools/bin:$PATH"
out=${OUT:-$(mktemp -d /tmp/vs-go-perf.XXXXXX)}
mkdir -p "$out/cluster"
. "$root/bench/lib.sh"
. "$root/bench/real-cluster.sh"
trap 'kill ${cluster_pids:-} 2>/dev/null || true' EXIT
echo "go: $("$GO_ADDON_OPERATOR" version 2>&1 | head -1); this: $("$ADDON_OPERATOR_BIN" version 2>&1 | head -1); server: $SERVER; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); out: $out"
start_cluster "$out/cluster"
python3 "$root/bench/vs-go/perf.py" "$out" "$cluster_kubeconfig"
