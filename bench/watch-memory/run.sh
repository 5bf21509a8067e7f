#!/usr/bin/env bash
# RSS of the operator watching N ConfigMaps of ~2 KB (issues 11 and 22), against the same operator
# with no watch. Modes: `lean` (keepFullObjectsInMemory: false, jqFilter .metadata.name) and
# `full` (keepFullObjectsInMemory: true, no filter); each with the Synchronization run on (the
# default: the hook gets every object in its binding context file) and off
# (executeHookOnSynchronization: false). The kube-emulator runs as its own process, so its memory
# is not counted. Prints VmRSS once ready (/readyz, 1 s later) and VmHWM (the peak), each as a
# delta over the no-watch run, per 1,000 objects and as a ratio to the JSON size of the listing.
# With MODIFIED=M, M merge-patches of the watched objects follow (rounds of N), and the RSS once
# every queue is idle again is printed beside the figure after ready (the steady state).
# Usage: bench/watch-memory/run.sh [N] (default 10000). MODES="lean" runs only that mode;
# SYNC="on" only that setting; ROUNDS=2 repeats the runs (each round measures its own no-watch
# baseline); OPERATORS=old/addon-operator,new/addon-operator measures several binaries,
# interleaved, on the same objects.
# Build first: cargo build --release -p addon-operator -p kube-emulator (or set
# ADDON_OPERATOR_BIN / KUBE_EMULATOR_BIN to debug builds; debug RSS is higher, ratios comparable).
set -euo pipefail
n=${1:-10000}
rounds=${ROUNDS:-1}
modes=${MODES:-lean full}
syncs=${SYNC:-on off}
modified=${MODIFIED:-0}
export PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.tools/bin:$PATH"
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

# run MODE SYNC BINARY: prints "rss_kb hwm_kb steady_kb" of the operator once ready and, with
# MODIFIED, once idle after the updates (0 without)
run() {
  local bin=$3
  local tree="$work/tree-$1-$2"
  mkdir -p "$tree/global-hooks" "$tree/modules"
  : > "$tree/modules/values.yaml"
  local sync=true
  [ "$2" = on ] || sync=false
  local cfg='{"configVersion":"v1","onStartup":1}'
  case $1 in
    lean) cfg='{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false,"executeHookOnSynchronization":'$sync'}]}' ;;
    full) cfg='{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"keepFullObjectsInMemory":true,"executeHookOnSynchronization":'$sync'}]}' ;;
  esac
  # the hook reads its binding context file (as a hook's jq would) and nothing else
  printf '#!/bin/sh\nif [ "$1" = --config ]; then echo '"'"'%s'"'"'; exit 0; fi\nexec wc -c "$BINDING_CONTEXT_PATH" > /dev/null\n' "$cfg" > "$tree/global-hooks/h"
  chmod +x "$tree/global-hooks/h"
  local port
  port=$(free_port)
  "$bin" start --working-dir "$tree" --kube-config "$work/kubeconfig" "${unthrottled[@]}" --namespace ops \
    --tmp-dir "$work/tmp-$1" --prometheus-listen-address 127.0.0.1 --prometheus-listen-port "$port" \
    --debug-unix-socket "$work/debug-$1.socket" --log-level warn > "$work/log-$1" 2>&1 &
  pid=$!
  wait_ready "$port" "$pid" "$work/log-$1" || exit 1
  sleep 1
  local rss hwm steady=0
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  if [ "$modified" -gt 0 ] && [ "$1" != none ]; then
    local done=0 r=0
    while [ $done -lt "$modified" ]; do
      local count=$((modified - done < n ? modified - done : n))
      r=$((r + 1))
      python3 "$root/bench/watch-memory/shards.py" update "$url" bench "$n" "$count" "$r$RANDOM"
      done=$((done + count))
    done
    wait_idle "$port" 3
    steady=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  fi
  echo "$rss $hwm $steady"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
}

mb() { awk "BEGIN { printf \"%+.1f\", $1 / 1024 }"; }
for round in $(seq "$rounds"); do
  for bin in "${operators[@]}"; do
    [ "$rounds" = 1 ] && [ ${#operators[@]} = 1 ] || echo "round $round of $rounds: $bin"
    read -r base_rss base_hwm _ < <(run none off "$bin")
    echo "no watch: RSS $base_rss kB (peak $base_hwm kB)"
    for mode in $modes; do
      for sync in $syncs; do
        read -r rss hwm steady < <(run "$mode" "$sync" "$bin")
        delta=$((rss - base_rss))
        peak=$((hwm - base_hwm))
        echo "$mode, Synchronization $sync: RSS $rss kB (peak $hwm kB): $(mb $delta) MB over no watch," \
          "$(echo "scale=2; $delta / 1024 * 1000 / $n" | bc) MB per 1,000," \
          "$(echo "scale=2; $delta * 1024 / $json_bytes" | bc)x the JSON;" \
          "peak $(mb $peak) MB, $(echo "scale=2; $peak / 1024 * 1000 / $n" | bc) MB per 1,000," \
          "$(echo "scale=2; $peak * 1024 / $json_bytes" | bc)x the JSON"
        if [ "$steady" != 0 ]; then
          echo "  after $modified Modified events: RSS $steady kB, $(mb $((steady - base_rss))) MB over no watch," \
            "$(echo "scale=1; ($steady - $rss) * 100 / $rss" | bc)% from the figure after ready"
        fi
      done
    done
  done
done
