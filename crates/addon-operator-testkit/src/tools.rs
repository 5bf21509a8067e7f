//! The outside tools tests run (helm, kubectl, jq, bash): where `scripts/install-tools` puts them,
//! and the rule that a missing tool skips a test only outside CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The workspace's `.tools/bin` (filled by `scripts/install-tools`).
pub fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin")
}

/// `PATH` with the project's tools first.
pub fn path_with_tools() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", tools_dir().display())
}

/// Whether `tool` can be run; under `CI` a missing tool fails the test instead of skipping it.
pub fn require_tool(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .env("PATH", path_with_tools())
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is required for this test (run scripts/install-tools)"
        );
        eprintln!("skipping: {tool} not found (run scripts/install-tools)");
    }
    found
}

/// A `kubectl` run that failed, with what it wrote to stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{stderr}")]
pub struct KubectlFailed {
    pub stderr: String,
}

/// `kubectl --kubeconfig KUBECONFIG ARGS` with `stdin`: its stdout, or its stderr when it fails.
pub fn kubectl(
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, KubectlFailed> {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("PATH", path_with_tools())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl");
    let mut input = child.stdin.take().expect("kubectl stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .expect("write kubectl stdin");
    drop(input);
    let out = child.wait_with_output().expect("wait for kubectl");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(KubectlFailed {
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_dir_comes_first_on_the_path() {
        let path = path_with_tools();
        let first = path.split(':').next().unwrap_or_default();
        assert_eq!(Path::new(first), tools_dir());
    }

    #[test]
    fn a_shell_builtin_tool_is_found() {
        assert!(require_tool("sh"));
    }
}
