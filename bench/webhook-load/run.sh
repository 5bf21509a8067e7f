#!/usr/bin/env bash
# The webhook server under load, in local mode with its throwaway certificate: CLIENTS clients
# post a MIB-MiB AdmissionReview at once (a hook answers each), then IDLE idle TCP connections
# are held open. Prints the time until every review was answered and the operator's peak RSS,
# then whether /healthz still answers and the operator's open descriptors meanwhile (bounded by
# --webhook-max-handshakes and --webhook-max-connections, docs/limits.md).
# Usage: bench/webhook-load/run.sh [CLIENTS] [MIB] [IDLE] (default 80 30 22500); extra operator
# flags in $OPERATOR_FLAGS. Build first: cargo build --release -p addon-operator (or PROFILE=debug).
set -euo pipefail
clients=${1:-80} mib=${2:-30} idle=${3:-22500}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/bench/lib.sh"
cargo_profile
bin=${ADDON_OPERATOR_BIN:-$root/target/$profile/addon-operator}
work=$(mktemp -d)
trap 'kill "${pid:-0}" 2>/dev/null || true; wait "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
# the client holds IDLE sockets (within the hard limit of descriptors); the operator gets the
# same limit, so only its own bounds count
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$idle" -gt $((hard - 1000)) ]; then
  echo "idle connections capped at $((hard - 1000)) (descriptor hard limit $hard)"
  idle=$((hard - 1000))
fi
ulimit -n "$hard"

mkdir -p "$work/global-hooks" "$work/modules/010-big/hooks"
echo "bigEnabled: true" > "$work/modules/values.yaml"
cat > "$work/modules/010-big/hooks/allow" <<'HOOK'
#!/bin/sh
if [ "$1" = --config ]; then
  echo '{"configVersion":"v1","kubernetesValidating":[{"name":"big.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}]}'
  exit 0
fi
echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH"
HOOK
chmod +x "$work/modules/010-big/hooks/allow"

port=$(free_port) http=$(free_port)
# shellcheck disable=SC2086 # OPERATOR_FLAGS is a list of flags
"$bin" start --working-dir "$work" --tmp-dir "$work/tmp" --prometheus-listen-address 127.0.0.1 \
  --prometheus-listen-port "$http" --debug-unix-socket "$work/debug.socket" --log-level warn \
  --validating-webhook-listen-address 127.0.0.1 --validating-webhook-listen-port "$port" \
  ${OPERATOR_FLAGS:-} 2> "$work/operator.log" &
pid=$!
wait_ready "$http" "$pid" "$work/operator.log" 120
until [ -e "$work/tmp/webhook-certs/validating/ca.crt" ] &&
  curl -sf --cacert "$work/tmp/webhook-certs/validating/ca.crt" "https://localhost:$port/healthz" > /dev/null; do
  kill -0 "$pid" || { tail -20 "$work/operator.log" >&2; exit 1; }
  sleep 0.1
done
echo "binary: $bin; descriptors open when ready: $(ls "/proc/$pid/fd" | wc -l)"
python3 "$root/bench/webhook-load/load.py" "$port" "$work/tmp/webhook-certs/validating/ca.crt" \
  "$pid" "$clients" "$mib" "$idle"
