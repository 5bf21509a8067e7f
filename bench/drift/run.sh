#!/usr/bin/env bash
# Field-level drift of release objects (issue 37): module `web` (a Deployment, a Deployment whose
# replicas an HPA owns, a ConfigMap in warn mode, a post-install/upgrade hook Job) with
# --drift-mode enforce. Measures and prints:
#   1. `kubectl scale` of the enforced Deployment until the operator has written it back (ROUNDS
#      times; goal <= 2 s each);
#   2. warn: a hand edit of the warn ConfigMap until the drift metric counts it (the field stays);
#   3. the ignored field: a scale of the HPA's Deployment stays and counts nothing;
#   4. DURATION seconds of an HPA-like writer on the ignored field (a scale every second), Helm
#      upgrades that re-run the hook Job (a values edit every 20 s) and the server's own status
#      writes: the false drift count (goal 0).
# Usage: bench/drift/run.sh [DURATION=600] [ROUNDS=5]
# SERVER=emulator (default) or real (kube-apiserver and etcd from .tools/bin; no controllers: the
# hook is a ConfigMap there, since no Job would ever complete). PROFILE=debug uses target/debug.
# Build first: cargo build [--release] -p addon-operator -p kube-emulator --bins
set -euo pipefail
duration=${1:-600}
rounds=${2:-5}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$root/bench/lib.sh"
cargo_profile
bin=${ADDON_OPERATOR_BIN:-$root/target/$profile/addon-operator}
emu=${KUBE_EMULATOR_BIN:-$root/target/$profile/kube-emulator}
export PATH="$root/.tools/bin:$PATH"
. "$root/bench/real-cluster.sh"
work=$(mktemp -d)
trap 'kill ${pid:-} ${writer:-} ${cluster_pids:-} 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); server: ${SERVER:-emulator}; operator: $bin"
start_cluster "$work"
k() { kubectl --kubeconfig "$cluster_kubeconfig" "$@"; }
k create namespace ops > /dev/null
k -n ops create configmap addon-operator --from-literal=global='{}' --from-literal=web='n: 0' > /dev/null

tree="$work/tree"
chart="$tree/modules/010-web"
mkdir -p "$chart/templates"
echo 'webEnabled: true' > "$tree/modules/values.yaml"
printf 'n: 0\n' > "$chart/values.yaml"
printf 'apiVersion: v2\nname: web\nversion: 0.1.0\n' > "$chart/Chart.yaml"
deployment() {
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
  annotations: $2
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers: [{name: app, image: nginx, resources: {limits: {memory: 1024Mi}}}]
YAML
}
deployment web '{}' > "$chart/templates/web.yaml"
deployment hpa '{"drift.addon-operator.io/ignore": "/spec/replicas"}' > "$chart/templates/hpa.yaml"
cat > "$chart/templates/noted.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: noted
  annotations: {"drift.addon-operator.io/mode": warn}
data: {value: "{{ .Values.web.n }}"}
YAML
if [ "${SERVER:-emulator}" = real ]; then
  cat > "$chart/templates/hook.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-hook
  annotations: {"helm.sh/hook": "post-install,post-upgrade", "helm.sh/hook-delete-policy": before-hook-creation}
data: {value: "{{ .Values.web.n }}"}
YAML
else
  cat > "$chart/templates/hook.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: web-hook
  annotations: {"helm.sh/hook": "post-install,post-upgrade", "helm.sh/hook-delete-policy": before-hook-creation}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: busybox, command: ["true"], args: ["{{ .Values.web.n }}"]}]
YAML
fi

port=$(free_port)
"$bin" start --working-dir "$tree" --kube-config "$cluster_kubeconfig" --namespace ops \
  --drift-mode enforce --tmp-dir "$work/tmp" --prometheus-listen-address 127.0.0.1 \
  --prometheus-listen-port "$port" --debug-unix-socket "$work/debug.socket" > "$work/operator.log" 2>&1 &
pid=$!
wait_ready "$port" "$pid" "$work/operator.log"
until grep -q "the module's release is" "$work/operator.log"; do sleep 0.05; done
drift() { metric_sum "$port" addon_operator_module_drift_total; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
replicas() { k -n ops get deploy "$1" -o 'jsonpath={.spec.replicas}'; }

echo "1. kubectl scale of the enforced Deployment until written back (goal <= 2000 ms):"
for i in $(seq 1 "$rounds"); do
  start=$(now_ms)
  k -n ops scale deploy web --replicas=5 > /dev/null
  until [ "$(replicas web)" = 1 ]; do sleep 0.02; done
  echo "   round $i: $(( $(now_ms) - start )) ms (from the kubectl call to the read that sees 1)"
done

before=$(drift)
start=$(now_ms)
k -n ops patch cm noted -p '{"data":{"value":"by hand"}}' > /dev/null
until [ "$(drift)" -gt "$before" ]; do sleep 0.02; done
kept=$(k -n ops get cm noted -o 'jsonpath={.data.value}')
echo "2. warn: counted after $(( $(now_ms) - start )) ms; the field is still '$kept';" \
  "log lines: $(grep -c 'changed outside the release' "$work/operator.log")"
k -n ops patch cm noted -p '{"data":{"value":"0"}}' > /dev/null

sleep 1
before=$(drift)
k -n ops scale deploy hpa --replicas=3 > /dev/null
sleep 2
echo "3. ignored field: replicas stay $(replicas hpa); drift counted: $(( $(drift) - before ))"

before=$(drift)
restores_before=$(metric_sum "$port" addon_operator_module_drift_restores_total)
( n=0; while true; do k -n ops scale deploy hpa --replicas=$((2 + n % 3)) > /dev/null; n=$((n + 1)); sleep 1; done ) &
writer=$!
end=$(( $(date +%s) + duration ))
upgrades=0
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 20
  upgrades=$((upgrades + 1))
  k -n ops patch cm addon-operator -p "{\"data\":{\"web\":\"n: $upgrades\"}}" > /dev/null
done
kill "$writer" 2>/dev/null || true
wait "$writer" 2>/dev/null || true
writer=
sleep 3
false_drift=$(( $(drift) - before ))
restores=$(( $(metric_sum "$port" addon_operator_module_drift_restores_total) - restores_before ))
revisions=$(k -n ops get secrets -l owner=helm,name=web -o name | wc -l)
echo "4. ${duration}s of an HPA-like writer on the ignored field, $upgrades values edits" \
  "($revisions release revisions kept), hook runs and status writes: false drift $false_drift," \
  "restores $restores (goal 0 and 0)"
echo "operator warnings (step 2 logs one): $(grep -c ' WARN ' "$work/operator.log" || true); load after: $(cut -d' ' -f1-3 /proc/loadavg)"
