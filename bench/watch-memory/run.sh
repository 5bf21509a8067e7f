#!/usr/bin/env bash
# RSS of the operator watching N ConfigMaps of ~2 KB (issue 11, "lean watches"), against the same
# operator with no watch. Modes: `lean` (keepFullObjectsInMemory: false, jqFilter .metadata.name)
# and `full` (keepFullObjectsInMemory: true, no filter). The kube-emulator runs as its own process,
# so its memory is not counted. Prints VmRSS and VmHWM (peak) after the first converge (/readyz),
# each mode's delta over the no-watch run, and the delta's ratio to the JSON size of the listing.
# Usage: bench/watch-memory/run.sh [N] (default 10000). ROUNDS=2 repeats the runs against the same
# objects (each round measures its own no-watch baseline); MODES="lean" runs only that mode;
# OPERATORS=old/addon-operator,new/addon-operator measures several binaries, interleaved, on the
# same objects.
# Build first: cargo build --release -p addon-operator -p kube-emulator (or set
# ADDON_OPERATOR_BIN / KUBE_EMULATOR_BIN to debug builds; debug RSS is higher, ratios comparable).
set -euo pipefail
n=${1:-10000}
rounds=${ROUNDS:-1}
modes=${MODES:-lean full}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${ADDON_OPERATOR_BIN:-$root/target/release/addon-operator}
IFS=, read -r -a operators <<< "${OPERATORS:-$bin}"
emu=${KUBE_EMULATOR_BIN:-$root/target/release/kube-emulator}
work=$(mktemp -d)
# (never `kill 0`: that would signal the caller's whole process group)
trap 'kill ${epid:+"$epid"} ${pid:+"$pid"} 2>/dev/null || true; rm -rf "$work"' EXIT

. "$root/bench/lib.sh"
eport=$(free_port)
"$emu" --port "$eport" --kubeconfig "$work/kubeconfig" > /dev/null &
epid=$!
until [ -s "$work/kubeconfig" ]; do sleep 0.05; done
url="http://127.0.0.1:$eport"
curl -sf -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces" \
  -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}' > /dev/null
curl -sf -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces" \
  -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ops"}}' > /dev/null
curl -sf -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces/ops/configmaps" \
  -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"addon-operator"},"data":{"global":"{}"}}' > /dev/null
json_bytes=$(python3 "$root/bench/watch-memory/create.py" "$url" bench "$n" 2048)
echo "objects: $n ConfigMaps, listing JSON $json_bytes bytes; binaries: ${operators[*]}"

# run MODE BINARY: prints "rss_kb hwm_kb" of the operator once ready (fails after 10 minutes)
run() {
  local bin=$2
  local tree="$work/tree-$1"
  mkdir -p "$tree/global-hooks" "$tree/modules"
  : > "$tree/modules/values.yaml"
  local cfg='{"configVersion":"v1","onStartup":1}'
  case $1 in
    lean) cfg='{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false,"executeHookOnSynchronization":false}]}' ;;
    full) cfg='{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"keepFullObjectsInMemory":true,"executeHookOnSynchronization":false}]}' ;;
  esac
  printf '#!/bin/sh\nif [ "$1" = --config ]; then echo '"'"'%s'"'"'; fi\n' "$cfg" > "$tree/global-hooks/h"
  chmod +x "$tree/global-hooks/h"
  local port
  port=$(free_port)
  "$bin" start --working-dir "$tree" --kube-config "$work/kubeconfig" --namespace ops \
    --tmp-dir "$work/tmp-$1" --prometheus-listen-address 127.0.0.1 --prometheus-listen-port "$port" \
    --debug-unix-socket "$work/debug-$1.socket" --log-level warn > "$work/log-$1" 2>&1 &
  pid=$!
  wait_ready "$port" "$pid" "$work/log-$1" || exit 1
  sleep 1
  echo "$(awk '/VmRSS/ {print $2}' /proc/$pid/status) $(awk '/VmHWM/ {print $2}' /proc/$pid/status)"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}

for round in $(seq "$rounds"); do
  for bin in "${operators[@]}"; do
    [ "$rounds" = 1 ] && [ ${#operators[@]} = 1 ] || echo "round $round of $rounds: $bin"
    read -r base_rss base_hwm < <(run none "$bin")
    echo "no watch: RSS $base_rss kB (peak $base_hwm kB)"
    for mode in $modes; do
      read -r rss hwm < <(run "$mode" "$bin")
      delta=$((rss - base_rss))
      echo "$mode: RSS $rss kB (peak $hwm kB), $(awk "BEGIN { printf \"%+.1f\", $delta / 1024 }") MB over no watch," \
        "$(echo "scale=2; $delta * 1024 / $json_bytes" | bc)x the JSON," \
        "$(echo "scale=2; $delta / 1024 * 1000 / $n" | bc) MB per 1,000; peak +$(((hwm - base_hwm) / 1024)) MB"
    done
  done
done
