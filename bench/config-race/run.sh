#!/usr/bin/env bash
# The config ConfigMap race at benchmark size: against the kube emulator, a global hook increments
# global.counter on every change of a ticker ConfigMap (every 50 ms) while a client makes N
# kubectl-style GET + PUT edits of another key (one every 30 ms, 409s retried).
# Prints: lost user edits, lost hook increments and reloads caused by the operator's own writes
# out of N (and the conflicts, hook runs and own-write echoes seen), from the end-to-end test
# `config_race` run with CONFIG_RACE_EDITS=N. Not a timing benchmark: a debug build is fine.
# Usage: bench/config-race/run.sh [N] (default 1000). Needs jq (scripts/install-tools).
set -euo pipefail
n=${1:-1000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
export PATH="$root/.tools/bin:$PATH"
CONFIG_RACE_EDITS=$n cargo test -q -p addon-operator --test e2e config_race -- --nocapture 2>&1 \
  | grep -E '^config-race:|test result|panicked|assert'
