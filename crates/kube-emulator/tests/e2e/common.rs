//! Shared test harness: tool lookup, per-test emulators and client environments.

use std::path::{Path, PathBuf};
use std::process::Output;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube_emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A tool from `<workspace>/.tools/bin` or PATH; `None` (skip) only outside CI.
pub fn tool(name: &str) -> Option<PathBuf> {
    let local = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.tools/bin")
        .join(name);
    if local.is_file() {
        return Some(local);
    }
    let in_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if in_path.is_some() {
        return in_path;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{name} is missing from .tools/bin and PATH: run scripts/install-tools (CI never skips)"
        );
    }
    eprintln!("SKIPPED: {name} not found in .tools/bin or PATH; run scripts/install-tools");
    None
}

/// One emulator plus a private HOME and kubeconfig for the client tools.
pub struct TestEnv {
    pub emu: EmulatorHandle,
    pub dir: TempDir,
    pub kubeconfig: PathBuf,
}

/// Starts an in-memory emulator on a free port.
pub async fn start() -> TestEnv {
    start_with(EmulatorConfig::default()).await
}

/// Starts an emulator with the given config.
pub async fn start_with(config: EmulatorConfig) -> TestEnv {
    let emu = Emulator::start(config).await.expect("emulator starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig)
        .expect("kubeconfig written");
    TestEnv {
        emu,
        dir,
        kubeconfig,
    }
}

impl TestEnv {
    /// A command for a client tool, isolated from the user's HOME and kubeconfig.
    pub fn command(&self, program: &Path) -> tokio::process::Command {
        let home = self.dir.path().join("home");
        let mut cmd = tokio::process::Command::new(program);
        cmd.env("HOME", &home)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("HELM_CACHE_HOME", home.join(".cache/helm"))
            .env("HELM_CONFIG_HOME", home.join(".config/helm"))
            .env("HELM_DATA_HOME", home.join(".local/share/helm"))
            .env_remove("HELM_KUBECONTEXT")
            .kill_on_drop(true);
        cmd
    }

    /// Runs a tool with arguments and returns stdout; fails the test with stderr otherwise.
    pub async fn run(&self, program: &Path, args: &[&str]) -> String {
        let out = self
            .command(program)
            .args(args)
            .output()
            .await
            .expect("tool runs");
        assert_success(program, args, &out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs a tool and returns its raw output, whatever the exit status.
    pub async fn try_run(&self, program: &Path, args: &[&str]) -> Output {
        self.command(program)
            .args(args)
            .output()
            .await
            .expect("tool runs")
    }

    /// A kube-rs client for this emulator.
    pub async fn client(&self) -> kube::Client {
        client_for(&self.emu.kubeconfig_yaml()).await
    }
}

/// A kube-rs client from kubeconfig text.
pub async fn client_for(kubeconfig: &str) -> kube::Client {
    let kc = Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(config).expect("client")
}

fn assert_success(program: &Path, args: &[&str], out: &Output) {
    assert!(
        out.status.success(),
        "{} {:?} failed ({}):\nstdout: {}\nstderr: {}",
        program.display(),
        args,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A raw HTTP/1.1 answer.
pub struct RawResponse {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole answer.
pub async fn raw_request(
    url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> RawResponse {
    let host = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream.write_all(body).await.expect("write body");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default();
    RawResponse {
        status,
        content_type,
        body: raw[split + 4..].to_vec(),
    }
}
