//! The real binary against an in-process kube-emulator: starting it, finding its HTTP port in
//! its log, and plain HTTP GETs to `/metrics` and `/readyz`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use addon_operator_testkit::wait;
use kube_emulator::{Emulator, EmulatorConfig, EmulatorHandle};

use crate::support::{Running, start_command};

/// An emulator (with the tokio runtime that serves it) and its kubeconfig.
pub struct Cluster {
    pub emulator: EmulatorHandle,
    pub kubeconfig: PathBuf,
    /// The runtime that serves the emulator; tests may run their own async calls on it.
    pub tokio: tokio::runtime::Runtime,
}

impl Cluster {
    pub fn start(dir: &Path) -> Self {
        let tokio = tokio::runtime::Runtime::new().unwrap();
        let emulator = tokio
            .block_on(Emulator::start(EmulatorConfig::default()))
            .unwrap();
        let kubeconfig = dir.join("kubeconfig");
        emulator.write_kubeconfig(&kubeconfig).unwrap();
        Self {
            emulator,
            kubeconfig,
            tokio,
        }
    }

    /// `kubectl` on this cluster; stdout, or `None` when it failed.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Option<String> {
        addon_operator_testkit::tools::kubectl(&self.kubeconfig, args, stdin)
            .map_err(|err| eprintln!("kubectl {args:?}: {err}"))
            .ok()
    }
}

/// `addon-operator start` on `root` against `cluster` (namespace `default`), logging to
/// `root/operator.log`, with short retry delays.
pub fn start_operator(root: &Path, cluster: &Cluster, extra: &[&str]) -> Running {
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--kube-config")
        .arg(&cluster.kubeconfig)
        .args(["--namespace", "default"])
        .args(["--retry-initial-delay", "200ms", "--retry-max-delay", "2s"])
        .args(extra)
        .env("STATE_DIR", root)
        .env("LOG_LEVEL", "info")
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("operator.log")).unwrap())
        .spawn()
        .unwrap();
    Running(child)
}

pub fn operator_log(root: &Path) -> String {
    std::fs::read_to_string(root.join("operator.log")).unwrap_or_default()
}

/// The address the operator's HTTP server listens on, from its log (waits up to 30 s).
pub fn http_addr(root: &Path) -> String {
    http_addr_in(&root.join("operator.log"))
}

/// [`http_addr`] of the operator that logs to `log`.
pub fn http_addr_in(log: &Path) -> String {
    let read = || std::fs::read_to_string(log).unwrap_or_default();
    let addr = || {
        read()
            .lines()
            .filter(|l| l.contains("serving /metrics"))
            .find_map(|l| l.split("addr=").nth(1))
            .map(|rest| {
                rest.chars()
                    .skip_while(|c| !c.is_ascii_digit())
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                    .collect::<String>()
            })
            .filter(|a| a.contains(':'))
    };
    let limit = Duration::from_secs(30);
    wait::wait_for(
        "the HTTP address in the log",
        limit,
        || addr().is_some(),
        read,
    );
    addr().unwrap_or_default()
}

/// GET `path`: (status code, body); `None` when the server does not answer.
pub fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// Polls until `done(/metrics text)` holds (at most `limit`), then returns the text.
pub fn wait_for_metrics(
    root: &Path,
    addr: &str,
    what: &str,
    limit: Duration,
    done: impl Fn(&str) -> bool,
) -> String {
    let metrics = || {
        get(addr, "/metrics")
            .map(|(_, body)| body)
            .unwrap_or_default()
    };
    let text = std::cell::RefCell::new(String::new());
    let fetched = || {
        *text.borrow_mut() = metrics();
        done(&text.borrow())
    };
    let context = || format!("metrics:\n{}\nlog:\n{}", text.borrow(), operator_log(root));
    wait::wait_for(what, limit, fetched, context);
    text.into_inner()
}
