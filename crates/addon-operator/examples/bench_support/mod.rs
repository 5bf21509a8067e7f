//! What the benchmark drivers share: starting `addon-operator start` on a tree with metrics on a
//! free loopback port, plain HTTP/1.0 GETs against it, executable files, timed bash scripts (the
//! bash loop every hook bench compares with), the files of the hook contract, and the median and spread of a
//! round's figures.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::Context as _;

/// `operator start` on `root` with hook files in `tmp_dir`, logging at `log_level` into
/// `root/operator.log`; returns the child and its metrics port.
pub fn spawn_operator(
    operator: &Path,
    root: &Path,
    tmp_dir: &Path,
    log_level: &str,
) -> anyhow::Result<(Child, u16)> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log = std::fs::File::create(root.join("operator.log"))?;
    let child = Command::new(operator)
        .arg("start")
        .arg("--working-dir")
        .arg(root)
        .arg("--tmp-dir")
        .arg(tmp_dir)
        .args(["--prometheus-listen-address", "127.0.0.1"])
        .args(["--prometheus-listen-port", &port.to_string()])
        .arg("--debug-unix-socket")
        .arg(root.join("debug.socket"))
        .env("LOG_LEVEL", log_level)
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("cannot start the operator")?;
    Ok((child, port))
}

/// Kills and reaps `child`; a failed `result` points at the operator's log.
pub fn stop_operator<T>(
    mut child: Child,
    root: &Path,
    result: anyhow::Result<T>,
) -> anyhow::Result<T> {
    let _ = child.kill();
    let _ = child.wait();
    result.with_context(|| format!("see {}", root.join("operator.log").display()))
}

/// The whole answer (status line, headers, body) to `GET path` on the loopback port.
pub fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    Ok(text)
}

/// Polls `/readyz` (cheap, unlike `/metrics`) every 5 ms until it answers 200 (the first
/// converge is done); returns the seconds since `started`. The polls go over one kept-alive
/// connection: a new connection per poll cost the driver and the operator about 0.5 ms of CPU
/// each, CPU the measured start does not have on a 2-core machine (the by-hand side is waited for
/// without polling).
pub fn wait_ready(port: u16, started: Instant) -> anyhow::Result<f64> {
    let mut connection: Option<TcpStream> = None;
    while started.elapsed() < Duration::from_secs(120) {
        if connection.is_none() {
            connection = TcpStream::connect(("127.0.0.1", port)).ok();
        }
        if let Some(stream) = connection.as_mut() {
            match ready_on(stream) {
                Ok(true) => return Ok(started.elapsed().as_secs_f64()),
                Ok(false) => {}
                Err(_) => connection = None,
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    anyhow::bail!("not ready within 2 minutes")
}

/// One `GET /readyz` on a kept-alive HTTP/1.1 connection: whether it answered 200. The answer is
/// read to its end (headers, then `Content-Length` bytes) so the next request can follow.
fn ready_on(stream: &mut TcpStream) -> std::io::Result<bool> {
    write!(stream, "GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 1024];
    let header_end = loop {
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        answer.extend_from_slice(&chunk[..read]);
        if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let headers = String::from_utf8_lossy(&answer[..header_end]).to_ascii_lowercase();
    let length: usize = headers
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .ok_or(std::io::ErrorKind::InvalidData)?;
    while answer.len() < header_end + length {
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        answer.extend_from_slice(&chunk[..read]);
    }
    Ok(headers.starts_with("http/1.1 200"))
}

pub fn executable(path: &Path, body: &str) -> anyhow::Result<()> {
    std::fs::write(path, body)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Median, minimum and maximum of one row's rounds.
pub fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1],
    )
}

/// Prints one line per row: its median and min–max (times `scale`, `decimals` digits) and the
/// ratio *first row / this row*, labelled `ratio` (e.g. "bash loop / this").
pub fn print_rows(results: &[(String, Vec<f64>)], scale: f64, decimals: usize, ratio: &str) {
    let (baseline, _, _) = spread(&results[0].1);
    for (name, values) in results {
        let (mid, low, high) = spread(values);
        let (m, l, h) = (mid * scale, low * scale, high * scale);
        println!(
            "{name:<45} {m:>6.decimals$} ({l:.decimals$}–{h:.decimals$})  {ratio}: {:.2}",
            baseline / mid
        );
    }
}

/// The hook files of one run and the variables naming them: 3 inputs written, 4 outputs made
/// empty, as the contract asks.
pub const CONTRACT_FILES: [(&str, &str); 7] = [
    ("BINDING_CONTEXT_PATH", "[{\"binding\":\"beforeHelm\"}]"),
    ("CONFIG_VALUES_PATH", "{}"),
    ("VALUES_PATH", "{}"),
    ("CONFIG_VALUES_JSON_PATCH_PATH", ""),
    ("VALUES_JSON_PATCH_PATH", ""),
    ("METRICS_PATH", ""),
    ("KUBERNETES_PATCH_PATH", ""),
];

/// Seconds per hook of a bash loop running the script `hooks` times (what a user writes).
pub fn bash_loop(script: &Path, hooks: usize) -> anyhow::Result<f64> {
    let looped = format!("for i in $(seq {hooks}); do \"$0\"; done");
    Ok(bash_seconds(&looped, &[script.as_os_str()])? / hooks as f64)
}

/// Seconds `bash -c SCRIPT ARGS...` takes; fails when the script does.
pub fn bash_seconds(script: &str, args: &[&OsStr]) -> anyhow::Result<f64> {
    let started = Instant::now();
    let status = Command::new("bash")
        .arg("-c")
        .arg(script)
        .args(args)
        .status()?;
    anyhow::ensure!(status.success(), "bash -c {script:?} failed: {status}");
    Ok(started.elapsed().as_secs_f64())
}
