//! A module's `crds/` directory (upstream's ModuleEnsureCRDs): the CustomResourceDefinitions in
//! its `*.yaml` files (files whose names start with a `--crd-filters` prefix skipped: `doc-` and
//! `_` by default), read and checked before they are created or updated in the cluster.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::runtime::edges::ObjectsError;
pub use crate::runtime::edges::files::{CrdsError, DEFAULT_CRD_FILTERS, ModuleCrds};

/// `--crd-filters` as upstream splits it: comma-separated prefixes, each trimmed (an empty one,
/// as in `--crd-filters=`, matches every file).
pub fn parse_filters(text: &str) -> Vec<String> {
    text.split(',').map(|p| p.trim().to_string()).collect()
}

/// CRDs of a module that the API server did not establish.
#[derive(Debug, thiserror::Error)]
pub enum CrdWaitError {
    #[error("read the CRD {name}: {error}")]
    Read { name: String, error: kube::Error },
    #[error("the CRD {name} is not Established after {}s", timeout.as_secs())]
    NotEstablished { name: String, timeout: Duration },
}

impl From<CrdWaitError> for ObjectsError {
    fn from(error: CrdWaitError) -> Self {
        Self::WaitCrds(Box::new(error))
    }
}

/// The CRDs in `module_dir/crds` (`None` when there is no such directory), files whose name
/// starts with one of `filters` left out. Blocking I/O.
pub fn read(module_dir: &Path, filters: &[String]) -> Result<Option<ModuleCrds>, CrdsError> {
    let dir = module_dir.join("crds");
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut files = Vec::new();
    yaml_files(&dir, filters, &mut files)?;
    files.sort();
    let mut hasher = Sha256::new();
    let mut objects = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| CrdsError::Read {
            path: path.clone(),
            source,
        })?;
        hasher.update(path.to_string_lossy().as_bytes());
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
        objects.extend(crds_of(&path, &text)?);
    }
    Ok(Some(ModuleCrds {
        checksum: format!("{:x}", hasher.finalize()),
        objects,
    }))
}

/// The `*.yaml` files under `dir` (subdirectories included), as upstream walks them: a
/// filter applies to file names only.
fn yaml_files(dir: &Path, filters: &[String], out: &mut Vec<PathBuf>) -> Result<(), CrdsError> {
    let read = |source| CrdsError::Read {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        if path.is_dir() {
            yaml_files(&path, filters, out)?;
        } else if name.ends_with(".yaml") && !filters.iter().any(|p| name.starts_with(p.as_str())) {
            out.push(path);
        }
    }
    Ok(())
}

/// The CRDs of one file; empty documents are skipped, anything else is an error.
fn crds_of(path: &Path, text: &str) -> Result<Vec<Value>, CrdsError> {
    let docs = serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text).map_err(|e| {
        CrdsError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    })?;
    let mut out = Vec::new();
    for (index, doc) in docs.into_iter().enumerate() {
        if doc.is_null() {
            continue;
        }
        let is_crd = doc["apiVersion"] == "apiextensions.k8s.io/v1"
            && doc["kind"] == "CustomResourceDefinition"
            && doc["metadata"]["name"]
                .as_str()
                .is_some_and(|n| !n.is_empty());
        if !is_crd {
            return Err(CrdsError::NotACrd {
                path: path.to_path_buf(),
                index: index + 1,
                kind: doc["kind"]
                    .as_str()
                    .unwrap_or("document without kind")
                    .to_string(),
            });
        }
        out.push(doc);
    }
    Ok(out)
}

/// How often [`wait_established`] looks.
const ESTABLISHED_POLL: Duration = Duration::from_millis(200);

/// Waits until every CRD in `names` has the condition `Established: True` (the API server serves
/// its kind), so that watches and Helm in the same module run find the kind.
pub async fn wait_established(
    client: &kube::Client,
    names: &[String],
    timeout: Duration,
) -> Result<(), CrdWaitError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + timeout;
    for name in names {
        loop {
            let crd = api
                .get_opt(name)
                .await
                .map_err(|error| CrdWaitError::Read {
                    name: name.clone(),
                    error,
                })?;
            if crd.as_ref().is_some_and(is_established) {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(CrdWaitError::NotEstablished {
                    name: name.clone(),
                    timeout,
                });
            }
            tokio::time::sleep(ESTABLISHED_POLL).await;
        }
    }
    Ok(())
}

fn is_established(crd: &CustomResourceDefinition) -> bool {
    let conditions = crd.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| {
        c.iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crontabs.example.com\nspec:\n  group: example.com\n";

    fn write(root: &Path, name: &str, text: &str) {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn defaults() -> Vec<String> {
        parse_filters("doc-,_")
    }

    #[test]
    fn custom_filters_replace_the_default_prefixes_and_apply_to_file_names() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "crds/doc-a.yaml", CRD);
        write(dir.path(), "crds/skip-b.yaml", "kind: Other\n");
        let second = CRD.replace("crontabs", "backups");
        write(dir.path(), "crds/skip-dir/b.yaml", &second);
        let filters = parse_filters(" skip- ,tmp-");
        assert_eq!(filters, ["skip-", "tmp-"]);
        let crds = read(dir.path(), &filters).unwrap().unwrap();
        let names: Vec<&str> = (crds.objects.iter())
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["crontabs.example.com", "backups.example.com"]);
        // an empty prefix matches every file, as upstream's
        let none = read(dir.path(), &parse_filters("")).unwrap().unwrap();
        assert!(none.objects.is_empty());
    }

    #[test]
    fn a_module_without_crds_has_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path(), &defaults()).unwrap(), None);
    }

    #[test]
    fn yaml_files_are_read_in_order_and_filtered_files_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let second = CRD.replace("crontabs", "backups");
        write(dir.path(), "crds/b.yaml", &format!("---\n{second}---\n"));
        write(dir.path(), "crds/a.yaml", CRD);
        write(dir.path(), "crds/doc-a.yaml", "kind: Doc\n");
        write(dir.path(), "crds/_x.yaml", "kind: Other\n");
        write(dir.path(), "crds/README.md", "not yaml");
        let crds = read(dir.path(), &defaults()).unwrap().unwrap();
        let names: Vec<&str> = crds
            .objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["crontabs.example.com", "backups.example.com"]);
    }

    #[test]
    fn the_checksum_follows_the_content() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "crds/a.yaml", CRD);
        let before = read(dir.path(), &defaults()).unwrap().unwrap().checksum;
        write(
            dir.path(),
            "crds/a.yaml",
            &format!("{CRD}  scope: Namespaced\n"),
        );
        assert_ne!(
            read(dir.path(), &defaults()).unwrap().unwrap().checksum,
            before
        );
    }

    #[test]
    fn a_document_that_is_not_a_crd_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "crds/a.yaml",
            &format!("{CRD}---\nkind: ConfigMap\n"),
        );
        let error = read(dir.path(), &defaults()).unwrap_err().to_string();
        assert!(
            error.contains("a.yaml") && error.contains("document 2 is a ConfigMap"),
            "{error}"
        );
    }
}
