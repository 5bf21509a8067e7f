#!/usr/bin/env bash
# RSS of the operator on a tree shaped like a large production one (issue 22, goal 4): MODULES
# hooks-only modules whose kubernetes hook each watches one of SHARDS shards of N ConfigMaps of
# ~SIZE bytes (labelSelector `shard=<k>`, jqFilter `{name: .metadata.name, ts: .data.ts}`, full
# objects kept as by default), CHARTS chart modules in 4 orders, and a global hook watching all N
# (lean). Each shard is watched by MODULES/SHARDS modules. After ready, ROUNDS rounds of UPDATES
# merge-patches of `data.ts`; after each round the bench waits until every queue is empty and
# prints RSS, the queue length seen right after the writes, and the objects the monitors hold.
# A control run (CONTROL=1) keeps only the global hook's watch.
# Usage: bench/watch-memory/tree.sh [N=10000] [ROUNDS=5] [UPDATES=3000]
# Env: MODULES=60 SHARDS=10 SIZE=1024 CHARTS=20 (charts need helm in .tools/bin) CONTROL=0,
# SERVER=emulator|real (real: kube-apiserver and etcd from .tools/bin, bench/real-cluster.sh).
# Build first: cargo build --release -p addon-operator -p kube-emulator (or set
# ADDON_OPERATOR_BIN / KUBE_EMULATOR_BIN).
set -euo pipefail
n=${1:-10000}
rounds=${2:-5}
updates=${3:-3000}
modules=${MODULES:-60}
shards=${SHARDS:-10}
size=${SIZE:-1024}
charts=${CHARTS:-20}
control=${CONTROL:-0}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${ADDON_OPERATOR_BIN:-$root/target/release/addon-operator}
emu=${KUBE_EMULATOR_BIN:-$root/target/release/kube-emulator}
export PATH="$root/.tools/bin:$PATH"
work=$(mktemp -d)
trap 'kill ${cluster_pids:-} ${pid:+"$pid"} 2>/dev/null || true; sleep 0.5; rm -rf "$work"' EXIT

. "$root/bench/lib.sh"
. "$root/bench/real-cluster.sh"
start_cluster "$work"
url=$cluster_url
post() { curl -sf "${cluster_curl[@]}" -X POST -H 'Content-Type: application/json' "$url$1" -d "$2" > /dev/null; }
post /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}'
post /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ops"}}'
post /api/v1/namespaces/ops/configmaps \
  '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"addon-operator"},"data":{"global":"{}"}}'
json_bytes=$(python3 "$root/bench/watch-memory/shards.py" create "$url" bench "$n" "$size" "$shards")

tree="$work/tree"
mkdir -p "$tree/global-hooks" "$tree/modules"
hook() { # FILE CONFIG: a hook that prints CONFIG and otherwise only reads its binding context
  printf '#!/bin/sh\nif [ "$1" = --config ]; then echo '"'"'%s'"'"'; exit 0; fi\nexec wc -c "$BINDING_CONTEXT_PATH" > /dev/null\n' "$2" > "$1"
  chmod +x "$1"
}
hook "$tree/global-hooks/all" '{"configVersion":"v1","kubernetes":[{"name":"all","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false}]}'
: > "$tree/modules/values.yaml"
if [ "$control" = 0 ]; then
  for m in $(seq 0 $((modules - 1))); do
    dir="$tree/modules/$(printf '%03d' $((100 + m)))-watch$m"
    mkdir -p "$dir/hooks"
    hook "$dir/hooks/h" '{"configVersion":"v1","kubernetes":[{"name":"shard","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"labelSelector":{"matchLabels":{"shard":"'$((m % shards))'"}},"jqFilter":"{name: .metadata.name, ts: .data.ts}"}]}'
    echo "watch${m}Enabled: true" >> "$tree/modules/values.yaml"
  done
fi
for c in $(seq 0 $((charts - 1))); do
  dir="$tree/modules/$(printf '%03d' $((200 + (c % 4) * 10)))-chart$c"
  mkdir -p "$dir/templates"
  printf 'apiVersion: v2\nname: chart%s\nversion: 0.1.0\n' "$c" > "$dir/Chart.yaml"
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chart%s\ndata:\n  a: "1"\n' "$c" > "$dir/templates/cm.yaml"
  echo "chart${c}Enabled: true" >> "$tree/modules/values.yaml"
done

port=$(free_port)
# metric REGEX: the sum of the series whose name matches REGEX
metric() { metric_sum "$port" "$1"; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }
# RSS split into heap and stacks (anonymous) and the binary's pages (file)
rss_parts() { awk '/RssAnon/ {a = $2} /RssFile/ {f = $2} END {printf "anon %d kB, file %d kB", a, f}' "/proc/$pid/status"; }
started=$(date +%s%N)
${WRAP:-} "$bin" start --working-dir "$tree" --kube-config "$cluster_kubeconfig" "${unthrottled[@]}" --namespace ops \
  --tmp-dir "$work/tmp" --prometheus-listen-address 127.0.0.1 --prometheus-listen-port "$port" \
  --debug-unix-socket "$work/debug.socket" --log-level warn > "$work/log" 2>&1 &
pid=$!
wait_ready "$port" "$pid" "$work/log" || exit 1
# with a WRAP (a profiler), the operator is the wrapper's descendant
[ -z "${WRAP:-}" ] || pid=$(pgrep -n -f -- "--debug-unix-socket $work/debug.socket")
ready_s=$(echo "scale=1; ($(date +%s%N) - $started) / 1000000000" | bc)
idle() { wait_idle "$port" 2; }
idle
echo "server: ${SERVER:-emulator}; objects: $n ConfigMaps of ~$size B (listing $json_bytes B); modules: $([ "$control" = 0 ] && echo "$modules watching $shards shards" || echo "none (control)"), $charts charts"
echo "ready in ${ready_s}s: RSS $(rss) kB ($(rss_parts)), snapshot objects $(metric addon_operator_kube_snapshot_objects)"
for r in $(seq "$rounds"); do
  python3 "$root/bench/watch-memory/shards.py" update "$url" bench "$n" "$updates" "$r"
  backlog=$(metric addon_operator_tasks_queue_length)
  idle
  echo "after round $r ($updates updates): RSS $(rss) kB (queued right after the writes: $backlog)," \
    "hook runs $(metric "addon_operator_(global|module)_hook_run_seconds_count")"
done
