//! What discovery found on disk, as plain data: global hooks, modules with their files, and the
//! ordering and de-duplication rules that turn directory listings into the module set.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::names::{HookName, ModuleName};

/// An executable hook file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFile {
    pub name: HookName,
    pub path: PathBuf,
    /// The hooks directory that was searched; hooks get it as `$WORKING_DIR` (for
    /// `source $WORKING_DIR/lib/common.sh`).
    pub working_dir: PathBuf,
    /// Arguments every run gets first: `hook run <i>` / `hook ready` for one hook of a batch
    /// executable; empty for a plain hook.
    pub args: Vec<String>,
}

impl HookFile {
    /// The key of this hook's config: its path, plus the arguments for a hook of a batch
    /// executable (several hooks share the path).
    pub fn config_key(&self) -> PathBuf {
        if self.args.is_empty() {
            self.path.clone()
        } else {
            PathBuf::from(format!("{}#{}", self.path.display(), self.args.join(" ")))
        }
    }
}

/// A file read during discovery: where it is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
}

/// The OpenAPI schema files of the global section or of one module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenApiFiles {
    /// `openapi/config-values.yaml`
    pub config_values: Option<SourceFile>,
    /// `openapi/values.yaml`
    pub values: Option<SourceFile>,
    /// The other `.yaml`/`.yml`/`.json` files below `openapi/`, by path relative to it, for
    /// `$ref`s between schema files.
    pub ref_files: BTreeMap<String, String>,
}

/// The global hooks directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GlobalSource {
    pub dir: PathBuf,
    pub hooks: Vec<HookFile>,
    pub openapi: OpenApiFiles,
}

/// One module directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSource {
    pub name: ModuleName,
    pub order: u32,
    pub path: PathBuf,
    /// The modules directory the module was found in: only that directory's `values.yaml` gives
    /// the module its section and enable flag (`None`: every directory's, merged).
    pub modules_dir: Option<PathBuf>,
    /// The module's own `values.yaml` (only its camelCase key and `<key>Enabled` are used).
    pub values_yaml: Option<SourceFile>,
    /// The `enabled` script, when it exists and is executable.
    pub enabled_script: Option<PathBuf>,
    pub openapi: OpenApiFiles,
    /// `Chart.yaml` or `templates/` exists: the module has a Helm part.
    pub has_chart: bool,
    /// The batch executable among its hooks that answers `hook check` (module-sdk's settings
    /// check, `has_settings_check` in its `hook config`); its first when several do.
    pub settings_check: Option<PathBuf>,
    pub hooks: Vec<HookFile>,
    /// What the module's `module.yaml` says (its requirements; empty without the file).
    pub definition: crate::module_definition::ModuleDefinition,
}

impl AsRef<ModuleSource> for ModuleSource {
    fn as_ref(&self) -> &ModuleSource {
        self
    }
}

/// Everything discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    pub global: GlobalSource,
    /// `values.yaml` at the root of each modules directory, in directory order.
    pub modules_values: Vec<SourceFile>,
    /// Modules sorted by (order, name), without duplicates.
    pub modules: Vec<ModuleSource>,
    /// Things a person should look at that do not stop the operator.
    pub warnings: Vec<String>,
}

/// Two module directories whose names give the same values key (`module-1` and `module1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameCollision {
    pub key: String,
    pub first: PathBuf,
    pub second: PathBuf,
}

/// Sorts modules by (order, name). A later module with exactly the same name is dropped with a
/// warning (modules found earlier, in an earlier modules directory, win, as in the Go operator);
/// a later module whose different name gives the same values key is a collision and dropped too.
pub fn arrange_modules(
    found: Vec<ModuleSource>,
    warnings: &mut Vec<String>,
) -> (Vec<ModuleSource>, Vec<NameCollision>) {
    let mut unique: Vec<ModuleSource> = Vec::with_capacity(found.len());
    let mut collisions = Vec::new();
    for module in found {
        match unique.iter().find(|m| m.name == module.name) {
            None => unique.push(module),
            Some(first) if first.name.as_str() == module.name.as_str() => {
                warnings.push(format!(
                    "module '{}' at {} is ignored: a module with the same name was found first",
                    module.name,
                    module.path.display()
                ));
            }
            Some(first) => collisions.push(NameCollision {
                key: module.name.values_key(),
                first: first.path.clone(),
                second: module.path,
            }),
        }
    }
    unique.sort_by(|a, b| (a.order, a.name.as_str()).cmp(&(b.order, b.name.as_str())));
    (unique, collisions)
}

/// The name of a hook at `rel` (a path relative to the directory that was searched, using `/`):
/// from the last `hooks/` component on when the full path has one, otherwise `rel` itself.
pub fn hook_name_for(full_path: &str, rel: &str) -> String {
    match full_path.rfind("/hooks/") {
        Some(i) => full_path[i + 1..].to_string(),
        None => rel.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(name: &str, order: u32, path: &str) -> ModuleSource {
        ModuleSource {
            name: ModuleName::new(name).unwrap(),
            order,
            path: PathBuf::from(path),
            modules_dir: None,
            values_yaml: None,
            enabled_script: None,
            openapi: OpenApiFiles::default(),
            definition: Default::default(),
            has_chart: false,
            settings_check: None,
            hooks: vec![],
        }
    }

    #[test]
    fn modules_are_sorted_by_order_then_name() {
        let mut w = vec![];
        let (got, _) = arrange_modules(
            vec![
                module("zeta", 1, "/a/zeta"),
                module("beta", 20, "/a/020-beta"),
                module("alpha", 20, "/a/020-alpha"),
                module("gamma", 3, "/a/003-gamma"),
            ],
            &mut w,
        );
        let names: Vec<_> = got.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["zeta", "gamma", "alpha", "beta"]);
        assert!(w.is_empty());
    }

    #[test]
    fn duplicate_module_in_a_later_dir_is_ignored_with_a_warning() {
        let mut w = vec![];
        let (got, collisions) = arrange_modules(
            vec![
                module("web", 10, "/one/010-web"),
                module("web", 5, "/two/005-web"),
            ],
            &mut w,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path, PathBuf::from("/one/010-web"));
        assert!(w[0].contains("/two/005-web"), "{w:?}");
        assert!(collisions.is_empty());
    }

    #[test]
    fn different_names_with_the_same_values_key_are_a_collision() {
        let mut w = vec![];
        let (got, collisions) = arrange_modules(
            vec![
                module("module-1", 1, "/m/001-module-1"),
                module("module1", 2, "/m/002-module1"),
                module("module-2", 3, "/m/003-module-2"),
            ],
            &mut w,
        );
        assert_eq!(got.len(), 2);
        assert_eq!(
            collisions,
            [NameCollision {
                key: "module1".into(),
                first: PathBuf::from("/m/001-module-1"),
                second: PathBuf::from("/m/002-module1"),
            }]
        );
        assert!(w.is_empty());
    }

    #[test]
    fn hook_name_starts_at_the_hooks_dir() {
        assert_eq!(
            hook_name_for("/m/001-a/hooks/https/copy_cert.py", "https/copy_cert.py"),
            "hooks/https/copy_cert.py"
        );
        assert_eq!(
            hook_name_for("/gh/000-all-bindings/hook", "000-all-bindings/hook"),
            "000-all-bindings/hook"
        );
    }
}
