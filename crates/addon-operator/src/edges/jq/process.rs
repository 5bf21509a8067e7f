//! [`JqSandbox`]: the parent side of the jq sandbox, one long-lived child process killed and restarted when a filter crashes it or runs past the deadline.

use std::borrow::Borrow;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use addon_core::jq::{JqError, JqFilter, JqLimits};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use super::protocol::{Inputs, Reply, RequestRef};

/// How the sandbox process is started and bounded.
#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// The `addon-operator` binary (the child is `PROGRAM jq-sandbox --memory-limit-bytes N`).
    pub program: PathBuf,
    /// CPU time limit of one request (at most [`super::MAX_BATCH`] inputs), rounded up to
    /// whole seconds.
    pub timeout: Duration,
    /// Address-space limit of the child (`RLIMIT_AS`).
    pub memory_limit_bytes: u64,
    pub limits: JqLimits,
    /// Results of one request past this many bytes become limit errors.
    pub max_reply_bytes: usize,
}

impl SandboxSettings {
    /// The defaults with this process's own binary as the child.
    pub fn for_current_exe(timeout: Duration, memory_limit_bytes: u64) -> Self {
        Self {
            program: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
            timeout,
            memory_limit_bytes,
            limits: JqLimits::default(),
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
        }
    }
}

/// The default of `--jq-timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default of `--jq-memory-limit-mib`: 1 GiB of address space.
pub const DEFAULT_MEMORY_LIMIT_BYTES: u64 = 1 << 30;
/// The results of one request: 64 MiB of JSON.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 64 << 20;

/// A running child with its pipes.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// One sandbox process, used by one request at a time.
pub struct JqSandbox {
    settings: SandboxSettings,
    worker: Mutex<Option<Worker>>,
}

impl std::fmt::Debug for JqSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JqSandbox")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Why an exchange with the child failed.
enum Broken {
    /// The request could not be written: the child ended before it (e.g. killed while idle).
    Write(std::io::Error),
    Io(std::io::Error),
    TooLarge,
}

impl JqSandbox {
    pub fn new(settings: SandboxSettings) -> Self {
        Self {
            settings,
            worker: Mutex::new(None),
        }
    }

    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// The process id of the running child, if one is running (diagnostics, tests).
    pub async fn child_id(&self) -> Option<u32> {
        self.worker.lock().await.as_ref().and_then(|w| w.child.id())
    }

    /// Evaluates `filter` on every input in the child. The outer error says the whole request
    /// failed (deadline, crash, the child could not start); the child is then replaced.
    pub async fn run<V: Borrow<Value> + Sync>(
        &self,
        filter: &JqFilter,
        inputs: &[V],
    ) -> Result<Vec<Result<Value, JqError>>, JqError> {
        let line = self.request_line(filter, inputs)?;
        let max = self.settings.max_reply_bytes.saturating_add(1 << 20);
        let mut slot = self.worker.lock().await;
        let mut retried = false;
        loop {
            let worker = self.started(&mut slot, filter)?;
            let broken = match exchange(worker, &line, max).await {
                Ok(reply) if reply.results.len() == inputs.len() => {
                    let results = reply.results.into_iter();
                    return Ok(results.map(|o| o.into_result(filter.source())).collect());
                }
                Ok(_) => Broken::TooLarge,
                Err(Broken::Write(_)) if !retried => {
                    // the child was gone before this request: not this filter's fault
                    retried = true;
                    reap(slot.take()).await;
                    continue;
                }
                Err(broken) => broken,
            };
            return Err(self.fail(&mut slot, filter, broken).await);
        }
    }

    /// The running child, started if there is none.
    fn started<'a>(
        &self,
        slot: &'a mut Option<Worker>,
        filter: &JqFilter,
    ) -> Result<&'a mut Worker, JqError> {
        if slot.is_none() {
            let worker = self.spawn().map_err(|e| {
                JqError::apply_failed(filter.source(), format!("cannot start the jq sandbox: {e}"))
            })?;
            *slot = Some(worker);
        }
        slot.as_mut()
            .ok_or_else(|| JqError::apply_failed(filter.source(), "no jq sandbox"))
    }

    fn request_line<V: Borrow<Value>>(
        &self,
        filter: &JqFilter,
        inputs: &[V],
    ) -> Result<Vec<u8>, JqError> {
        let request = RequestRef {
            filter: filter.source(),
            inputs: Inputs(inputs),
            limits: self.settings.limits,
            max_reply_bytes: self.settings.max_reply_bytes,
            cpu_seconds: self.cpu_seconds(),
        };
        let mut line = serde_json::to_vec(&request)
            .map_err(|e| JqError::apply_failed(filter.source(), e.to_string()))?;
        line.push(b'\n');
        Ok(line)
    }

    fn cpu_seconds(&self) -> u64 {
        let timeout = self.settings.timeout;
        (timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0)).max(1)
    }

    fn spawn(&self) -> std::io::Result<Worker> {
        let mut child = Command::new(&self.settings.program)
            .arg("jq-sandbox")
            .arg("--memory-limit-bytes")
            .arg(self.settings.memory_limit_bytes.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the sandbox has no pipes"));
        };
        Ok(Worker {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Kills and reaps the child, and describes what happened to the request.
    async fn fail(&self, slot: &mut Option<Worker>, filter: &JqFilter, broken: Broken) -> JqError {
        let status = reap(slot.take()).await;
        let message = match broken {
            Broken::TooLarge => "the sandbox reply was too large or malformed".to_string(),
            Broken::Io(_) | Broken::Write(_) if signal(status) == Some(nix::libc::SIGXCPU) => {
                format!(
                    "the filter ran longer than the limit of {}s of CPU time (--jq-timeout)",
                    self.cpu_seconds()
                )
            }
            Broken::Io(e) | Broken::Write(e) => format!(
                "the jq sandbox process ended ({}; {e}): the filter overflowed the stack or \
                 exceeded the memory limit of {} MiB (--jq-memory-limit-mib)",
                describe(status),
                self.settings.memory_limit_bytes >> 20
            ),
        };
        tracing::warn!(filter = %filter.source(), %message, "jq sandbox restarted");
        JqError::limit(filter.source(), message)
    }
}

/// Kills and waits for the child (if any); its exit status.
async fn reap(worker: Option<Worker>) -> Option<ExitStatus> {
    let mut worker = worker?;
    let _ = worker.child.start_kill();
    worker.child.wait().await.ok()
}

fn signal(status: Option<ExitStatus>) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.and_then(|s| s.signal())
}

fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => match signal(Some(s)) {
            Some(signal) => format!("killed by signal {signal}"),
            None => format!("exit status {}", s.code().unwrap_or(-1)),
        },
        None => "status unknown".to_string(),
    }
}

async fn exchange(worker: &mut Worker, line: &[u8], max_reply: usize) -> Result<Reply, Broken> {
    worker.stdin.write_all(line).await.map_err(Broken::Write)?;
    worker.stdin.flush().await.map_err(Broken::Write)?;
    let mut reply = Vec::new();
    let limit = u64::try_from(max_reply).unwrap_or(u64::MAX);
    let read = (&mut worker.stdout)
        .take(limit)
        .read_until(b'\n', &mut reply)
        .await
        .map_err(Broken::Io)?;
    if read == 0 {
        return Err(Broken::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    if reply.last() != Some(&b'\n') {
        return Err(Broken::TooLarge);
    }
    serde_json::from_slice(&reply).map_err(|_| Broken::TooLarge)
}
