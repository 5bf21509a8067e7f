//! What the tier's tests share: the operator started against the real cluster as its own
//! service account, its log, and waiting with that log as context.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use addon_operator_testkit::real_cluster::{OperatorIdentity, RealCluster};
use addon_operator_testkit::tools::path_with_tools;

/// A running operator; SIGTERM and reaped when dropped.
pub struct Operator {
    pub child: Child,
    pub log: PathBuf,
}

impl Operator {
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn stop(mut self) {
        self.terminate();
    }

    /// Ends the process with SIGKILL, as a node failure would.
    pub fn kill_hard(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// `addon-operator start` on `tree` as `identity` (its namespace, its kubeconfig), logging to
/// `work/NAME.log`, with short retry delays; `extra` flags are added last.
/// The demo's config: the ConfigMap `start_demo` writes.
const DEMO_CONFIG: &str =
    "global: |\n  clusterName: real\nechoServer: |\n  message: hello from a real API server\n";

/// The Role rule to read ConfigMaps (the demo's global hook watches them).
pub fn configmaps_rule() -> String {
    r#"{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","watch"]}"#.into()
}

/// The demo tree started in `namespace` as the operator's own identity (the shipped RBAC plus
/// reading ConfigMaps), with the demo's config in its ConfigMap and `extra` flags.
pub fn start_demo(cluster: &RealCluster, work: &Path, namespace: &str, extra: &[&str]) -> Operator {
    let rules = addon_operator_testkit::real_cluster::ExtraRules {
        bindings: vec![configmaps_rule()],
        modules: vec![],
    };
    let identity = cluster.operator_identity(namespace, &rules);
    cluster.kubectl_ok(
        &["apply", "-f", "-"],
        Some(&config_map(namespace, "addon-operator", DEMO_CONFIG)),
    );
    let tree = example("demo");
    start_operator(work, "op", &tree, &identity.kubeconfig, &identity, extra)
}

pub fn start_operator(
    work: &Path,
    name: &str,
    tree: &Path,
    kubeconfig: &Path,
    identity: &OperatorIdentity,
    extra: &[&str],
) -> Operator {
    let mut command = operator_command(work, name, tree, kubeconfig, identity);
    command.args(extra);
    spawn(work, name, command)
}

/// The command [`start_operator`] runs, for callers that add flags or variables.
pub fn operator_command(
    work: &Path,
    name: &str,
    tree: &Path,
    kubeconfig: &Path,
    identity: &OperatorIdentity,
) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_addon-operator"));
    command
        .arg("start")
        .arg("--tmp-dir")
        .arg(work.join(format!("tmp-{name}")))
        .args(["--prometheus-listen-address", "127.0.0.1"])
        .args(["--prometheus-listen-port", "0"])
        .arg("--debug-unix-socket")
        .arg(work.join(format!("{name}.socket")))
        .arg("--working-dir")
        .arg(tree)
        .arg("--kube-config")
        .arg(kubeconfig)
        .args(["--namespace", &identity.namespace])
        .args(["--retry-initial-delay", "200ms", "--retry-max-delay", "2s"])
        .env("PATH", path_with_tools())
        .env("LOG_LEVEL", "info")
        .env("HOOK_LOG", work.join("hooks.log"))
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("ADDON_OPERATOR_GLOBAL_HOOKS_DIR")
        .env_remove("MODULES_DIR")
        .env_remove("GLOBAL_HOOKS_DIR")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBECONFIG");
    command
}

/// Spawns `command` with its stderr in `work/NAME.log`.
pub fn spawn(work: &Path, name: &str, mut command: Command) -> Operator {
    let log = work.join(format!("{name}.log"));
    let child = command
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    Operator { child, log }
}

/// The lines hooks appended to `work/hooks.log` ($HOOK_LOG).
pub fn hook_log(work: &Path) -> Vec<String> {
    std::fs::read_to_string(work.join("hooks.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Polls `done` for up to `secs` seconds; on timeout fails with the operators' logs.
pub fn wait_until(what: &str, secs: u64, logs: &[&Operator], done: impl FnMut() -> bool) {
    addon_operator_testkit::wait::wait_for(what, Duration::from_secs(secs), done, || {
        logs.iter()
            .map(|op| format!("{}:\n{}", op.log.display(), op.log_text()))
            .collect::<Vec<_>>()
            .join("\n")
    });
}

/// The shared cluster, or `None` when the tier's tools are missing outside CI (the test skips).
pub fn cluster() -> Option<&'static RealCluster> {
    RealCluster::shared()
}

/// Writes a file, creating parent directories; `executable` sets mode 0755.
pub fn write(path: &Path, text: &str, executable: bool) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The repository's `examples/NAME`.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// A ConfigMap manifest `NAME` in `namespace` whose data is the YAML mapping `data_yaml` (the
/// operator's config store, as `deploy/base/configmap.yaml`).
pub fn config_map(namespace: &str, name: &str, data_yaml: &str) -> String {
    let indented: String = data_yaml.lines().map(|l| format!("  {l}\n")).collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n{indented}"
    )
}
