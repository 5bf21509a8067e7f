#!/usr/bin/env bash
# First converge of N unnumbered modules (all of ORDER 1: they run side by side) with one-ConfigMap
# charts, against the same kube-emulator:
#   baseline: a bash loop of `helm upgrade --install` x N (what a person would script);
#   parallel baseline: the same commands through `xargs -P PARALLEL` (default: the cores), what a
#     person would script to use the same cores as the operator (which runs up to 8 at once);
#   operator: `addon-operator start` from launch until /readyz says the startup converge is done.
# Rounds are interleaved (baseline, operator, baseline, ...) so machine load hits both alike; each
# round uses fresh namespaces. Every helm process of both sides goes through a wrapper that counts it.
# The loop's CPU (helm's, from `times`, and the emulator's) gives the bound of any runner on this
# machine: loop seconds / ((helm CPU + emulator CPU) / cores), printed after the rounds.
# Then the idle phase: the last operator keeps running IDLE_SECONDS with the resource monitor every
# MONITOR_INTERVAL, and the helm processes it spawns are counted (per minute).
# Usage: bench/helm-converge/run.sh [N=50] [ROUNDS=3]   (ORDERED=1: numbered modules, one by one)
# Env: BEFORE_BIN (another operator binary, e.g. an older build, measured in the same rounds),
#      ADDON_OPERATOR_BIN, KUBE_EMULATOR_BIN (default target/release/...), HELM (default helm from
#      .tools/bin or PATH), IDLE_SECONDS (60; 0 skips the idle phase), MONITOR_INTERVAL (10s),
#      PROFILE=1 (every helm process of both sides is timed and its API requests counted, and each
#      converge is broken down: time to the first helm, helm processes, gaps between them, tail;
#      the timing wrapper and the emulator's request log cost both sides alike).
# Build first: cargo build --release -p addon-operator -p kube-emulator
set -euo pipefail
n=${1:-50}
rounds=${2:-3}
idle=${IDLE_SECONDS:-60}
monitor=${MONITOR_INTERVAL:-10s}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${ADDON_OPERATOR_BIN:-$root/target/release/addon-operator}
emu_bin=${KUBE_EMULATOR_BIN:-$root/target/release/kube-emulator}
export PATH="$root/.tools/bin:$PATH"
helm=${HELM:-$(command -v helm)}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

now() { date +%s.%N; }

# a helm that counts its processes in $work/calls.<side> (PROFILE: "start end args" per line)
for side in base op old; do
  if [ -n "${PROFILE:-}" ]; then
    printf '#!/bin/bash\ns=$EPOCHREALTIME\n%s "$@"\nrc=$?\necho "$s $EPOCHREALTIME $*" >> %s/calls.%s\nexit $rc\n' \
      "$helm" "$work" "$side" > "$work/helm-$side"
  else
    printf '#!/bin/sh\necho "$*" >> %s/calls.%s\nexec %s "$@"\n' "$work" "$side" "$helm" > "$work/helm-$side"
  fi
  chmod +x "$work/helm-$side"
done
# the operation of each line of calls.<side> (PROFILE lines start with two timestamps)
ops() { if [ -n "${PROFILE:-}" ]; then cut -d' ' -f3 "$1"; else cut -d' ' -f1 "$1"; fi; }

# the tree: N modules, each a chart with one ConfigMap (ORDERED=1: directories NNN-modNN, one
# module per ORDER, so they converge one by one)
mkdir -p "$work/tree/global-hooks" "$work/tree/modules"
: > "$work/tree/modules/values.yaml"
dir_of() { if [ -n "${ORDERED:-}" ]; then echo "$work/tree/modules/$((10#$1))-mod$1"; else echo "$work/tree/modules/mod$1"; fi; }
for i in $(seq -w 1 "$n"); do
  m=$(dir_of "$i")
  mkdir -p "$m/templates"
  printf 'apiVersion: v2\nname: mod%s\nversion: 0.1.0\n' "$i" > "$m/Chart.yaml"
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  a: "1"\n' > "$m/templates/cm.yaml"
  echo "mod${i}Enabled: true" >> "$work/tree/modules/values.yaml"
done
printf 'global: |\n  a: 1\n' > "$work/tree/config.yaml"

