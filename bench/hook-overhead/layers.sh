#!/usr/bin/env bash
# What each layer of a hook run costs (wall time and the operator's own CPU per run): a bash loop, a tokio
# loop, the process runner, the runner with a hook's environment, and run_hook with and without
# the file pool, in interleaved rounds. Usage: bench/hook-overhead/layers.sh [N] [ROUNDS] [TMP_DIR]
#   default N=1000, ROUNDS=3, TMP_DIR=/var/tmp. PROFILE as in run.sh (release, debug, profiling).
set -euo pipefail
cd "$(dirname "$0")/../.."
hooks="${1:-1000}"
rounds="${2:-3}"
dir="${3:-/var/tmp}"
. bench/lib.sh
cargo_profile
echo "machine: $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $dir on $(stat -f -c %T "$dir")"
cargo build "${build_flags[@]}" -q -p addon-operator --example hook_layers
"./target/$profile/examples/hook_layers" "$hooks" "$rounds" "$dir"
