//! A real Kubernetes control plane for the real-cluster test tier: etcd and kube-apiserver
//! (built by `scripts/install-tools`) on loopback, with a throwaway CA, service-account keys,
//! an admin token, and per-test operator identities that hold only the RBAC of `deploy/`.
//!
//! One cluster serves a whole test binary ([`RealCluster::shared`]); tests keep apart by
//! namespace. A watchdog process ends etcd and the API server when the test binary exits, however
//! it exits.

mod pki;
mod proxy;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

pub use pki::{Ca, CertPair};
pub use proxy::{EgressProxy, FrontProxy};

use crate::tools::{KubectlFailed, kubectl as kubectl_with, path_with_tools, require_tool};

/// The token of the cluster's administrator (group `system:masters`).
const ADMIN_TOKEN: &str = "addon-operator-tier-admin";

/// A running etcd + kube-apiserver pair.
pub struct RealCluster {
    /// The temporary directory holding keys, data and logs (removed by the watchdog).
    pub dir: PathBuf,
    /// `https://127.0.0.1:PORT` of the API server.
    pub server: String,
    pub server_addr: SocketAddr,
    /// The CA that signed the API server's certificate (and webhook certificates of tests).
    pub ca: Ca,
    /// A kubeconfig with the admin token.
    pub admin_kubeconfig: PathBuf,
    /// etcd's client URL (`http://127.0.0.1:PORT`), for compaction.
    pub etcd_url: String,
    /// The proxy the API server's webhook calls go through.
    pub egress: EgressProxy,
    _servers: Vec<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Whether the tier's tools are installed; under `CI` their absence fails the test.
pub fn available() -> bool {
    ["etcd", "kube-apiserver", "kubectl", "openssl"]
        .iter()
        .all(|tool| require_tool(tool))
}

impl RealCluster {
    /// The cluster of this test binary, started on first use; `None` (the test skips) when the
    /// tools are missing outside CI.
    pub fn shared() -> Option<&'static RealCluster> {
        static CLUSTER: OnceLock<Option<RealCluster>> = OnceLock::new();
        CLUSTER
            .get_or_init(|| available().then(RealCluster::start))
            .as_ref()
    }

