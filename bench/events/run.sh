#!/usr/bin/env bash
# Events under a hook that keeps failing: a global hook fails every 5 s (its retry delay) for
# DURATION; prints how many times it failed, how many Event objects the API server holds for it
# and their counts (client-go's correlation: identical failures update one Event's count; past
# the spam filter's tokens the count is sent at most every 10 s), and the operator's
# addon_operator_admin_events_total by result.
# Usage: DURATION=10m SERVER=embedded|real bench/events/run.sh
#   DURATION  how long the hook fails (default 10m; sleep(1) syntax: 90s, 2m)
#   SERVER    embedded (default: --embedded-cluster) or real (kube-apiserver and etcd from
#             .tools/bin, built by scripts/install-tools)
#   PROFILE   the build (default debug: not a timing benchmark)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
export PATH="$root/.tools/bin:$PATH"
duration=${DURATION:-10m}
server=${SERVER:-embedded}
. "$root/bench/lib.sh"
. "$root/bench/real-cluster.sh"
PROFILE=${PROFILE:-debug}
cargo_profile
cargo build -q "${build_flags[@]}" -p addon-operator --bin addon-operator
bin="$root/target/$profile/addon-operator"
work=$(mktemp -d /tmp/bench-events.XXXXXX)
mkdir -p "$work/tree/global-hooks" "$work/tree/modules" "$work/cluster"
cat > "$work/tree/global-hooks/flaky" <<'HOOK'
#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","schedule":[{"name":"every-5s","crontab":"*/5 * * * * *"}]}'
  exit 0
fi
echo "the backend at 10.0.0.1:443 refused the connection" >&2
exit 1
HOOK
chmod +x "$work/tree/global-hooks/flaky"
port=$(free_port)
flags=(start --working-dir "$work/tree" --tmp-dir "$work/tmp" --debug-unix-socket "$work/debug.socket"
  --prometheus-listen-address 127.0.0.1 --prometheus-listen-port "$port"
  --retry-initial-delay 5s --retry-max-delay 5s)
cluster_pids=
op=
trap 'kill $op $cluster_pids 2>/dev/null || true' EXIT
case "$server" in
  embedded)
    flags+=(--embedded-cluster --config-file "$work/config.yaml")
    echo "{}" > "$work/config.yaml"
    kubeconfig="$work/tmp/embedded-cluster.kubeconfig" ;;
  real)
    SERVER=real start_cluster "$work/cluster"
    kubeconfig=$cluster_kubeconfig
    kubectl --kubeconfig "$kubeconfig" create configmap addon-operator -n default > /dev/null
    flags+=(--kube-config "$kubeconfig" --namespace default) ;;
  *) echo "SERVER must be embedded or real" >&2; exit 2 ;;
esac
"$bin" "${flags[@]}" > /dev/null 2> "$work/operator.log" &
op=$!
wait_ready "$port" "$op" "$work/operator.log" 300
echo "server: $server; the hook fails every 5 s for $duration"
sleep "$duration"
failures=$(metric_sum "$port" 'addon_operator_task_failures_total')
# held-back counts are sent within 10 s: read the Events after that, then the failures again
sleep 12
events=$(kubectl --kubeconfig "$kubeconfig" get events -n default -o json \
  | jq -c '[.items[] | select(.involvedObject.name == "global.hooks" and .reason == "HookFailed") | .count]')
after=$(metric_sum "$port" 'addon_operator_task_failures_total')
echo "hook failures: $failures at the end of DURATION, $after when the Events were read"
echo "Event objects: $(jq length <<< "$events"); their counts: $events (sum $(jq add <<< "$events"))"
curl -sf "http://127.0.0.1:$port/metrics" | grep '^addon_operator_admin_events_total' || true
