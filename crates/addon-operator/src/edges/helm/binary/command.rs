//! Running the `helm` binary: private helm directories and discovery cache, KUBECONFIG, a time
//! limit, captured output.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

/// How every helm process is started.
#[derive(Debug, Clone)]
pub(crate) struct Runner {
    pub binary: PathBuf,
    /// `(name, value)` pairs set on every invocation, last wins.
    pub env: Vec<(OsString, OsString)>,
}

/// What a finished helm process printed.
#[derive(Debug)]
pub(crate) struct Output {
    pub success: bool,
    pub stdout: String,
    /// Trimmed stderr.
    pub stderr: String,
}

/// Why a helm process gave no [`Output`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error("cannot start {}", binary.display())]
    Spawn {
        binary: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("helm did not finish within {}s and was killed", limit.as_secs())]
    TimedOut { limit: Duration },
}

impl Runner {
    /// The environment of every helm run: private cache/config/data dirs under `tmp_dir`, the
    /// discovery cache `kube_cache` (`KUBECACHEDIR`, else helm writes `~/.kube/cache` on every
    /// run), the secret storage driver, `KUBECONFIG` when given, then `extra` (which may override
    /// any of them).
    pub fn new(
        binary: PathBuf,
        tmp_dir: &Path,
        kube_cache: &Path,
        kubeconfig: Option<&Path>,
        extra: &[(String, String)],
    ) -> Self {
        let home = tmp_dir.join("helm");
        let mut env: Vec<(OsString, OsString)> = vec![
            ("HELM_CACHE_HOME".into(), home.join("cache").into()),
            ("HELM_CONFIG_HOME".into(), home.join("config").into()),
            ("HELM_DATA_HOME".into(), home.join("data").into()),
            ("HELM_DRIVER".into(), "secret".into()),
            ("KUBECACHEDIR".into(), kube_cache.into()),
        ];
        if let Some(path) = kubeconfig {
            env.push(("KUBECONFIG".into(), path.into()));
        }
        env.extend(extra.iter().map(|(k, v)| (k.into(), v.into())));
        Self { binary, env }
    }

    /// The effective `HELM_DRIVER` (the last one set).
    pub fn driver(&self) -> String {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == "HELM_DRIVER")
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Runs `helm ARGS`, killing it after `limit`.
    pub async fn run(&self, args: &[OsString], limit: Duration) -> Result<Output, RunError> {
        self.run_with_env(args, &[], limit).await
    }

    /// [`Self::run`] with `extra` added to helm's environment.
    pub async fn run_with_env(
        &self,
        args: &[OsString],
        extra: &[(OsString, OsString)],
        limit: Duration,
    ) -> Result<Output, RunError> {
        let mut cmd = Command::new(&self.binary);
        cmd.args(args)
            .envs(self.env.iter().chain(extra).map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        tracing::debug!(binary = %self.binary.display(), ?args, "running helm");
        let out = tokio::time::timeout(limit, cmd.output())
            .await
            .map_err(|_| RunError::TimedOut { limit })?
            .map_err(|source| RunError::Spawn {
                binary: self.binary.clone(),
                source,
            })?;
        Ok(Output {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Arguments as the `OsString`s [`Runner::run`] takes.
pub(crate) fn args<I, S>(items: I) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    items.into_iter().map(Into::into).collect()
}

/// A duration as helm's `--timeout` reads it (a Go duration).
pub(crate) fn go_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_go_durations() {
        assert_eq!(go_duration(Duration::from_secs(1200)), "1200s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1500ms");
    }

    fn script(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-helm");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[tokio::test]
    async fn a_helm_that_runs_too_long_is_killed() {
        let tmp = tempfile::tempdir().unwrap();
        let runner = Runner::new(
            script(tmp.path(), "sleep 30"),
            tmp.path(),
            tmp.path(),
            None,
            &[],
        );
        let started = std::time::Instant::now();
        let result = runner.run(&[], Duration::from_millis(200)).await;
        assert!(
            matches!(result, Err(RunError::TimedOut { .. })),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn output_and_trimmed_stderr_are_captured_with_the_private_env() {
        let tmp = tempfile::tempdir().unwrap();
        let body =
            "echo \"$HELM_DATA_HOME $KUBECACHEDIR $KUBECONFIG $1\"; echo '  oops  ' >&2; exit 3";
        let runner = Runner::new(
            script(tmp.path(), body),
            Path::new("/t"),
            Path::new("/c"),
            Some(Path::new("/k")),
            &[],
        );
        let out = runner
            .run(&args(["arg"]), Duration::from_secs(10))
            .await
            .unwrap();
        assert!(!out.success);
        assert_eq!(out.stdout, "/t/helm/data /c /k arg\n");
        assert_eq!(out.stderr, "oops");
    }

    #[test]
    fn extra_env_comes_last_so_it_wins() {
        let runner = Runner::new(
            "helm".into(),
            Path::new("/t"),
            Path::new("/c"),
            Some(Path::new("/k")),
            &[("HELM_DRIVER".into(), "configmap".into())],
        );
        let driver: Vec<_> = runner
            .env
            .iter()
            .filter(|(k, _)| k == "HELM_DRIVER")
            .collect();
        assert_eq!(
            driver.last().map(|(_, v)| v.as_os_str()),
            Some("configmap".as_ref())
        );
        assert_eq!(runner.driver(), "configmap");
        assert!(
            runner
                .env
                .iter()
                .any(|(k, v)| k == "KUBECONFIG" && v == "/k")
        );
        assert!(
            runner
                .env
                .iter()
                .any(|(k, v)| k == "HELM_CACHE_HOME" && v == "/t/helm/cache")
        );
    }
}