    /// Starts etcd and kube-apiserver in a new temporary directory and waits until the API
    /// server is ready.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("real-cluster-")
            .tempdir()
            .expect("temp dir")
            .keep();
        let ca = Ca::new(&dir, "ca");
        let serving = ca.serving(&dir, "apiserver", &["127.0.0.1", "localhost"]);
        let sa = pki::service_account_keys(&dir);
        let egress = EgressProxy::start(&dir);
        let (etcd, etcd_url) = start_etcd(&dir);
        let port = free_port();
        let apiserver = start_apiserver(&dir, &etcd_url, port, &serving, &sa, &egress);
        watchdog(&dir, &[etcd.id(), apiserver.id()]);
        let server = format!("https://127.0.0.1:{port}");
        let admin_kubeconfig = dir.join("admin.kubeconfig");
        write_kubeconfig(&admin_kubeconfig, &server, &ca.pair.cert, ADMIN_TOKEN);
        let mut cluster = Self {
            server_addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir,
            server,
            ca,
            admin_kubeconfig,
            etcd_url,
            egress,
            _servers: vec![etcd, apiserver],
        };
        cluster.wait_ready();
        cluster
    }

    fn wait_ready(&mut self) {
        let log = self.dir.join("kube-apiserver.log");
        let servers = &mut self._servers;
        let kubeconfig = &self.admin_kubeconfig;
        crate::wait::wait_for(
            "kube-apiserver /readyz",
            Duration::from_secs(120),
            || {
                let exited = servers
                    .iter_mut()
                    .any(|s| !matches!(s.try_wait(), Ok(None)));
                assert!(!exited, "etcd or kube-apiserver exited\n{}", log_tail(&log));
                kubectl_with(kubeconfig, &["get", "--raw", "/readyz"], None).is_ok()
            },
            || log_tail(&log),
        );
    }

    /// `kubectl` as the admin: stdout, or the error text.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, KubectlFailed> {
        kubectl_with(&self.admin_kubeconfig, args, stdin)
    }

    /// Like [`RealCluster::kubectl`], failing the test on an error.
    pub fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        self.kubectl(args, stdin)
            .unwrap_or_else(|err| panic!("kubectl {args:?}: {err}"))
    }

    /// A new namespace `NAME` holding an operator identity bound by `deploy/base/rbac.yaml` only
    /// (its names rewritten to `NAME`), plus `rules` added to its ClusterRoles the way that
    /// file tells users to.
    pub fn operator_identity(&self, name: &str, rules: &ExtraRules) -> OperatorIdentity {
        let rbac = std::fs::read_to_string(repo_root().join("deploy/base/rbac.yaml"))
            .expect("read deploy/base/rbac.yaml")
            // the names and the namespace, not the API group of the status objects
            .replace("addon-operator.io", "\u{0}")
            .replace("addon-operator", name)
            .replace('\u{0}', "addon-operator.io");
        self.kubectl_ok(&["create", "namespace", name], None);
        self.kubectl_ok(&["-n", name, "create", "serviceaccount", name], None);
        self.kubectl_ok(&["apply", "-f", "-"], Some(&rbac));
        for (role, list) in [("bindings", &rules.bindings), ("modules", &rules.modules)] {
            self.add_rules(&format!("{name}-{role}"), list);
        }
        self.service_account_identity(name, name)
    }

    /// What the existing ServiceAccount `account` of `namespace` runs as: a kubeconfig with a
    /// token of it (valid 12 hours).
    pub fn service_account_identity(&self, namespace: &str, account: &str) -> OperatorIdentity {
        let token = self.kubectl_ok(
            &[
                "-n",
                namespace,
                "create",
                "token",
                account,
                "--duration=12h",
            ],
            None,
        );
        let kubeconfig = self.dir.join(format!("{namespace}-{account}.kubeconfig"));
        write_kubeconfig(&kubeconfig, &self.server, &self.ca.pair.cert, token.trim());
        OperatorIdentity {
            namespace: namespace.to_string(),
            kubeconfig,
            token: token.trim().to_string(),
        }
    }

    /// Appends `rules` (JSON objects) to the ClusterRole `role`.
    fn add_rules(&self, role: &str, rules: &[String]) {
        if rules.is_empty() {
            return;
        }
        let text = self.kubectl_ok(&["get", "clusterrole", role, "-o", "json"], None);
        let mut object: serde_json::Value = serde_json::from_str(&text).expect("ClusterRole JSON");
        let mut all = object["rules"].as_array().cloned().unwrap_or_default();
        for rule in rules {
            all.push(serde_json::from_str(rule).expect("a rule as JSON"));
        }
        object["rules"] = serde_json::Value::Array(all);
        self.kubectl_ok(&["replace", "-f", "-"], Some(&object.to_string()));
    }

    /// Compacts etcd at its current revision: watches resuming from an older resourceVersion
    /// (where the API server does not serve them from its watch cache) get `410 Gone`.
    pub fn compact_etcd(&self) -> u64 {
        let range = etcd_post(&self.etcd_url, "/v3/kv/range", r#"{"key":"AA=="}"#);
        let revision: u64 = range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("etcd revision in {range}"));
        let body = format!(r#"{{"revision":"{revision}","physical":true}}"#);
        etcd_post(&self.etcd_url, "/v3/kv/compaction", &body);
        revision
    }
}

/// The last 40 lines of the API server's log.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(40)..];
    format!("{} (tail):\n{}", log.display(), tail.join("\n"))
}

/// Rules (JSON objects) added to the operator's ClusterRoles `NAME-bindings` and `NAME-modules`.
#[derive(Debug, Default, Clone)]
pub struct ExtraRules {
    pub bindings: Vec<String>,
    pub modules: Vec<String>,
}

/// What an operator under test runs as: its namespace and a kubeconfig with its
/// service-account token.
#[derive(Debug, Clone)]
pub struct OperatorIdentity {
    pub namespace: String,
    pub kubeconfig: PathBuf,
    pub token: String,
}

impl OperatorIdentity {
    /// `kubectl` as the operator's service account.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, KubectlFailed> {
        kubectl_with(&self.kubeconfig, args, stdin)
    }

    /// A kubeconfig for the same identity through `proxy` (its server address rewritten).
    pub fn through(&self, proxy: &FrontProxy, cluster: &RealCluster) -> PathBuf {
        let path = cluster.dir.join(format!(
            "{}-{}.kubeconfig",
            self.namespace,
            proxy.addr.port()
        ));
        let server = format!("https://{}", proxy.addr);
        write_kubeconfig(&path, &server, &cluster.ca.pair.cert, &self.token);
        path
    }
}

