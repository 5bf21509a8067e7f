//! Files handed to `helm upgrade`: the chart (a module directory, or a copy of it with a
//! synthesised `Chart.yaml`) and the private values files.

use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::{NamedTempFile, TempDir};

use crate::edges::helm::CHECKSUM_KEY;

use crate::edges::helm::chart_files::NOT_CHART;

/// The chart to install; a synthesised copy lives as long as this value.
pub(crate) enum Chart {
    /// The module directory has its own `Chart.yaml`.
    Module(PathBuf),
    /// A copy of the module directory with a generated `Chart.yaml`.
    Synthesised(TempDir),
}

impl Chart {
    pub fn path(&self) -> &Path {
        match self {
            Self::Module(path) => path,
            Self::Synthesised(dir) => dir.path(),
        }
    }
}

/// The module directory itself when it has a `Chart.yaml`; otherwise (like the Go operator) a
/// copy in `tmp_dir` without the entries of [`NOT_CHART`] (`hooks/`, `crds/`, ...), with
/// `Chart.yaml` = `{apiVersion: v2, name: <release>, version: 0.2.0}`.
pub(crate) fn prepare(module_dir: &Path, release: &str, tmp_dir: &Path) -> std::io::Result<Chart> {
    if module_dir.join("Chart.yaml").is_file() {
        return Ok(Chart::Module(module_dir.to_path_buf()));
    }
    let dir = tempfile::Builder::new()
        .prefix(&format!("{release}.chart-"))
        .tempdir_in(tmp_dir)?;
    for entry in std::fs::read_dir(module_dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if NOT_CHART.iter().any(|skip| name == *skip) {
            continue;
        }
        copy_tree(&entry.path(), &dir.path().join(&name))?;
    }
    std::fs::write(dir.path().join("Chart.yaml"), chart_yaml(release))?;
    Ok(Chart::Synthesised(dir))
}

fn chart_yaml(release: &str) -> String {
    format!("apiVersion: v2\nname: {release}\nversion: 0.2.0\n")
}

/// Copies a file or a directory tree (symlinks followed).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

/// The values files of one upgrade, deleted on drop: the module values, then one file with
/// [`CHECKSUM_KEY`] (a second `--values` file, so the module YAML is passed through untouched).
pub(crate) struct ValuesFiles {
    pub values: NamedTempFile,
    pub checksum: NamedTempFile,
}

/// Writes both files in `tmp_dir` with mode 0600.
pub(crate) fn write_values(
    tmp_dir: &Path,
    release: &str,
    values_yaml: &str,
    checksum: &str,
) -> std::io::Result<ValuesFiles> {
    let values = private_file(
        tmp_dir,
        &format!("{release}.module-values.yaml-"),
        values_yaml,
    )?;
    let line = format!("{CHECKSUM_KEY}: {}\n", serde_json::Value::from(checksum));
    let checksum = private_file(tmp_dir, &format!("{release}.module-checksum.yaml-"), &line)?;
    Ok(ValuesFiles { values, checksum })
}

fn private_file(dir: &Path, prefix: &str, text: &str) -> std::io::Result<NamedTempFile> {
    // tempfile creates files with mode 0600 on unix
    let mut file = tempfile::Builder::new().prefix(prefix).tempfile_in(dir)?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_module_with_chart_yaml_is_used_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("Chart.yaml"), "name: x\n").unwrap();
        let chart = prepare(tmp.path(), "x", tmp.path()).unwrap();
        assert_eq!(chart.path(), tmp.path());
    }

    #[test]
    fn a_module_without_chart_yaml_is_copied_without_hooks_openapi_and_enabled() {
        let module = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        for dir in ["templates/sub", "hooks", "openapi"] {
            std::fs::create_dir_all(module.path().join(dir)).unwrap();
        }
        std::fs::write(module.path().join("templates/sub/cm.yaml"), "kind: X\n").unwrap();
        std::fs::write(module.path().join("hooks/h.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(module.path().join("enabled"), "#!/bin/sh\n").unwrap();
        std::fs::write(module.path().join("values.yaml"), "a: 1\n").unwrap();

        let chart = prepare(module.path(), "my-module", tmp.path()).unwrap();
        let root = chart.path();
        assert!(root.starts_with(tmp.path()));
        assert_eq!(
            std::fs::read_to_string(root.join("Chart.yaml")).unwrap(),
            "apiVersion: v2\nname: my-module\nversion: 0.2.0\n"
        );
        assert!(root.join("templates/sub/cm.yaml").is_file());
        assert!(root.join("values.yaml").is_file());
        assert!(!root.join("hooks").exists());
        assert!(!root.join("openapi").exists());
        assert!(!root.join("enabled").exists());
        assert!(!module.path().join("Chart.yaml").exists());
    }

    #[test]
    fn values_files_are_private_and_carry_the_checksum() {
        let tmp = tempfile::tempdir().unwrap();
        let files = write_values(tmp.path(), "web", "web: {a: 1}\n", "c0ffee").unwrap();
        let mode = std::fs::metadata(files.values.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            std::fs::read_to_string(files.values.path()).unwrap(),
            "web: {a: 1}\n"
        );
        assert_eq!(
            std::fs::read_to_string(files.checksum.path()).unwrap(),
            "_addonOperatorModuleChecksum: \"c0ffee\"\n"
        );
    }
}
