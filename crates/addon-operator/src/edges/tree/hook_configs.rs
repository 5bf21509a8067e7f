//! Asks every hook for its bindings: runs `<hook> --config` for all hooks in parallel (bounded by
//! three times the number of CPUs) and returns each hook's stdout or the reason it gave none.

use std::sync::Arc;
use std::time::Duration;

use addon_core::discovery::HookFile;
use futures::stream::{self, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::edges::exec::hook_run::{HookRunSettings, config_spec};
use crate::edges::exec::process::{self, ExecError, LogFields, ProcessOutput, ProcessSpec};

/// A hook whose `--config` run failed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigRunError {
    #[error("run '{hook} --config'")]
    Exec {
        hook: String,
        #[source]
        source: process::ExecError,
    },
    #[error("'{hook} --config' failed ({exit}): {message}")]
    Failed {
        hook: String,
        exit: String,
        message: String,
    },
    #[error("'{hook} --config' printed more than the limit of {limit} bytes")]
    TooLarge { hook: String, limit: usize },
    /// The task running it panicked or was cancelled (a bug, or shutdown).
    #[error("a --config run did not finish: {0}")]
    Task(String),
}

impl ConfigRunError {
    pub fn category(&self) -> &'static str {
        "hook_config_run"
    }
}

/// How `--config` runs are made.
#[derive(Debug, Clone)]
pub struct ConfigRunOptions {
    pub timeout: Duration,
    pub kill_grace: Duration,
    /// At most this many hooks run at once: three times the CPUs, because a short hook process
    /// spends part of its life in fork, exec and pipe reads where the CPU would idle (start to
    /// ready of 100 modules × 3 `*.sh` hooks on 2 cores, same rounds: 0.337–0.369 s with 6,
    /// 0.341 s with 8, 0.367–0.379 s with 4; `check` of 100 modules × 3 extension-less hooks:
    /// 1.0 s with 4, 1.3 s with 2).
    pub parallelism: usize,
    /// The runs' niceness (0: the operator's own priority); see [`BACKGROUND_NICENESS`].
    pub niceness: i32,
}

/// The niceness of `--config` runs made in the background of a start (the module hooks', beside
/// the `enabled` scripts, which the start waits for one after another).
pub const BACKGROUND_NICENESS: i32 = 10;

impl ConfigRunOptions {
    pub fn new(timeout: Duration) -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, usize::from);
        Self {
            timeout,
            kill_grace: Duration::from_secs(5),
            parallelism: (3 * cpus).max(4),
            niceness: 0,
        }
    }
}

/// Runs `--config` for every hook; the results are in the order of `hooks`.
pub async fn fetch_all(
    hooks: Vec<(HookFile, String)>,
    options: &ConfigRunOptions,
) -> Vec<Result<String, ConfigRunError>> {
    let options = Arc::new(options.clone());
    stream::iter(hooks)
        .map(|(hook, module)| {
            let options = Arc::clone(&options);
            // a task each: spawning and reading a process is work of the parent too, and in
            // one task the runs would share one thread for it
            let run = tokio::spawn(async move { fetch_one(&hook, &module, &options).await });
            async move {
                run.await
                    .unwrap_or_else(|e| Err(ConfigRunError::Task(e.to_string())))
            }
        })
        .buffered(options.parallelism)
        .collect()
        .await
}

/// Runs `<hook> --config` in the hook's own directory with `WORKING_DIR` set; `module` is the
/// module name for log lines ("" for global hooks).
pub async fn fetch_one(
    hook: &HookFile,
    module: &str,
    options: &ConfigRunOptions,
) -> Result<String, ConfigRunError> {
    let settings = HookRunSettings {
        timeout: options.timeout,
        kill_grace: options.kill_grace,
        ..HookRunSettings::default()
    };
    let spec = config_spec(&settings, &hook.path, &hook.working_dir);
    let log = LogFields {
        hook: hook.name.to_string(),
        module: module.to_string(),
        binding: "--config".to_string(),
        quiet: false,
    };
    let name = hook.name.to_string();
    let output =
        run_process(&spec, &log, options)
            .await
            .map_err(|source| ConfigRunError::Exec {
                hook: name.clone(),
                source,
            })?;
    if output.stdout_overflow {
        Err(ConfigRunError::TooLarge {
            hook: name,
            limit: process::MAX_CAPTURED_STDOUT,
        })
    } else if output.succeeded() {
        Ok(output.stdout)
    } else {
        Err(ConfigRunError::Failed {
            hook: name,
            exit: output.exit.to_string(),
            message: output.failure_message(),
        })
    }
}

