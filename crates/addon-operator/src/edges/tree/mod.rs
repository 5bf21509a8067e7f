//! Filesystem discovery: finds global hooks, modules, their values, schemas and hooks on disk
//! and returns them as `addon_core::discovery` data.

pub mod batch_hooks;
pub mod configs;
mod definition;
pub mod dirs;
pub mod hook_configs;
mod inotify;
pub mod kept;
pub mod runnable;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use addon_core::discovery::{
    Discovered, GlobalSource, HookFile, ModuleSource, OpenApiFiles, SourceFile, arrange_modules,
    hook_name_for,
};
use addon_core::names::{HookName, parse_module_dir_name};
use addon_core::schema::refs;

/// Where to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoaderConfig {
    pub modules_dirs: Vec<PathBuf>,
    pub global_hooks_dir: PathBuf,
    /// Order of module directories without a numeric prefix.
    pub unnumbered_order: u32,
}

/// A discovery problem that makes the tree invalid.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("read directory {}", path.display())]
    ReadDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("read file {}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("module directory {}", path.display())]
    ModuleName {
        path: PathBuf,
        #[source]
        source: addon_core::names::NameError,
    },
    #[error("hook {}", path.display())]
    HookName {
        path: PathBuf,
        #[source]
        source: addon_core::names::NameError,
    },
    #[error(
        "directory {} leads back to {} (a symlink loop); remove the link",
        path.display(),
        ancestor.display()
    )]
    DirectoryLoop { path: PathBuf, ancestor: PathBuf },
    #[error(
        "module directories {} and {} both give the values key '{key}': rename one",
        first.display(), second.display()
    )]
    ModuleKeyCollision {
        key: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("none of the directories exists: {}", dirs.join(", "))]
    NoDirectories { dirs: Vec<String> },
    #[error("{}", path.display())]
    ModuleDefinition {
        path: PathBuf,
        #[source]
        source: addon_core::module_definition::DefinitionError,
    },
    #[error(transparent)]
    ModuleCycle(#[from] addon_core::module_graph::Cycle),
}

impl LoadError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadDir { .. } | Self::ReadFile { .. } => "io",
            Self::DirectoryLoop { .. } => "directory_loop",
            Self::ModuleName { .. } | Self::HookName { .. } | Self::ModuleKeyCollision { .. } => {
                "invalid_name"
            }
            Self::NoDirectories { .. } => "io",
            Self::ModuleDefinition { .. } => "module_definition",
            Self::ModuleCycle(_) => "module_cycle",
        }
    }
}

/// File extensions that are never hooks, even when executable.
const NOT_HOOK_EXTENSIONS: [&str; 4] = ["yaml", "json", "md", "txt"];

/// Scans the configured directories. Returns what was found and every problem met on the way.
/// Relative directories are made absolute first, so hooks can run from their own directory.
/// A missing directory holds nothing (a modules-only or global-hooks-only tree); only a
/// configuration where no directory exists at all is an error.
pub fn load(config: &LoaderConfig) -> (Discovered, Vec<LoadError>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let global_dir = absolute(&config.global_hooks_dir);
    let global = if global_dir.exists() {
        load_global(&global_dir, &mut errors, &mut warnings)
    } else {
        GlobalSource {
            dir: global_dir.clone(),
            ..GlobalSource::default()
        }
    };
    let modules_dirs: Vec<PathBuf> = config.modules_dirs.iter().map(|d| absolute(d)).collect();
    if !global_dir.exists() && !modules_dirs.iter().any(|d| d.exists()) {
        let dirs = std::iter::once(&global_dir).chain(&modules_dirs);
        errors.push(LoadError::NoDirectories {
            dirs: dirs.map(|d| d.display().to_string()).collect(),
        });
    }
    let mut modules_values = Vec::new();
    let mut found = Vec::new();
    for dir in modules_dirs.iter().filter(|d| d.exists()) {
        if let Some(values) = read_optional(&dir.join("values.yaml"), &mut errors) {
            modules_values.push(values);
        }
        for entry in sorted_entries(dir, &mut errors) {
            match entry_kind(&entry) {
                EntryKind::Dir => {
                    let module =
                        load_module(&entry, config.unnumbered_order, &mut errors, &mut warnings);
                    found.extend(module.map(|m| ModuleSource {
                        modules_dir: Some(dir.clone()),
                        ..m
                    }));
                }
                EntryKind::File if file_name(&entry) == "values.yaml" => {}
                EntryKind::File => warnings.push(format!(
                    "{} is not a module directory and is ignored",
                    entry.display()
                )),
                EntryKind::Dangling => warnings.push(format!(
                    "{} is a broken symlink and is ignored",
                    entry.display()
                )),
            }
        }
    }
    let (modules, collisions) = arrange_modules(found, &mut warnings);
    errors.extend(addon_core::module_graph::find_cycle(&modules).map(LoadError::from));
    errors.extend(
        collisions
            .into_iter()
            .map(|c| LoadError::ModuleKeyCollision {
                key: c.key,
                first: c.first,
                second: c.second,
            }),
    );
    let discovered = Discovered {
        global,
        modules_values,
        modules,
        warnings,
    };
    (discovered, errors)
}

