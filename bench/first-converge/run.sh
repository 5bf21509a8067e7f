#!/usr/bin/env bash
# First converge of M unnumbered (all of ORDER 1, so they run side by side) hooks-only modules ×
# 3 hooks (onStartup, beforeHelm, a schedule) and an enabled script each: `addon-operator start`
# (local mode) from spawn to /readyz = 200, against a bash script running the same processes
# one by one, in interleaved rounds.
# The hooks have no extension, so the operator asks each `hook list` first (as upstream does) and
# the by-hand script runs those 300 probes too (`env -i HOOK hook list`); HOOK_EXT=.sh names the
# hooks `*.sh`: no probes on either side, 6×M processes.
# Each round also makes, writes and removes the hook contract's files of a start (18 a module) in
# TMP_DIR, and the last line prints the bound they leave: by hand / ((by hand + files) / cores).
# SLEEP=0.2: every beforeHelm hook sleeps that long (in its binding run, not in its probe), and the baseline is the same operator with
# --parallel-module-runs 1 (e.g. SLEEP=0.2 bench/first-converge/run.sh 40 3).
# Usage: bench/first-converge/run.sh [M=100] [ROUNDS=5] [TMP_DIR=/var/tmp]
# OPERATORS=bin1,bin2 compares several operator builds in the same rounds (default: the build below).
set -euo pipefail
cd "$(dirname "$0")/../.."
modules="${1:-100}"
rounds="${2:-5}"
tmp_dir="${3:-/var/tmp}"
echo "machine: $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), tmp dir $tmp_dir ($(stat -f -c %T "$tmp_dir"))"
# PROFILE=profiling builds at release speed without LTO (minutes instead of a release build's 25).
. bench/lib.sh
cargo_profile
cargo build "${build_flags[@]}" -q -p addon-operator --bin addon-operator --example first_converge
operators="${OPERATORS:-./target/$profile/addon-operator}"
"./target/$profile/examples/first_converge" "$operators" "$modules" "$rounds" "$tmp_dir" ${SLEEP:+"$SLEEP"}
