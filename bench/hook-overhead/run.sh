#!/usr/bin/env bash
# Hook execution overhead through the real runtime: `addon-operator start` (local mode, no cluster)
# with one hooks-only module of N no-op beforeHelm hooks, timed by its own ModuleRun metric, in
# interleaved rounds with a bash loop and a std::process::Command loop spawning the same script N
# times. Usage: bench/hook-overhead/run.sh [N] [ROUNDS] [TMP_DIR...]
#   default N=400, ROUNDS=5, TMP_DIRs: /var/tmp (disk) and /dev/shm (tmpfs) when present.
# OPERATORS=bin1,bin2 compares several operator builds in the same rounds (default: the build below).
# EXTRA_ENV_VARS=N adds N variables shaped like a pod's service links (FOO_SERVICE_HOST, ...) to the
# environment of every row, as a namespace with about N/7 Services gives a pod that keeps
# enableServiceLinks on (every spawn copies the whole environment).
# PROFILE=debug skips the release build (figures then include unoptimised Rust); PROFILE=profiling
# builds at release speed without LTO and with symbols (minutes instead of a release build's 25).
set -euo pipefail
cd "$(dirname "$0")/../.."
hooks="${1:-400}"
rounds="${2:-5}"
shift 2 || shift $# || true
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=(/var/tmp)
  [ -d /dev/shm ] && dirs+=(/dev/shm)
fi
. bench/lib.sh
cargo_profile
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tmp dir filesystems: $(for d in "${dirs[@]}"; do printf '%s=%s ' "$d" "$(stat -f -c %T "$d")"; done)"
echo "rustc: $(rustc --version), profile: $profile"
cargo build "${build_flags[@]}" -q -p addon-operator --bin addon-operator --example hook_overhead
# service-link shaped variables: 7 per Service of one TCP port
for ((i = 0; i < ${EXTRA_ENV_VARS:-0}; i++)); do
  svc="BENCH_SVC_$((i / 7))"
  case $((i % 7)) in
    0) export "${svc}_SERVICE_HOST=10.96.$((i / 250)).$((i % 250))" ;;
    1) export "${svc}_SERVICE_PORT=8080" ;;
    2) export "${svc}_PORT=tcp://10.96.$((i / 250)).$((i % 250)):8080" ;;
    3) export "${svc}_PORT_8080_TCP=tcp://10.96.$((i / 250)).$((i % 250)):8080" ;;
    4) export "${svc}_PORT_8080_TCP_PROTO=tcp" ;;
    5) export "${svc}_PORT_8080_TCP_PORT=8080" ;;
    6) export "${svc}_PORT_8080_TCP_ADDR=10.96.$((i / 250)).$((i % 250))" ;;
  esac
done
echo "environment: $(env | wc -l) variables, $(env | wc -c) bytes"
operators="${OPERATORS:-./target/$profile/addon-operator}"
"./target/$profile/examples/hook_overhead" "$operators" "$hooks" "$rounds" "${dirs[@]}"
