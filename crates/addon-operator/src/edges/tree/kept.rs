//! What `--reload-tree` keeps of the files of a tree: a copy of each module directory that has
//! delete hooks (a removed module runs them from there, its own files being gone), and the
//! content digests that tell an edited hook or chart from an unchanged one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use addon_core::discovery::{Discovered, ModuleSource};
use addon_core::hook_config::{BindingType, HookConfig};
use addon_core::names::ModuleName;
use sha2::{Digest, Sha256};

use crate::edges::helm::chart_files;

/// Deepest directory level copied below a module directory.
const MAX_DEPTH: usize = 32;

/// A module directory that could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum KeptDirError {
    #[error("create the directory {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("copy {} to {}", from.display(), to.display())]
    Copy {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("read the directory {}", path.display())]
    ReadDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is nested deeper than {MAX_DEPTH} levels", path.display())]
    TooDeep { path: PathBuf },
}

impl KeptDirError {
    pub fn category(&self) -> &'static str {
        "kept_dir"
    }
}

/// The copies of module directories with delete hooks, under `root` (one directory per module,
/// by name).
pub struct KeptDirs {
    root: PathBuf,
}

impl KeptDirs {
    /// Copies under `root`, which starts empty (copies of an earlier run are removed).
    pub fn new(root: PathBuf) -> Self {
        let _ = std::fs::remove_dir_all(&root);
        Self { root }
    }