/// Runs one process of the tree's loading (`--config`, `hook list`, `hook config`) with the
/// niceness of `options`.
pub(super) async fn run_process(
    spec: &ProcessSpec,
    log: &LogFields,
    options: &ConfigRunOptions,
) -> Result<ProcessOutput, ExecError> {
    let never = CancellationToken::new();
    process::run_notifying(spec, log, &never, |pid| renice(pid, options.niceness)).await
}

/// Gives process `pid` the niceness `niceness` (nothing for 0); a failure only costs speed.
fn renice(pid: i32, niceness: i32) {
    if niceness == 0 {
        return;
    }
    let pid = rustix::process::Pid::from_raw(pid);
    if let Err(error) = rustix::process::setpriority_process(pid, niceness) {
        tracing::debug!(%error, "a --config run keeps the operator's priority");
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use addon_core::names::HookName;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// An executable `name` in `dir` holding `text`, as a hook of that directory.
    pub(in crate::edges::tree) fn script(dir: &Path, name: &str, text: &str) -> HookFile {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        HookFile {
            name: HookName::new(name).unwrap(),
            path,
            working_dir: dir.to_path_buf(),
            args: Vec::new(),
        }
    }

    fn hook(dir: &Path, name: &str, body: &str) -> HookFile {
        script(dir, name, &format!("#!/bin/sh\n{body}\n"))
    }

    #[tokio::test]
    async fn every_hook_answers_in_order_with_its_own_dir_and_working_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let a = hook(tmp.path(), "a", r#"echo "a $1 $(pwd) $WORKING_DIR""#);
        let b = hook(tmp.path(), "b", "echo '{\"onStartup\": 1}'");
        let options = ConfigRunOptions::new(Duration::from_secs(10));
        let got = fetch_all(vec![(a, String::new()), (b, "m".into())], &options).await;
        let dir = tmp.path().canonicalize().unwrap();
        let expected_a = format!("a --config {} {}\n", dir.display(), tmp.path().display());
        assert_eq!(got[0].as_ref().unwrap(), &expected_a);
        assert_eq!(got[1].as_ref().unwrap(), "{\"onStartup\": 1}\n");
    }

    #[tokio::test]
    async fn background_runs_are_niced() {
        let tmp = tempfile::tempdir().unwrap();
        // the niceness is set just after the spawn: read it a moment later
        let hook = hook(tmp.path(), "niced", "sleep 0.1; nice");
        let options = ConfigRunOptions {
            niceness: BACKGROUND_NICENESS,
            ..ConfigRunOptions::new(Duration::from_secs(10))
        };
        let niceness: i32 = fetch_one(&hook, "", &options)
            .await
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(niceness >= BACKGROUND_NICENESS, "{niceness}");
    }

    #[tokio::test]
    async fn a_failing_hook_reports_its_stderr() {
        let tmp = tempfile::tempdir().unwrap();
        let bad = hook(tmp.path(), "bad", "echo 'no config for you' >&2; exit 3");
        let options = ConfigRunOptions::new(Duration::from_secs(10));
        let err = fetch_one(&bad, "", &options).await.unwrap_err().to_string();
        assert!(
            err.contains("bad --config") && err.contains("exit status 3"),
            "{err}"
        );
        assert!(err.contains("no config for you"), "{err}");
    }

    #[tokio::test]
    async fn a_hanging_hook_times_out() {
        let tmp = tempfile::tempdir().unwrap();
        let slow = hook(tmp.path(), "slow", "sleep 30");
        let mut options = ConfigRunOptions::new(Duration::from_millis(200));
        options.kill_grace = Duration::from_millis(100);
        let started = std::time::Instant::now();
        let err = fetch_one(&slow, "", &options)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("timed out"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_config_answer_over_the_cap_fails_instead_of_being_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let huge = hook(
            tmp.path(),
            "huge",
            &format!(
                "echo '{{\"configVersion\":\"v1\",\"onStartup\":1}}'\nhead -c {} /dev/zero | tr '\\0' ' '",
                process::MAX_CAPTURED_STDOUT
            ),
        );
        let options = ConfigRunOptions::new(Duration::from_secs(60));
        let err = fetch_one(&huge, "", &options)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("'huge --config' printed more than the limit of 67108864 bytes"),
            "{err}"
        );
    }
}
