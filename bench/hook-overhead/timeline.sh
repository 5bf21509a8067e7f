#!/usr/bin/env bash
# Where the wall time of a no-op hook goes, from the kernel's scheduler events: a bash loop and the
# module run of `addon-operator start` (local mode) over the same N no-op hooks, each hook split into
#   spawn (fork or clone to exec), run (exec to exit), gap (exit to the fork of the next hook),
# medians (90th percentiles) in ms, plus the CPU time of the runner's own threads per hook.
# Needs perf (Debian: linux-perf) allowed to trace system-wide (root, or perf_event_paranoid -1).
# Usage: bench/hook-overhead/timeline.sh [N=2000] [TMP_DIR=/dev/shm]; PROFILE as in run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
hooks="${1:-2000}"
dir="${2:-/dev/shm}"
command -v perf > /dev/null || { echo "timeline.sh needs perf (apt-get install linux-perf)" >&2; exit 1; }
. bench/lib.sh
cargo_profile
cargo build "${build_flags[@]}" -q -p addon-operator --bin addon-operator
operator="$PWD/target/$profile/addon-operator"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree="$work/tree"
mkdir -p "$tree/modules/001-bench/hooks" "$tree/global-hooks"
echo "benchEnabled: true" > "$tree/modules/values.yaml"
for ((i = 0; i < hooks; i++)); do
  hook=$(printf '%s/modules/001-bench/hooks/h%05d.sh' "$tree" "$i")
  printf '#!/bin/sh\nif [ "$1" = --config ]; then echo %s; fi\nexit 0\n' \
    "'{\"configVersion\":\"v1\",\"beforeHelm\":1}'" > "$hook"
  chmod +x "$hook"
done
events=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit,sched:sched_switch
echo "machine: $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $dir on $(stat -f -c %T "$dir"), profile $profile"
printf '%-26s %7s  %-15s  %-15s  %-15s\n' "" "wall" "spawn" "run" "gap"

# The bash loop, once to warm the page cache, then traced.
loop='for h in "$0"/h*.sh; do "$h"; done'
bash -c "$loop" "$tree/modules/001-bench/hooks"
perf record -a -q -e "$events" -o "$work/bash.data" -- bash -c "$loop" "$tree/modules/001-bench/hooks"
perf script -i "$work/bash.data" -F pid,tid,time,event,trace > "$work/bash.txt" 2> /dev/null
bench/hook-overhead/timeline.py "bash loop" "$hooks" "$work/bash.txt"

# The operator: traced from its start to the end of its first converge (the module run).
port=$(free_port)
perf record -a -q -e "$events" -o "$work/op.data" -- "$operator" start --working-dir "$tree" \
  --tmp-dir "$(mktemp -d -p "$dir")/ao" --prometheus-listen-address 127.0.0.1 \
  --prometheus-listen-port "$port" --debug-unix-socket "$work/debug.socket" > "$work/op.log" 2>&1 &
perf_pid=$!
wait_ready "$port" "$perf_pid" "$work/op.log"
pkill -INT -P "$perf_pid" -x addon-operator
wait "$perf_pid" || true
perf script -i "$work/op.data" -F pid,tid,time,event,trace > "$work/op.txt" 2> /dev/null
bench/hook-overhead/timeline.py "addon-operator --tmp-dir" "$hooks" "$work/op.txt"