/// The repository's root (for `deploy/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn write_kubeconfig(path: &Path, server: &str, ca: &Path, token: &str) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: tier\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n- name: tier\n  user:\n    token: {token}\ncontexts:\n- name: tier\n  context:\n    cluster: tier\n    user: tier\ncurrent-context: tier\n",
        ca.display()
    );
    std::fs::write(path, text).expect("write kubeconfig");
}

fn start_etcd(dir: &Path) -> (Child, String) {
    let (client, peer) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .args(["--name", "tier"])
        .arg("--data-dir")
        .arg(dir.join("etcd"))
        .args([
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
        ])
        .args(["--listen-peer-urls", &peer_url])
        .args(["--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("tier={peer_url}")])
        .args(["--unsafe-no-fsync", "--log-level", "warn"])
        .env("PATH", path_with_tools())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("etcd.log")).expect("etcd log"))
        .spawn()
        .expect("start etcd");
    (child, url)
}

fn start_apiserver(
    dir: &Path,
    etcd_url: &str,
    port: u16,
    serving: &CertPair,
    sa: &CertPair,
    egress: &EgressProxy,
) -> Child {
    std::fs::write(
        dir.join("tokens.csv"),
        format!("{ADMIN_TOKEN},tier-admin,tier-admin,\"system:masters\"\n"),
    )
    .expect("write the token file");
    std::fs::write(dir.join("egress.yaml"), egress_config(&egress.socket)).expect("egress config");
    let path = |p: &Path| p.to_string_lossy().into_owned();
    Command::new("kube-apiserver")
        .arg(format!("--etcd-servers={etcd_url}"))
        .args(["--bind-address=127.0.0.1", &format!("--secure-port={port}")])
        .arg(format!("--tls-cert-file={}", path(&serving.cert)))
        .arg(format!("--tls-private-key-file={}", path(&serving.key)))
        .arg(format!(
            "--token-auth-file={}",
            path(&dir.join("tokens.csv"))
        ))
        .arg("--authorization-mode=RBAC")
        .arg(format!("--service-account-key-file={}", path(&sa.cert)))
        .arg(format!(
            "--service-account-signing-key-file={}",
            path(&sa.key)
        ))
        .arg("--service-account-issuer=https://kubernetes.default.svc.cluster.local")
        .arg("--api-audiences=https://kubernetes.default.svc.cluster.local")
        .arg("--service-cluster-ip-range=10.96.0.0/16")
        .arg("--endpoint-reconciler-type=none")
        .arg(format!(
            "--egress-selector-config-file={}",
            path(&dir.join("egress.yaml"))
        ))
        .arg(format!("--cert-dir={}", path(&dir.join("certs"))))
        // PodTemplates are watched without the watch cache, straight from etcd, so a test can
        // meet 410 Gone after a compaction
        .arg("--watch-cache-sizes=podtemplates#0")
        .arg("--v=1")
        .env("PATH", path_with_tools())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("kube-apiserver.log")).expect("apiserver log"))
        .spawn()
        .expect("start kube-apiserver")
}

/// The egress selector configuration: the `cluster` egress (webhooks, aggregated APIs) goes
/// through the test's CONNECT proxy.
fn egress_config(socket: &Path) -> String {
    format!(
        "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\negressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n    transport:\n      uds:\n        udsName: {}\n",
        socket.display()
    )
}

/// A shell that waits for this process to end, then kills `pids` and removes `dir`.
// The watchdog outlives this process on purpose: nothing here waits for it.
#[allow(clippy::zombie_processes)]
fn watchdog(dir: &Path, pids: &[u32]) {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    let script = format!(
        "while kill -0 {parent} 2>/dev/null; do sleep 1; done; kill -9 {pids} 2>/dev/null; sleep 1; rm -rf '{dir}'",
        parent = std::process::id(),
        pids = pids.join(" "),
        dir = dir.display(),
    );
    // never waited for: it outlives this process on purpose (init reaps it)
    #[allow(clippy::zombie_processes)]
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the cluster watchdog");
}

/// POSTs `body` to etcd's JSON gateway at `url` + `path`.
fn etcd_post(url: &str, path: &str, body: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to etcd");
    let request = format!(
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("write to etcd");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read from etcd");
    let (head, payload) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    assert!(head.contains(" 200 "), "etcd {path}: {text}");
    serde_json::from_str(payload).unwrap_or_else(|e| panic!("etcd {path}: {e}: {payload}"))
}