fn load_global(
    dir: &Path,
    errors: &mut Vec<LoadError>,
    warnings: &mut Vec<String>,
) -> GlobalSource {
    let nested = dir.join("hooks");
    let base = if nested.is_dir() {
        nested
    } else {
        dir.to_path_buf()
    };
    GlobalSource {
        dir: dir.to_path_buf(),
        hooks: find_hooks(&base, errors, warnings),
        openapi: load_openapi(dir, errors),
    }
}

fn load_module(
    path: &Path,
    unnumbered_order: u32,
    errors: &mut Vec<LoadError>,
    warnings: &mut Vec<String>,
) -> Option<ModuleSource> {
    let parsed = match parse_module_dir_name(&file_name(path), unnumbered_order) {
        Ok(parsed) => parsed,
        Err(source) => {
            errors.push(LoadError::ModuleName {
                path: path.to_path_buf(),
                source,
            });
            return None;
        }
    };
    let hooks_dir = path.join("hooks");
    let hooks = if hooks_dir.is_dir() {
        find_hooks(&hooks_dir, errors, warnings)
    } else {
        Vec::new()
    };
    let enabled = path.join("enabled");
    let enabled_script = match fs::metadata(&enabled) {
        Ok(meta) if is_executable(&meta) => Some(enabled),
        Ok(_) => {
            warnings.push(format!(
                "{} is not executable and is ignored (chmod +x it to use it)",
                enabled.display()
            ));
            None
        }
        Err(_) => None,
    };
    let definition = definition::load(path, errors, warnings);
    Some(ModuleSource {
        name: definition.name.clone().unwrap_or(parsed.name),
        order: definition.weight.unwrap_or(parsed.order),
        path: path.to_path_buf(),
        modules_dir: None,
        values_yaml: read_optional(&path.join("values.yaml"), errors),
        enabled_script,
        openapi: load_openapi(path, errors),
        has_chart: path.join("Chart.yaml").is_file() || path.join("templates").is_dir(),
        settings_check: None,
        hooks,
        definition,
    })
}

fn load_openapi(dir: &Path, errors: &mut Vec<LoadError>) -> OpenApiFiles {
    let openapi = dir.join("openapi");
    let mut files = OpenApiFiles {
        config_values: read_optional(&openapi.join("config-values.yaml"), errors),
        values: read_optional(&openapi.join("values.yaml"), errors),
        ref_files: read_ref_files(&openapi, errors),
    };
    if let Ok(cwd) = std::env::current_dir() {
        read_working_dir_refs(&cwd, &mut files, errors);
    }
    files
}

