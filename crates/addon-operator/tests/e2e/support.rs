//! Helpers for end-to-end tests: temporary trees, the binary, and required tools.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

pub use addon_operator_testkit::tools::{path_with_tools, require_tool};

/// The operator binary built for this test run.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_addon-operator"))
}

/// Writes a file, creating parent directories; `executable` sets mode 0755.
pub fn write(path: &Path, text: &str, executable: bool) {
    std::fs::create_dir_all(path.parent().expect("file has a parent")).expect("create dirs");
    std::fs::write(path, text).expect("write file");
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Runs the binary with `args` and the project's tools on `PATH`.
pub fn run(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env("PATH", path_with_tools())
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("ADDON_OPERATOR_GLOBAL_HOOKS_DIR")
        .env_remove("MODULES_DIR")
        .env_remove("GLOBAL_HOOKS_DIR")
        .output()
        .expect("run addon-operator")
}

/// The repository's example tree.
pub fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo")
}

/// Runs the binary with `args`, asserts it succeeded (showing stderr if not) and returns stdout.
pub fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A child process that gets SIGTERM and is reaped when dropped.
pub struct Running(pub Child);

impl Running {
    /// Ends the process with SIGKILL (no chance to clean up), then reaps it.
    pub fn kill_hard(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// `addon-operator start` with what every end-to-end start sets: hook files in `tmp`, metrics on
/// a free loopback port, the debug socket at `socket`, and the project's tools on `PATH`. Callers
/// add the tree, the cluster and their own flags.
pub fn start_command(tmp: impl AsRef<Path>, socket: impl AsRef<Path>) -> Command {
    let mut cmd = Command::new(binary());
    cmd.arg("start")
        .arg("--tmp-dir")
        .arg(tmp.as_ref())
        .args(["--prometheus-listen-address", "127.0.0.1"])
        .args(["--prometheus-listen-port", "0"])
        .arg("--debug-unix-socket")
        .arg(socket.as_ref())
        .env("PATH", path_with_tools());
    cmd
}

/// An operator started by [`start_embedded`]: the process, its log and the cluster's kubeconfig.
pub struct Embedded {
    pub running: Running,
    pub log: PathBuf,
    pub kubeconfig: PathBuf,
}

/// `addon-operator start` on `tree` with its `config.yaml` as the config file, on the embedded
/// cluster, with `extra` arguments; files below `root` (`run/`, `debug.socket`, `operator.log`).
pub fn start_embedded<S: AsRef<std::ffi::OsStr>>(
    root: &Path,
    tree: &Path,
    extra: impl IntoIterator<Item = S>,
) -> Embedded {
    let log = root.join("operator.log");
    let child = start_command(root.join("run"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(tree)
        .arg("--config-file")
        .arg(tree.join("config.yaml"))
        .arg("--embedded-cluster")
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    Embedded {
        running: Running(child),
        log,
        kubeconfig: root.join("run/embedded-cluster.kubeconfig"),
    }
}

/// Polls `done` until it holds; after 90 s fails the test with the operator's log at `log`.
pub fn wait_for(what: &str, log: &Path, done: impl FnMut() -> bool) {
    let limit = std::time::Duration::from_secs(90);
    addon_operator_testkit::wait::wait_for(what, limit, done, || {
        format!(
            "operator log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        )
    });
}
