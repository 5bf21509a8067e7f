#!/usr/bin/env bash
# Kubernetes events into hook runs (issue 11): a paced kube-rs client (examples/write_burst.rs of the
# kube-emulator crate, 64 requests in flight) merge-patches OBJECTS ConfigMaps WRITES times at RATE
# writes/s, each write giving `data.n` a new number, while the operator watches them with a global
# hook (jqFilter `.data.n`, executeHookOnEvent [Modified], combined contexts). The hook only copies
# its binding context file; afterwards every Event context is counted. Prints the written rate, the
# delivered/written ratio (1.00: no write lost) and events/s from the first write to the last run.
# Usage: bench/kube-events/run.sh [WRITES=50000] [RATE=5000] [OBJECTS=50] [CONCURRENCY=64]
# Build first (release): cargo build --release -p addon-operator -p kube-emulator --bins &&
#   cargo build --release -p kube-emulator --example write_burst
# ADDON_OPERATOR_BIN / KUBE_EMULATOR_BIN / WRITER_BIN override the binaries.
set -euo pipefail
writes=${1:-50000}
rate=${2:-5000}
objects=${3:-50}
concurrency=${4:-64}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${ADDON_OPERATOR_BIN:-$root/target/release/addon-operator}
emu=${KUBE_EMULATOR_BIN:-$root/target/release/kube-emulator}
writer=${WRITER_BIN:-$root/target/release/examples/write_burst}
export PATH="$root/.tools/bin:$PATH"
work=$(mktemp -d)
trap 'kill "${epid:-0}" "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); operator: $bin"

. "$root/bench/lib.sh"
eport=$(free_port)
"$emu" --port "$eport" --kubeconfig "$work/kubeconfig" > "$work/emulator.log" 2>&1 &
epid=$!
until [ -s "$work/kubeconfig" ]; do sleep 0.05; done
url="http://127.0.0.1:$eport"
post() { curl -sf -X POST -H 'Content-Type: application/json' "$url$1" -d "$2" > /dev/null; }
post /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}'
post /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ops"}}'
post /api/v1/namespaces/ops/configmaps \
  '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"addon-operator"},"data":{"global":"{}"}}'
for i in $(seq 0 $((objects - 1))); do
  post /api/v1/namespaces/bench/configmaps \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-$i\"},\"data\":{\"n\":\"start\"}}"
done

tree="$work/tree"
mkdir -p "$tree/global-hooks" "$tree/modules" "$work/contexts"
: > "$tree/modules/values.yaml"
cfg='{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"jqFilter":".data.n","keepFullObjectsInMemory":false,"executeHookOnSynchronization":false,"executeHookOnEvent":["Modified"]}]}'
cat > "$tree/global-hooks/h" <<HOOK
#!/bin/sh
if [ "\$1" = --config ]; then echo '$cfg'; exit 0; fi
exec cp "\$BINDING_CONTEXT_PATH" "$work/contexts/\$(date +%s%N)"
HOOK
chmod +x "$tree/global-hooks/h"
port=$(free_port)
"$bin" start --working-dir "$tree" --kube-config "$work/kubeconfig" "${unthrottled[@]}" --namespace ops \
  --tmp-dir "$work/tmp" --prometheus-listen-address 127.0.0.1 --prometheus-listen-port "$port" \
  --debug-unix-socket "$work/debug.socket" --log-level warn > "$work/operator.log" 2>&1 &
pid=$!
wait_ready "$port" "$pid" "$work/operator.log"

start_ns=$(date +%s%N)
"$writer" "$work/kubeconfig" bench "$objects" "$writes" "$rate" "$concurrency" | tee "$work/writer.out"
written=$(awk '{print $2}' "$work/writer.out")
# Wait until no hook run has happened for 5 s.
last=-1
while true; do
  count=$(ls "$work/contexts" | wc -l)
  [ "$count" = "$last" ] && break
  last=$count
  sleep 5
done
end_ns=$(ls "$work/contexts" | sort -n | tail -1)
delivered=$(cat "$work/contexts"/* | jq -r '.[] | select(.type == "Event") | .filterResult' \
  | grep -v '^start$' | sort -u | wc -l)
runs=$(ls "$work/contexts" | wc -l)
seconds=$(echo "scale=3; ($end_ns - $start_ns) / 1000000000" | bc)
echo "written $written, delivered $delivered in $runs hook runs:" \
  "ratio $(echo "scale=4; $delivered / $written" | bc)," \
  "$(echo "scale=0; $delivered / $seconds" | bc) events/s over ${seconds}s (first write to last run)"
echo "emulator log lines: $(wc -l < "$work/emulator.log"); operator warnings/errors:"
grep -ciE 'warn|error' "$work/operator.log" || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
