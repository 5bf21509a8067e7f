# Shared by the bench scripts that run on either API server (source it after lib.sh).
# start_cluster DIR: starts the API server chosen by $SERVER in DIR and sets
#   cluster_url       the server's URL
#   cluster_kubeconfig a kubeconfig for it (admin)
#   cluster_curl      curl arguments that reach it (CA and token for the real one)
#   cluster_pids      the processes to kill at exit
# SERVER=emulator (default): the release kube-emulator ($KUBE_EMULATOR_BIN).
# SERVER=real: etcd and kube-apiserver from .tools/bin (scripts/install-tools builds them) with a
#   throwaway CA and an admin token, on loopback. The bench's Python helpers read $CLUSTER_CA and
#   $CLUSTER_TOKEN.

start_cluster() {
  local dir=$1
  case "${SERVER:-emulator}" in
    emulator) start_emulator "$dir" ;;
    real) start_real "$dir" ;;
    *) echo "SERVER must be emulator or real, not '$SERVER'" >&2; return 2 ;;
  esac
}

start_emulator() {
  local dir=$1 port
  port=$(free_port)
  "$emu" --port "$port" --kubeconfig "$dir/kubeconfig" > /dev/null 2>&1 &
  cluster_pids="$!"
  until [ -s "$dir/kubeconfig" ]; do sleep 0.05; done
  cluster_url="http://127.0.0.1:$port"
  cluster_kubeconfig="$dir/kubeconfig"
  cluster_curl=()
}

# real_pki DIR: a CA, the API server's serving certificate and the service-account key pair.
real_pki() {
  local dir=$1 ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -days 2 -subj /CN=bench-ca -keyout "$dir/ca.key" -out "$dir/ca.crt" 2> /dev/null
  openssl req "${ec[@]}" -subj /CN=127.0.0.1 -keyout "$dir/server.key" -out "$dir/server.csr" 2> /dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$dir/san.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -extfile "$dir/san.ext" -out "$dir/server.crt" 2> /dev/null
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/sa.key"
  openssl pkey -in "$dir/sa.key" -pubout -out "$dir/sa.pub"
}

start_real() {
  local dir=$1 eport pport port token=bench-admin-token
  real_pki "$dir"
  eport=$(free_port)
  pport=$(free_port)
  etcd --name bench --data-dir "$dir/etcd" --unsafe-no-fsync --log-level warn \
    --listen-client-urls "http://127.0.0.1:$eport" --advertise-client-urls "http://127.0.0.1:$eport" \
    --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "bench=http://127.0.0.1:$pport" > "$dir/etcd.log" 2>&1 &
  cluster_pids="$!"
  printf '%s,bench-admin,bench-admin,"system:masters"\n' "$token" > "$dir/tokens.csv"
  port=$(free_port)
  kube-apiserver --etcd-servers "http://127.0.0.1:$eport" --bind-address 127.0.0.1 \
    --secure-port "$port" --tls-cert-file "$dir/server.crt" --tls-private-key-file "$dir/server.key" \
    --token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
    --service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --cert-dir "$dir/certs" > "$dir/kube-apiserver.log" 2>&1 &
  cluster_pids="$cluster_pids $!"
  cluster_url="https://127.0.0.1:$port"
  cluster_curl=(--cacert "$dir/ca.crt" -H "Authorization: Bearer $token")
  export CLUSTER_CA="$dir/ca.crt" CLUSTER_TOKEN=$token
  cluster_kubeconfig="$dir/kubeconfig"
  cat > "$cluster_kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: "$cluster_url", certificate-authority: "$dir/ca.crt"}}]
users: [{name: bench, user: {token: $token}}]
contexts: [{name: bench, context: {cluster: bench, user: bench}}]
current-context: bench
KUBECONFIG
  local waited=0
  until curl -sf "${cluster_curl[@]}" "$cluster_url/readyz" > /dev/null; do
    if [ $((waited += 1)) -gt 600 ]; then
      tail -20 "$dir/kube-apiserver.log" >&2
      return 1
    fi
    sleep 0.1
  done
}
