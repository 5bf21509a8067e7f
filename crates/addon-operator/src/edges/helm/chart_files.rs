//! The files Helm loads for a module's chart (the whole directory, `.helmignore` applied,
//! subcharts and packaged `.tgz` dependencies included; without a `Chart.yaml` the entries the
//! synthesised chart leaves out are skipped) plus its `crds/`, and their checksum, which decides
//! whether the release is upgraded.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::helmignore::{HelmIgnore, HelmIgnoreError};

/// Top-level entries of a module directory without `Chart.yaml` that are not part of its
/// synthesised chart (the Go operator's list, plus the module's own `openapi/` and `enabled`).
pub(crate) const NOT_CHART: [&str; 7] = [
    "hooks", "openapi", "enabled", "crds", "docs", "images", "lib",
];

/// How deep directories are followed (symbolic links may loop).
const MAX_DEPTH: usize = 32;

/// A chart file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ChartFilesError {
    #[error("read the chart file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parse {}", path.display())]
    HelmIgnore {
        path: PathBuf,
        #[source]
        source: HelmIgnoreError,
    },
    #[error("the chart directory {} is nested deeper than {MAX_DEPTH} levels (a symlink loop?)", path.display())]
    TooDeep { path: PathBuf },
}

/// Checksum of `extra` (the values) and of every file Helm loads for the module at
/// `module_dir`, plus the module's `crds/`: a change of any of them changes it. Blocking I/O:
/// call it off the async executor.
pub fn checksum(module_dir: &Path, extra: &[u8]) -> Result<String, ChartFilesError> {
    let mut hasher = Sha256::new();
    hasher.update((extra.len() as u64).to_le_bytes());
    hasher.update(extra);
    let mut files = chart_files(module_dir)?;
    let crds = module_dir.join("crds");
    if !module_dir.join("Chart.yaml").is_file() && crds.is_dir() {
        walk(&crds, "crds", &HelmIgnore::default(), 0, &mut files)?;
    }
    files.sort();
    files.dedup();
    for (name, path) in files {
        let bytes = std::fs::read(&path).map_err(|source| ChartFilesError::Read {
            path: path.clone(),
            source,
        })?;
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// (relative `/`-separated name, path) of every file Helm loads for the module's chart.
pub fn chart_files(module_dir: &Path) -> Result<Vec<(String, PathBuf)>, ChartFilesError> {
    let ignore_file = module_dir.join(".helmignore");
    let rules = match std::fs::read_to_string(&ignore_file) {
        Ok(text) => HelmIgnore::parse(&text),
        Err(_) => HelmIgnore::parse(""),
    }
    .map_err(|source| ChartFilesError::HelmIgnore {
        path: ignore_file,
        source,
    })?;
    let has_chart_yaml = module_dir.join("Chart.yaml").is_file();
    let mut out = Vec::new();
    for (name, path, is_dir) in entries(module_dir)? {
        if !has_chart_yaml && NOT_CHART.contains(&name.as_str()) {
            continue;
        }
        if rules.ignores(&name, is_dir) {
            continue;
        }
        if is_dir {
            walk(&path, &name, &rules, 1, &mut out)?;
        } else {
            out.push((name, path));
        }
    }
    Ok(out)
}

fn walk(
    dir: &Path,
    prefix: &str,
    rules: &HelmIgnore,
    depth: usize,
    out: &mut Vec<(String, PathBuf)>,
) -> Result<(), ChartFilesError> {
    if depth > MAX_DEPTH {
        return Err(ChartFilesError::TooDeep {
            path: dir.to_path_buf(),
        });
    }
    for (name, path, is_dir) in entries(dir)? {
        let name = format!("{prefix}/{name}");
        if rules.ignores(&name, is_dir) {
            continue;
        }
        if is_dir {
            walk(&path, &name, rules, depth + 1, out)?;
        } else {
            out.push((name, path));
        }
    }
    Ok(())
}

/// (name, path, is a directory) of the entries of `dir`, symbolic links followed; entries that
/// are neither files nor directories (sockets, broken links) are skipped, as Helm does.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>, ChartFilesError> {
    let read = |source| ChartFilesError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() || meta.is_file() {
            let name = entry.file_name().to_string_lossy().into_owned();
            out.push((name, path, meta.is_dir()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, name: &str, text: &str) {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn names(root: &Path) -> Vec<String> {
        let mut names: Vec<String> = chart_files(root)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_chart_with_chart_yaml_is_loaded_whole_minus_helmignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in [
            "Chart.yaml",
            "values.yaml",
            "templates/cm.yaml",
            "templates/.hidden",
            "charts/sub/Chart.yaml",
            "charts/sub/templates/x.yaml",
            "charts/dep-1.0.0.tgz",
            "files/conf.txt",
            "crds/crd.yaml",
            "notes.swp",
        ] {
            write(root, name, name);
        }
        write(root, ".helmignore", "*.swp\n");
        assert_eq!(
            names(root),
            [
                ".helmignore",
                "Chart.yaml",
                "charts/dep-1.0.0.tgz",
                "charts/sub/Chart.yaml",
                "charts/sub/templates/x.yaml",
                "crds/crd.yaml",
                "files/conf.txt",
                "templates/cm.yaml",
                "values.yaml",
            ]
        );
    }

    #[test]
    fn a_module_without_chart_yaml_leaves_out_hooks_openapi_and_crds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in [
            "values.yaml",
            "templates/cm.yaml",
            "hooks/h",
            "openapi/config-values.yaml",
            "enabled",
            "crds/crd.yaml",
            "files/a.txt",
        ] {
            write(root, name, name);
        }
        assert_eq!(
            names(root),
            ["files/a.txt", "templates/cm.yaml", "values.yaml"]
        );
    }

    #[test]
    fn the_checksum_changes_with_any_loaded_file_and_with_crds_but_not_ignored_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "templates/cm.yaml", "a");
        write(root, "crds/crd.yaml", "a");
        write(root, "charts/sub/values.yaml", "a");
        write(root, "files/conf.txt", "a");
        write(root, "hooks/h", "a");
        let base = checksum(root, b"values").unwrap();
        assert_ne!(checksum(root, b"other values").unwrap(), base);
        for changed in ["crds/crd.yaml", "charts/sub/values.yaml", "files/conf.txt"] {
            write(root, changed, "b");
            let now = checksum(root, b"values").unwrap();
            assert_ne!(now, base, "{changed}");
            write(root, changed, "a");
        }
        write(root, "hooks/h", "b");
        assert_eq!(
            checksum(root, b"values").unwrap(),
            base,
            "hooks are not chart files"
        );
    }

    #[test]
    fn a_bad_helmignore_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), ".helmignore", "**/x\n");
        let error = checksum(dir.path(), b"").unwrap_err();
        assert!(error.to_string().contains(".helmignore"));
    }
}
