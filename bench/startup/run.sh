#!/usr/bin/env bash
# Startup and footprint of the operator on a generated tree: N modules with 3 bash hooks each
# (onStartup, beforeHelm, a schedule) and an enabled script, hooks-only (no charts), local mode.
# Prints: time for `check`, time from `start` to /readyz = 200, and the operator's RSS once ready.
# Usage: bench/startup/run.sh [N] (default 100). Build first: cargo build --release -p addon-operator
set -euo pipefail
n=${1:-100}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${ADDON_OPERATOR_BIN:-$root/target/release/addon-operator}
work=$(mktemp -d)
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/global-hooks" "$work/modules"
: > "$work/modules/values.yaml"
for i in $(seq -w 1 "$n"); do
  m="$work/modules/$i-mod$i"
  mkdir -p "$m/hooks"
  echo "mod${i}Enabled: true" >> "$work/modules/values.yaml"
  printf '#!/bin/sh\necho true > "$MODULE_ENABLED_RESULT"\n' > "$m/enabled"
  for h in startup before sched; do
    case $h in
      startup) cfg='{"configVersion":"v1","onStartup":1}' ;;
      before) cfg='{"configVersion":"v1","beforeHelm":1}' ;;
      sched) cfg='{"configVersion":"v1","schedule":[{"crontab":"0 0 * * *"}]}' ;;
    esac
    printf '#!/bin/sh\nif [ "$1" = --config ]; then echo '"'"'%s'"'"'; fi\n' "$cfg" > "$m/hooks/$h"
  done
  chmod +x "$m/enabled" "$m/hooks/"*
done

echo "tree: $n modules, $((n * 3)) hooks, $n enabled scripts; binary: $bin"
start=$(date +%s.%N)
"$bin" check --working-dir "$work" > /dev/null
echo "check:            $(echo "$(date +%s.%N) - $start" | bc) s"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start=$(date +%s.%N)
"$bin" start --working-dir "$work" --tmp-dir /dev/shm/ao-bench-$$ --prometheus-listen-address 127.0.0.1 \
  --prometheus-listen-port "$port" --debug-unix-socket "$work/debug.socket" --log-level warn &
pid=$!
until curl -sf "http://127.0.0.1:$port/readyz" > /dev/null; do sleep 0.05; done
echo "start to ready:   $(echo "$(date +%s.%N) - $start" | bc) s ($((n * 2)) hook runs, $n enabled scripts)"
echo "RSS when ready:   $(awk '/VmRSS/ {print $2 " " $3}' /proc/$pid/status) (peak $(awk '/VmHWM/ {print $2 " " $3}' /proc/$pid/status))"
echo "threads:          $(awk '/Threads/ {print $2}' /proc/$pid/status)"
