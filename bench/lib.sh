# Shared by the bench scripts (source it): the build profile, a free port, and waiting for the
# operator's first converge.

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