/// Reads the files that `$ref`s name relative to the process's working directory `cwd` (as the
/// Go operator resolves them) when they are not beside the referencing file: only files inside
/// `cwd`, at most [`MAX_REF_FILES`] in all, each adding its own references.
fn read_working_dir_refs(cwd: &Path, files: &mut OpenApiFiles, errors: &mut Vec<LoadError>) {
    let Ok(root) = cwd.canonicalize() else {
        return;
    };
    let mut queue: Vec<(String, String)> = files
        .config_values
        .iter()
        .map(|f| ("config-values.yaml".to_string(), f.text.clone()))
        .chain(
            files
                .values
                .iter()
                .map(|f| ("values.yaml".to_string(), f.text.clone())),
        )
        .chain(files.ref_files.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let mut tried: BTreeSet<String> = BTreeSet::new();
    while let Some((name, text)) = queue.pop() {
        let Ok(doc) = addon_core::yaml::parse(&text) else {
            continue;
        };
        let known = |key: &str| files.ref_files.contains_key(key) || tried.contains(key);
        let wants = refs::working_dir_wants(&name, &doc, &known);
        for key in wants {
            tried.insert(key.clone());
            if files.ref_files.len() >= MAX_REF_FILES {
                return;
            }
            let rel = key.strip_prefix(refs::WORKING_DIR).unwrap_or(&key);
            let inside = root
                .join(rel)
                .canonicalize()
                .ok()
                .filter(|p| p.starts_with(&root) && p.is_file());
            let Some(path) = inside else {
                continue;
            };
            if let Some(file) = read_optional(&path, errors) {
                queue.push((key.clone(), file.text.clone()));
                files.ref_files.insert(key, file.text);
            }
        }
    }
}

/// The most schema files read below one `openapi/` directory for `$ref`s.
const MAX_REF_FILES: usize = 256;

/// Every `.yaml`/`.yml`/`.json` file below `openapi/` (not following directory symlinks), by
/// path relative to it, for `$ref`s between schema files.
fn read_ref_files(openapi: &Path, errors: &mut Vec<LoadError>) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![openapi.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = fs::read_dir(&dir) else {
            continue;
        };
        for path in read.filter_map(Result::ok).map(|e| e.path()) {
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if meta.is_dir() {
                stack.push(path);
            } else if ["yaml", "yml", "json"].contains(&ext) && files.len() < MAX_REF_FILES {
                let rel = path.strip_prefix(openapi).unwrap_or(&path);
                let rel = rel.to_string_lossy().into_owned();
                if let Some(file) = read_optional(&path, errors) {
                    files.insert(rel, file.text);
                }
            }
        }
    }
    files
}

/// A directory by identity (device, inode), so a symlinked directory is recognised.
type DirId = (u64, u64);

fn dir_id(meta: &fs::Metadata) -> DirId {
    (meta.dev(), meta.ino())
}

/// A directory still to scan and the directories on the way to it (itself included).
struct PendingDir {
    path: PathBuf,
    id: DirId,
    ancestors: Vec<(DirId, PathBuf)>,
}

