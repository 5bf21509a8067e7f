#!/usr/bin/env bash
# The kube-emulator's lists and watches of many objects (issue 39): creates ConfigMaps of ~SIZE
# bytes in one namespace up to each of SIZES objects and at each size times, ROUNDS times, a full
# paged list (limit=500, as client-go's reflector pages) without and with a label selector (one
# every object matches) and a watch's initial events (sendInitialEvents, up to the
# initial-events-end BOOKMARK): alone, then while a separate process merge-patches a ConfigMap of
# another namespace RATE times a second. Prints both times, the emulator's CPU time in the first,
# and the p50/p99/max latency of the writes made during the second, after that of the writes
# alone. Figures only; nothing is asserted.
# Usage: bench/emulator-lists/run.sh  (SIZES="10000 30000 100000" SIZE=512 ROUNDS=2 RATE=200)
# EMULATORS=old/kube-emulator,new/kube-emulator measures several builds, one after the other, each
# on its own objects. Build first: cargo build --release -p kube-emulator (or PROFILE=profiling).
set -euo pipefail
sizes=${SIZES:-10000 30000 100000}
size=${SIZE:-512}
rounds=${ROUNDS:-2}
rate=${RATE:-200}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$root/bench/lib.sh"
cargo_profile
IFS=, read -r -a emulators <<< "${EMULATORS:-${KUBE_EMULATOR_BIN:-$root/target/$profile/kube-emulator}}"
work=$(mktemp -d)
# (never `kill 0`: that would signal the caller's whole process group)
trap 'kill ${epid:+"$epid"} 2>/dev/null || true; rm -rf "$work"' EXIT
client="$root/bench/emulator-lists/lists.py"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); objects of ~$size bytes"

for emu in "${emulators[@]}"; do
  echo "emulator: $emu"
  port=$(free_port)
  rm -f "$work/kubeconfig"
  "$emu" --port "$port" --kubeconfig "$work/kubeconfig" > "$work/emulator.log" 2>&1 &
  epid=$!
  until [ -s "$work/kubeconfig" ]; do sleep 0.05; done
  url="http://127.0.0.1:$port"
  curl -sf -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces" \
    -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}' > /dev/null
  have=0
  for n in $sizes; do
    start=$(date +%s.%N)
    python3 "$client" create "$url" bench "$have" "$n" "$size"
    echo "$n objects (created $((n - have)) in $(echo "$(date +%s.%N) - $start" | bc | cut -c1-5) s;" \
      "emulator RSS $(awk '/VmRSS/ {print $2}' /proc/$epid/status) kB):"
    have=$n
    python3 "$client" measure "$url" bench "$rounds" "$rate" "$epid"
  done
  kill "$epid"; wait "$epid" 2>/dev/null || true; epid=
done
