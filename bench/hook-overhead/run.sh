#!/usr/bin/env bash
# Hook execution overhead: N no-op hooks through the operator's pipeline vs a bare spawn loop.
# Usage: bench/hook-overhead/run.sh [N] [TMP_DIR...]  (default N=1000; the pipeline runs once per
# TMP_DIR, default: the system temp dir and /dev/shm when present). Prints the machine, then rates.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-1000}"
shift || true
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=("${TMPDIR:-/tmp}")
  [ -d /dev/shm ] && dirs+=(/dev/shm)
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "temp dir filesystems: $(for d in "${dirs[@]}"; do printf '%s=%s ' "$d" "$(stat -f -c %T "$d")"; done)"
echo "rustc: $(rustc --version)"
cargo build --release -q -p addon-operator --example hook_overhead
for dir in "${dirs[@]}"; do
  echo
  ./target/release/examples/hook_overhead "$runs" "$dir"
done
