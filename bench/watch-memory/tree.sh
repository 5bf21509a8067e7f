#!/usr/bin/env bash
# RSS of the operator on a tree shaped like a large production one (issue 22, goal 4): MODULES
# hooks-only modules whose kubernetes hook each watches one of SHARDS shards of N ConfigMaps of
# ~SIZE bytes (labelSelector `shard=<k>`, jqFilter `{name: .metadata.name, ts: .data.ts}`, full
# objects kept as by default), CHARTS chart modules in 4 orders, and a global hook watching all N
# (lean). Each shard is watched by MODULES/SHARDS modules. After ready, ROUNDS rounds of UPDATES
# merge-patches of `data.ts`; after each round the bench waits until every queue is empty and
# prints RSS, the queue length seen right after the writes, and the objects the monitors hold.
# A control run (CONTROL=1) keeps only the global hook's watch.
# Printed at the end, each goal of issue 39 with its figure: ready (≤ 15 s), the listing (from the
# operator's start until its monitors hold every object, polled every 0.1 s; beside it the same
# lists made alone by a client, the floor), the operator's and the server's CPU to ready, RSS after
# ready (≤ 150 MB) and after 3,000 and 50,000 updates (within 10 % of ready; a figure is printed
# once the updates so far reach it).
# Usage: bench/watch-memory/tree.sh [N=10000] [ROUNDS=5] [UPDATES=3000]
# Env: MODULES=60 SHARDS=10 SIZE=1024 CHARTS=20 (charts need helm in .tools/bin) CONTROL=0,
# STEPS="3000 47000" (the updates of each round, instead of ROUNDS × UPDATES),
# SERVER=emulator|real (real: kube-apiserver and etcd from .tools/bin, bench/real-cluster.sh),
# LOG_LEVEL=info and KEEP_LOG=FILE (the operator's log kept in FILE: the start's timeline),
# WRAP="perf record ... --" (run the operator under a profiler).
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
trap 'kill ${cluster_pids:-} ${pid:+"$pid"} ${poller:-} 2>/dev/null || true; sleep 0.5; [ -z "${KEEP_LOG:-}" ] || cp "$work/log" "$KEEP_LOG"; rm -rf "$work"' EXIT

. "$root/bench/lib.sh"
. "$root/bench/real-cluster.sh"
start_cluster "$work"
url=$cluster_url
post() { curl -sf "${cluster_curl[@]}" -X POST -H 'Content-Type: application/json' "$url$1" -d "$2" > /dev/null; }
post /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}'
post /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ops"}}'
post /api/v1/namespaces/ops/configmaps \
  '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"addon-operator"},"data":{"global":"{}"}}'
created=$(date +%s%N)
json_bytes=$(python3 "$root/bench/watch-memory/shards.py" create "$url" bench "$n" "$size" "$shards")
create_s=$(echo "scale=1; ($(date +%s%N) - $created) / 1000000000" | bc)
# the floor of the listing: the lists the operator's watches make, by a client alone
lists_s=$(python3 "$root/bench/watch-memory/shards.py" lists "$url" bench "$shards")

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
# CPU seconds (user + system) of the operator and its live children (the jq sandbox, hooks
# running): a figure the machine's load changes far less than wall times
cpu_s() {
  local tick p total=0
  tick=$(getconf CLK_TCK)
  for p in "$pid" $(pgrep -P "$pid"); do
    [ -r "/proc/$p/stat" ] || continue
    total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "scale=1; $total / $tick" | bc
}
# CPU seconds of the API server's processes (the emulator, or kube-apiserver and etcd)
server_cpu_s() {
  local tick p total=0
  tick=$(getconf CLK_TCK)
  for p in $cluster_pids; do
    [ -r "/proc/$p/stat" ] || continue
    total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "scale=1; $total / $tick" | bc
}
rss_parts() { awk '/RssAnon/ {a = $2} /RssFile/ {f = $2} END {printf "anon %d kB, file %d kB", a, f}' "/proc/$pid/status"; }
# samples of the objects the monitors hold, until ready: the listing's end
poll_objects() {
  while [ ! -e "$work/ready" ]; do
    echo "$(date +%s%N) $(metric addon_operator_kube_snapshot_objects 2> /dev/null || true)" >> "$work/objects"
    sleep 0.1
  done
}
server_cpu0=$(server_cpu_s)
started=$(date +%s%N)
poll_objects &
poller=$!
${WRAP:-} "$bin" start --working-dir "$tree" --kube-config "$cluster_kubeconfig" "${unthrottled[@]}" --namespace ops \
  --tmp-dir "$work/tmp" --prometheus-listen-address 127.0.0.1 --prometheus-listen-port "$port" \
  --debug-unix-socket "$work/debug.socket" --log-level "${LOG_LEVEL:-warn}" > "$work/log" 2>&1 &