    /// Copies anew the directory of each of `modules` that has beforeDeleteHelm or
    /// afterDeleteHelm hooks (hard links, a copy where they cannot be made); a module without
    /// them has its old copy removed. Blocking I/O.
    pub fn refresh<'a>(
        &self,
        modules: impl IntoIterator<Item = &'a ModuleSource>,
        configs: &BTreeMap<PathBuf, HookConfig>,
    ) -> Vec<KeptDirError> {
        let mut problems = Vec::new();
        for module in modules {
            let copy = self.root.join(module.name.as_str());
            let _ = std::fs::remove_dir_all(&copy);
            if !has_delete_hooks(module, configs) {
                continue;
            }
            if let Err(e) = copy_dir(&module.path, &copy, 0) {
                let _ = std::fs::remove_dir_all(&copy);
                problems.push(e);
            }
        }
        problems
    }

    /// The kept copy of each module that has one.
    pub fn dirs(&self) -> BTreeMap<ModuleName, PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return BTreeMap::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let name = ModuleName::new(e.file_name().to_str()?).ok()?;
                Some((name, e.path()))
            })
            .collect()
    }

    /// Removes the copies of modules not in `keep`.
    pub fn prune(&self, keep: &[ModuleName]) {
        for (module, dir) in self.dirs() {
            if !keep.contains(&module) {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    /// Removes every copy (at shutdown).
    pub fn remove_all(&self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn has_delete_hooks(module: &ModuleSource, configs: &BTreeMap<PathBuf, HookConfig>) -> bool {
    module.hooks.iter().any(|hook| {
        configs.get(&hook.config_key()).is_some_and(|c| {
            (c.order(BindingType::BeforeDeleteHelm))
                .or(c.order(BindingType::AfterDeleteHelm))
                .is_some()
        })
    })
}

/// Copies `from` into `to` (made): files as hard links (a copy across file systems), symbolic
/// links as links; other entries are skipped.
fn copy_dir(from: &Path, to: &Path, depth: usize) -> Result<(), KeptDirError> {
    if depth > MAX_DEPTH {
        return Err(KeptDirError::TooDeep {
            path: from.to_path_buf(),
        });
    }
    std::fs::create_dir_all(to).map_err(|source| KeptDirError::CreateDir {
        path: to.to_path_buf(),
        source,
    })?;
    let read_dir = |source| KeptDirError::ReadDir {
        path: from.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(from).map_err(read_dir)? {
        let entry = entry.map_err(read_dir)?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(read_dir)?;
        let copied = if kind.is_dir() {
            copy_dir(&source, &target, depth + 1)?;
            Ok(())
        } else if kind.is_symlink() {
            std::fs::read_link(&source).and_then(|link| std::os::unix::fs::symlink(link, &target))
        } else if kind.is_file() {
            std::fs::hard_link(&source, &target)
                .or_else(|_| std::fs::copy(&source, &target).map(|_| ()))
        } else {
            Ok(())
        };
        copied.map_err(|source_error| KeptDirError::Copy {
            from: source.clone(),
            to: target.clone(),
            source: source_error,
        })?;
    }
    Ok(())
}

/// Content digests of a tree's files: each hook file by its path, each module's chart files by
/// the module's path (a file that cannot be read gets a digest that never matches). Blocking
/// I/O.
pub fn digests(found: &Discovered) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let hooks = (found.global.hooks.iter()).chain(found.modules.iter().flat_map(|m| &m.hooks));
    for hook in hooks {
        if out.contains_key(&hook.path) {
            continue;
        }
        let digest = match file_digest(&hook.path) {
            Ok(digest) => digest,
            Err(e) => format!("unreadable: {e}"),
        };
        out.insert(hook.path.clone(), digest);
    }
    for module in found.modules.iter().filter(|m| m.has_chart) {
        let digest =
            chart_files::checksum(&module.path, &[]).unwrap_or_else(|e| format!("unreadable: {e}"));
        out.insert(module.path.clone(), digest);
    }
    out
}

/// SHA-256 of a file, read a buffer at a time (a batch hook is often a binary of tens of MB).
fn file_digest(path: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_copy_outlives_the_module_directory_and_is_pruned_when_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let module_dir = tmp.path().join("modules/001-alpha");
        std::fs::create_dir_all(module_dir.join("hooks/lib")).unwrap();
        std::fs::write(module_dir.join("hooks/cleanup"), "#!/bin/sh\necho bye\n").unwrap();
        std::fs::write(module_dir.join("hooks/lib/common.sh"), "x=1\n").unwrap();
        std::os::unix::fs::symlink("cleanup", module_dir.join("hooks/link")).unwrap();
        let name = ModuleName::new("alpha").unwrap();
        let hook = addon_core::discovery::HookFile {
            name: addon_core::names::HookName::new("hooks/cleanup").unwrap(),
            path: module_dir.join("hooks/cleanup"),
            working_dir: module_dir.join("hooks"),
            args: Vec::new(),
        };
        let config = addon_core::hook_config::parse(
            &hook.name,
            addon_core::hook_config::HookScope::Module,
            "configVersion: v1\nafterDeleteHelm: 1\n",
        )
        .unwrap();
        let module = ModuleSource {
            name: name.clone(),
            order: 1,
            path: module_dir.clone(),
            modules_dir: None,
            values_yaml: None,
            enabled_script: None,
            openapi: Default::default(),
            definition: Default::default(),
            has_chart: false,
            settings_check: None,
            hooks: vec![hook.clone()],
        };
        let configs = BTreeMap::from([(hook.path.clone(), config)]);
        let kept = KeptDirs::new(tmp.path().join("kept"));
        assert!(kept.refresh([&module], &configs).is_empty());
        std::fs::remove_dir_all(&module_dir).unwrap();
        let copy = kept.dirs().remove(&name).unwrap();
        let text = std::fs::read_to_string(copy.join("hooks/cleanup")).unwrap();
        assert_eq!(text, "#!/bin/sh\necho bye\n");
        assert!(copy.join("hooks/lib/common.sh").is_file());
        let link = std::fs::read_link(copy.join("hooks/link")).unwrap();
        assert_eq!(link, PathBuf::from("cleanup"));
        kept.prune(std::slice::from_ref(&name));
        assert!(copy.is_dir());
        kept.prune(&[]);
        assert!(!copy.exists());
    }

    #[test]
    fn a_module_without_delete_hooks_is_not_copied() {
        let tmp = tempfile::tempdir().unwrap();
        let module_dir = tmp.path().join("001-beta");
        std::fs::create_dir_all(&module_dir).unwrap();
        let module = ModuleSource {
            name: ModuleName::new("beta").unwrap(),
            order: 1,
            path: module_dir,
            modules_dir: None,
            values_yaml: None,
            enabled_script: None,
            openapi: Default::default(),
            definition: Default::default(),
            has_chart: false,
            settings_check: None,
            hooks: Vec::new(),
        };
        let kept = KeptDirs::new(tmp.path().join("kept"));
        assert!(kept.refresh([&module], &BTreeMap::new()).is_empty());
        assert!(kept.dirs().is_empty());
    }

    #[test]
    fn digests_change_with_a_hook_file_and_with_a_template() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("001-alpha");
        std::fs::create_dir_all(dir.join("templates")).unwrap();
        std::fs::create_dir_all(dir.join("hooks")).unwrap();
        std::fs::write(dir.join("Chart.yaml"), "name: alpha\n").unwrap();
        std::fs::write(dir.join("templates/a.yaml"), "a: 1\n").unwrap();
        std::fs::write(dir.join("hooks/h"), "one").unwrap();
        let found = Discovered {
            modules: vec![ModuleSource {
                name: ModuleName::new("alpha").unwrap(),
                order: 1,
                path: dir.clone(),
                modules_dir: None,
                values_yaml: None,
                enabled_script: None,
                openapi: Default::default(),
                definition: Default::default(),
                has_chart: true,
                settings_check: None,
                hooks: vec![addon_core::discovery::HookFile {
                    name: addon_core::names::HookName::new("hooks/h").unwrap(),
                    path: dir.join("hooks/h"),
                    working_dir: dir.join("hooks"),
                    args: Vec::new(),
                }],
            }],
            ..Discovered::default()
        };
        let first = digests(&found);
        assert_eq!(first, digests(&found));
        std::fs::write(dir.join("templates/a.yaml"), "a: 2\n").unwrap();
        let second = digests(&found);
        assert_ne!(first.get(&dir), second.get(&dir));
        assert_eq!(
            first.get(&dir.join("hooks/h")),
            second.get(&dir.join("hooks/h"))
        );
        std::fs::write(dir.join("hooks/h"), "two").unwrap();
        assert_ne!(
            digests(&found).get(&dir.join("hooks/h")),
            second.get(&dir.join("hooks/h"))
        );
    }
}
