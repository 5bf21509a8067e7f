#!/usr/bin/env bash
# Side by side with the Go addon-operator (issue 35): runs each module tree under both operators
# on one API server, each in its own namespace and ConfigMap, with hooks that record what they
# receive; plays the same scripted events on both; prints every difference, normalised for what
# may legitimately differ, and a count. docs/compatibility.md, "Side by side with the Go operator".
#
# Usage: GO_ADDON_OPERATOR=/path/to/go/addon-operator bench/vs-go/run.sh [TREE_REGEX]
# Env:   GO_ADDON_OPERATOR_SRC=/path  a checkout of flant/addon-operator: adds its examples/ and the
#                                     testdata trees its Go tests start
#        SHELL_OPERATOR_SRC=/path     a checkout of flant/shell-operator: adds its examples/
#        ADDON_OPERATOR_BIN           this project's binary (default target/debug/addon-operator;
#                                     cargo build -p addon-operator builds it)
#        SERVER=real|emulator         the API server (default real: kube-apiserver and etcd from
#                                     .tools/bin, scripts/install-tools builds them)
#        OUT=dir                      where runs are kept (default a temp dir, kept and printed)
#        LIST=1                       only list the trees
# Needs python3 with PyYAML, curl, openssl, jq (the example hooks use it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/bench/vs-go"
filter=${1:-.}
if [ "${LIST:-0}" = 1 ]; then
  python3 -c "import sys; sys.path.insert(0, '$here'); import trees
for t in trees.catalog('$root'): print(t['id'] + ('  (skipped: ' + t['skip'] + ')' if t.get('skip') else ''))" | grep -E -- "$filter"
  exit 0
fi
: "${GO_ADDON_OPERATOR:?set GO_ADDON_OPERATOR to the Go addon-operator binary}"
export GO_ADDON_OPERATOR
export ADDON_OPERATOR_BIN=${ADDON_OPERATOR_BIN:-$root/target/debug/addon-operator}
export KUBE_EMULATOR_BIN=${KUBE_EMULATOR_BIN:-$(dirname "$ADDON_OPERATOR_BIN")/kube-emulator}
emu=$KUBE_EMULATOR_BIN
export SERVER=${SERVER:-real}
export PATH="$root/.tools/bin:$PATH"
out=${OUT:-$(mktemp -d /tmp/vs-go.XXXXXX)}
mkdir -p "$out"
. "$root/bench/lib.sh"
. "$root/bench/real-cluster.sh"

mapfile -t ids < <(python3 -c "import sys; sys.path.insert(0, '$here'); import trees
for t in trees.catalog('$root'):
  if not t.get('skip'): print(t['id'])" | grep -E -- "$filter")
echo "go: $("$GO_ADDON_OPERATOR" version 2>&1 | head -1); this: $("$ADDON_OPERATOR_BIN" version 2>&1 | head -1); server: $SERVER; trees: ${#ids[@]}; out: $out"
cluster_pids=
trap 'kill $cluster_pids 2>/dev/null || true' EXIT
for id in "${ids[@]}"; do
  dir="$out/$(echo "$id" | tr '/+' '__')"
  mkdir -p "$dir/cluster"
  echo "== $id"
  start_cluster "$dir/cluster"
  python3 "$here/vsgo.py" "$id" "$dir/run" "$cluster_kubeconfig" || echo "  harness failed on $id"
  kill $cluster_pids 2>/dev/null || true
  wait $cluster_pids 2>/dev/null || true
  cluster_pids=
  rm -rf "$dir/cluster/etcd"
done
python3 "$here/compare.py" "$out"
