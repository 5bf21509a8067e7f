# Shared by the bench scripts (source it): the build profile, a free port, waiting for the
# operator's first converge, and waiting until it is idle.

# Sets `profile` from $PROFILE (release unless given: release, debug, or a Cargo profile such as
# profiling) and `build_flags`, the cargo flags that build into target/$profile.
cargo_profile() {
  profile="${PROFILE:-release}"
  case "$profile" in
    release) build_flags=(--release) ;;
    debug) build_flags=() ;;
    *) build_flags=(--profile "$profile") ;;
  esac
}

# Prints a free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready PORT PID LOG [SECONDS]: returns once the operator on PORT answers /readyz (its first
# converge is done); fails, printing the end of LOG, when process PID exits first or after SECONDS
# (default 600).
wait_ready() {
  local port=$1 pid=$2 log=$3 limit=${4:-600} waited=0
  until curl -sf "http://127.0.0.1:$port/readyz" > /dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || [ $((waited += 1)) -gt $((limit * 50)) ]; then
      tail -20 "$log" >&2
      return 1
    fi
    sleep 0.02
  done
}

# metric_sum PORT REGEX: the sum of the operator's metric series whose name matches REGEX.
metric_sum() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 ~ "^(" m ")({|$)" {s += $2} END {printf "%d\n", s}'
}

# wait_idle PORT SECONDS: returns once no hook run has ended for SECONDS one-second samples in a
# row and every queue is empty. (The queue gauge is published every 5 s, so it alone can read 0
# while a backlog is being worked off.)
wait_idle() {
  local port=$1 need=$2 still=0 last now
  local runs='addon_operator_(global|module)_hook_run_seconds_count'
  last=$(metric_sum "$port" "$runs")
  while [ $still -lt "$need" ]; do
    sleep 1
    now=$(metric_sum "$port" "$runs")
    if [ "$now" = "$last" ] && [ "$(metric_sum "$port" addon_operator_tasks_queue_length)" = 0 ]; then
      still=$((still + 1))
    else
      still=0
    fi
    last=$now
  done
}

# Operator flags lifting the client-side request rate limits (upstream's default: 5 requests a
# second, 10 at once, per client): the figures in docs/benchmarks.md measure the operator's own
# work, as they did before the limits existed.
# shellcheck disable=SC2034 # used by the scripts that source this file
unthrottled=(--kube-client-qps=-1 --object-patcher-kube-client-qps=-1 --helm-monitor-kube-client-qps=-1)