RUST_LOG=${PROFILE:+kube_emulator=trace} "$emu_bin" --port 0 --kubeconfig "$work/kubeconfig" > "$work/emulator.log" 2>&1 &
pids+=($!)
emu_pid=$!
until [ -s "$work/kubeconfig" ]; do sleep 0.05; done
export KUBECONFIG="$work/kubeconfig"
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"

# cpu_of PID: user + system seconds of a live process
cpu_of() { awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat"; }

baseline() { # $1: namespace; prints its seconds and the CPU seconds of its helm processes
  local s; s=$(now)
  for i in $(seq -w 1 "$n"); do
    "$work/helm-base" upgrade --install "mod$i" "$(dir_of "$i")" -n "$1" --create-namespace \
      --history-max 10 > /dev/null
  done
  # `times`: the children's user and system time (waited helm processes), e.g. "0m2.405s 0m1.816s"
  # (into a file: in a pipe or $(...) the builtin would run in a fresh subshell and see none)
  times > "$work/times"
  echo "$(echo "$(now) - $s" | bc) $(tail -1 "$work/times" | awk '{
    split($1, u, "m"); split($2, y, "m"); sub("s", "", u[2]); sub("s", "", y[2])
    print u[1] * 60 + u[2] + y[1] * 60 + y[2] }')"
}

parallel_baseline() { # $1: namespace; prints its seconds (ORDERED: one order after another, so
  # one at a time, as the loop)
  local s i p=${PARALLEL:-$(nproc)}; s=$(now)
  [ -n "${ORDERED:-}" ] && p=1
  for i in $(seq -w 1 "$n"); do echo "mod$i $(dir_of "$i")"; done |
    xargs -P "$p" -n 2 sh -c '"$0" upgrade --install "$2" "$3" -n "$1" --create-namespace --history-max 10 > /dev/null' \
      "$work/helm-base" "$1"
  echo "$(now) - $s" | bc
}

# PROFILE: where a converge's time went. $1: side, $2: its start, $3: its end (epoch seconds);
# prints first-helm delay, helm time (sum, mean), gaps between helm processes, tail after the last,
# and API requests per helm process (from the emulator's request log inside the helm windows).
breakdown() {
  [ -n "${PROFILE:-}" ] || return 0
  awk -v side="$1" -v t0="$2" -v t1="$3" '
    { s[NR]=$1; e[NR]=$2 }
    END {
      for (i = 1; i <= NR; i++) { sum += e[i] - s[i]; if (i > 1) gap += s[i] - e[i-1] }
      printf "    %-4s total %6.2f  first helm after %5.3f  helm %6.2f (%3d x %5.1f ms)  gaps %5.3f  tail %5.3f",
        side, t1 - t0, s[1] - t0, sum, NR, 1000 * sum / NR, gap, t1 - e[NR]
    }' "$work/calls.$1"
  echo "  API requests $(($(wc -l < "$work/emulator.log") - $4))"
}
# PROFILE: the API requests of the emulator log since line $1, by method and path shape
requests() {
  tail -n +"$(($1 + 1))" "$work/emulator.log" | sed 's/\x1b\[[0-9;]*m//g' | grep -o 'method=[A-Z]* path=[^ ]*' \
    | sed -E 's/(mod|base|op|old)[0-9]+/X/g' | sort | uniq -c | sort -rn | head -20
}

operator_start() { # $1: binary, $2: side (helm wrapper), $3: namespace, $4: port; prints the pid
  ADDON_OPERATOR_NAMESPACE="$3" "$1" start --working-dir "$work/tree" --config-file "$work/tree/config.yaml" \
    --helm-binary "$work/helm-$2" --tmp-dir "$work/run-$3" --prometheus-listen-address 127.0.0.1 \
    --prometheus-listen-port "$4" --debug-unix-socket "$work/debug-$3.socket" --log-level warn \
    --resources-monitor-interval "$monitor" --kube-config "$work/kubeconfig" "${unthrottled[@]}" > "$work/operator-$3.log" 2>&1 &
  echo $!
}

. "$root/bench/lib.sh"

declare -A running=()
stop_operators() { # the previous round's operators, so their monitors do not load this round
  for pid in "${running[@]}"; do kill "$pid" 2>/dev/null || true; done
  running=(); sleep 0.5
}