/// Recursively finds executable hooks under `base`, sorted by path. Symlinked directories are
/// followed, each directory at most once: one that leads back to a directory on its own path is
/// a loop (an error of the tree); one reached again by another path is skipped with a warning.
/// Directories reached without a symlink are scanned first, so a directory keeps its real path
/// in hook names whenever it has one, and any number of links costs one scan of each directory.
fn find_hooks(
    base: &Path,
    errors: &mut Vec<LoadError>,
    warnings: &mut Vec<String>,
) -> Vec<HookFile> {
    let mut hooks = Vec::new();
    let Ok(base_meta) = fs::metadata(base) else {
        // Reports why the base cannot be read, as for any other directory.
        sorted_entries(base, errors);
        return hooks;
    };
    let id = dir_id(&base_meta);
    let mut real = vec![PendingDir {
        path: base.to_path_buf(),
        id,
        ancestors: vec![(id, base.to_path_buf())],
    }];
    let mut linked = Vec::new();
    let mut visited = HashSet::new();
    while let Some(dir) = real.pop().or_else(|| linked.pop()) {
        if !visited.insert(dir.id) {
            warnings.push(format!(
                "{} is a directory already scanned through another path and is ignored",
                dir.path.display()
            ));
            continue;
        }
        for entry in sorted_entries(&dir.path, errors) {
            let name = file_name(&entry);
            let Ok(meta) = fs::metadata(&entry) else {
                warnings.push(format!(
                    "{} is a broken symlink and is ignored",
                    entry.display()
                ));
                continue;
            };
            if meta.is_dir() {
                if name != "lib" && name != "venv" {
                    let is_link = fs::symlink_metadata(&entry).is_ok_and(|m| m.is_symlink());
                    match subdir(&dir, entry, &meta) {
                        Ok(sub) if is_link => linked.push(sub),
                        Ok(sub) => real.push(sub),
                        Err(error) => errors.push(error),
                    }
                }
            } else if is_hook_candidate(&name) {
                if is_executable(&meta) {
                    hooks.extend(hook_file(base, &entry, errors));
                } else {
                    warnings.push(format!(
                        "{} is not executable and is not a hook (chmod +x it to make it one)",
                        entry.display()
                    ));
                }
            }
        }
    }
    hooks.sort_by(|a, b| a.path.cmp(&b.path));
    hooks
}

/// The subdirectory `path` of `parent` to scan, or a loop when it is one of its own ancestors.
fn subdir(
    parent: &PendingDir,
    path: PathBuf,
    meta: &fs::Metadata,
) -> Result<PendingDir, LoadError> {
    let id = dir_id(meta);
    if let Some((_, ancestor)) = parent.ancestors.iter().find(|(seen, _)| *seen == id) {
        return Err(LoadError::DirectoryLoop {
            path,
            ancestor: ancestor.clone(),
        });
    }
    let mut ancestors = parent.ancestors.clone();
    ancestors.push((id, path.clone()));
    Ok(PendingDir {
        path,
        id,
        ancestors,
    })
}

fn hook_file(base: &Path, path: &Path, errors: &mut Vec<LoadError>) -> Option<HookFile> {
    let rel = path
        .strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    let name = hook_name_for(&path.to_string_lossy(), &rel);
    match HookName::new(&name) {
        Ok(name) => Some(HookFile {
            name,
            path: path.to_path_buf(),
            working_dir: base.to_path_buf(),
            args: Vec::new(),
        }),
        Err(source) => {
            errors.push(LoadError::HookName {
                path: path.to_path_buf(),
                source,
            });
            None
        }
    }
}

fn is_hook_candidate(name: &str) -> bool {
    let ext = Path::new(name).extension().and_then(|e| e.to_str());
    !ext.is_some_and(|e| NOT_HOOK_EXTENSIONS.contains(&e))
}

fn is_executable(meta: &fs::Metadata) -> bool {
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

enum EntryKind {
    Dir,
    File,
    Dangling,
}

fn entry_kind(path: &Path) -> EntryKind {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => EntryKind::Dir,
        Ok(_) => EntryKind::File,
        Err(_) => EntryKind::Dangling,
    }
}

/// Entries of `dir` in lexical order, without dot-files.
fn sorted_entries(dir: &Path, errors: &mut Vec<LoadError>) -> Vec<PathBuf> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(source) => {
            errors.push(LoadError::ReadDir {
                path: dir.to_path_buf(),
                source,
            });
            return Vec::new();
        }
    };
    let mut entries: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| !file_name(p).starts_with('.'))
        .collect();
    entries.sort();
    entries
}

fn read_optional(path: &Path, errors: &mut Vec<LoadError>) -> Option<SourceFile> {
    match fs::read_to_string(path) {
        Ok(text) => Some(SourceFile {
            path: path.to_path_buf(),
            text,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            errors.push(LoadError::ReadFile {
                path: path.to_path_buf(),
                source,
            });
            None
        }
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