pid=$!
wait_ready "$port" "$pid" "$work/log" || exit 1
# with a WRAP (a profiler), the operator is the wrapper's descendant
[ -z "${WRAP:-}" ] || pid=$(pgrep -n -f -- "--debug-unix-socket $work/debug.socket")
ready_s=$(echo "scale=1; ($(date +%s%N) - $started) / 1000000000" | bc)
ready_cpu=$(cpu_s)
server_cpu=$(echo "$(server_cpu_s) - $server_cpu0" | bc)
touch "$work/ready"
wait "$poller"
held=$(metric addon_operator_kube_snapshot_objects)
# the first sample holding every object the monitors hold once ready
listing_s=$(awk -v held="$held" -v t0="$started" '$2 == held {printf "%.1f", ($1 - t0) / 1e9; exit}' "$work/objects")
idle() { wait_idle "$port" 2; }
idle
ready_kb=$(rss)
echo "server: ${SERVER:-emulator}; objects: $n ConfigMaps of ~$size B (listing $json_bytes B, created in ${create_s}s); modules: $([ "$control" = 0 ] && echo "$modules watching $shards shards" || echo "none (control)"), $charts charts"
echo "ready in ${ready_s}s (operator and jq sandbox CPU ${ready_cpu}s, the server's ${server_cpu}s; load $(cut -d' ' -f1-3 /proc/loadavg)): RSS $ready_kb kB ($(rss_parts)), snapshot objects $held (all held ${listing_s:-?}s after the start; the same lists alone: ${lists_s}s)"
steps=${STEPS:-$(for _ in $(seq "$rounds"); do printf '%s ' "$updates"; done)}
done_updates=0 r=0 after_3k='' after_50k=''
for step in $steps; do
  r=$((r + 1))
  python3 "$root/bench/watch-memory/shards.py" update "$url" bench "$n" "$step" "$r"
  backlog=$(metric addon_operator_tasks_queue_length)
  idle
  done_updates=$((done_updates + step))
  now_kb=$(rss)
  echo "after round $r ($step updates, $done_updates in all): RSS $now_kb kB (queued right after the writes: $backlog)," \
    "hook runs $(metric "addon_operator_(global|module)_hook_run_seconds_count")"
  [ -n "$after_3k" ] || [ "$done_updates" -lt 3000 ] || after_3k="$now_kb $done_updates"
  [ -n "$after_50k" ] || [ "$done_updates" -lt 50000 ] || after_50k="$now_kb $done_updates"
done
# goal FIGURE LIMIT: "met" when FIGURE ≤ LIMIT
verdict() { awk -v f="$1" -v l="$2" 'BEGIN {print (f <= l ? "met" : "not met")}'; }
after() { # "KB UPDATES": the RSS after that many updates against the ready figure
  [ -n "$1" ] || { echo "not measured (fewer updates)"; return; }
  set -- $1
  local pct
  pct=$(awk -v a="$1" -v r="$ready_kb" 'BEGIN {printf "%+.1f", (a - r) * 100 / r}')
  echo "$(awk -v a="$1" 'BEGIN {printf "%.1f", a / 1024}') MB after $2 updates ($pct %): $(verdict "${pct#+}" 10)"
}
echo "goal ready ≤ 15 s: ${ready_s} s (CPU: the operator's ${ready_cpu} s, the server's ${server_cpu} s): $(verdict "$ready_s" 15)"
echo "goal listing of $n objects (linear in N: compare sizes): ${listing_s:-?} s; the same lists alone ${lists_s} s"
echo "goal RSS after ready ≤ 150 MB: $(awk -v k="$ready_kb" 'BEGIN {printf "%.1f", k / 1024}') MB: $(verdict "$ready_kb" $((150 * 1024)))"
echo "goal RSS within 10 % after 3,000 updates: $(after "$after_3k")"
echo "goal RSS within 10 % after 50,000 updates: $(after "$after_50k")"