converge() { # $1: binary, $2: side, $3: namespace; sets $elapsed, keeps the operator running
  : > "$work/calls.$2"
  local port pid s; port=$(free_port); s=$(now); conv_start=$s
  pid=$(operator_start "$1" "$2" "$3" "$port")
  pids+=("$pid"); running[$2]=$pid
  wait_ready "$port" "$pid" "$work/operator-$3.log" || exit 1
  elapsed=$(echo "$(now) - $s" | bc)
  sleep 0.5 # a helm process still starting when /readyz turned 200 would show here
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

sides=op
[ -n "${BEFORE_BIN:-}" ] && sides="op old"
echo "modules: $n (one ConfigMap each), rounds: $rounds, helm: $($helm version --template '{{.Version}}')"
echo "operator: $bin${BEFORE_BIN:+; before: $BEFORE_BIN}"
printf 'round  baseline_s  parallel_s'; for side in $sides; do printf '  %s_s  ratio  helm_procs' "$side"; done; echo
for r in $(seq 1 "$rounds"); do
  stop_operators
  : > "$work/calls.base"
  l0=$(wc -l < "$work/emulator.log"); s0=$(now)
  e0=$(cpu_of "$emu_pid")
  read -r b helm_cpu < <(baseline "base$r")
  echo "$b / (($helm_cpu + $(cpu_of "$emu_pid") - $e0) / $(nproc))" | bc -l >> "$work/bounds"
  pb=$(parallel_baseline "par$r")
  profile=$(breakdown base "$s0" "$(echo "$s0 + $b" | bc)" "$l0")
  [ -n "${PROFILE:-}" ] && [ "$r" = 1 ] && profile+=$'\n'$(requests "$l0")
  line=$(printf '%5s  %10.2f  %10.2f' "$r" "$b" "$pb")
  for side in $sides; do
    [ "$side" = op ] && binary=$bin || binary=$BEFORE_BIN
    [ "$side" = old ] && stop_operators
    l0=$(wc -l < "$work/emulator.log")
    converge "$binary" "$side" "$side$r"
    profile+=$'\n'$(breakdown "$side" "$conv_start" "$(echo "$conv_start + $elapsed" | bc)" "$l0")
    [ -n "${PROFILE:-}" ] && [ "$r" = 1 ] && profile+=$'\n'$(requests "$l0")
    ratio=$(echo "$b / $elapsed" | bc -l)
    echo "$ratio" >> "$work/ratios.$side"
    echo "$pb / $elapsed" | bc -l >> "$work/pratios.$side"
    line+=$(printf '  %6.2f  %5.2f  %3s' "$elapsed" "$ratio" "$(wc -l < "$work/calls.$side")")
  done
  echo "$line   (baseline: $(wc -l < "$work/calls.base") helm processes)"
  [ -z "${PROFILE:-}" ] || echo "$profile"
done
echo "bound from the loop's CPU (helm + emulator over $(nproc) cores): median $(median < "$work/bounds" | xargs printf '%.2f')"
for side in $sides; do
  echo "$side: median ratio baseline/operator $(median < "$work/ratios.$side" | xargs printf '%.2f')," \
    "parallel baseline (xargs -P ${PARALLEL:-$(nproc)})/operator $(median < "$work/pratios.$side" | xargs printf '%.2f');" \
    "helm processes of the last converge: $(ops "$work/calls.$side" | sort | uniq -c | xargs)"
  : > "$work/calls.$side"
done

# idle: one operator of each side, started afresh and converged above, nothing else running
stop_operators
[ "$idle" -gt 0 ] || exit 0
for side in $sides; do
  [ "$side" = op ] && binary=$bin || binary=$BEFORE_BIN
  converge "$binary" "$side" "$side$((rounds + 1))"
  : > "$work/calls.$side"
done
sleep "$idle"
for side in $sides; do
  procs=$(wc -l < "$work/calls.$side")
  echo "$side idle: $procs helm processes in ${idle}s, resource monitor every $monitor, $n chart modules" \
    "($(echo "$procs * 60 / $idle" | bc -l | xargs printf '%.1f') per minute: $(ops "$work/calls.$side" | sort | uniq -c | xargs))"
done
