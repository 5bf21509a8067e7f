//! Resolves the modules and global hooks directories from flags and the environment, with one
//! documented precedence for the upstream names and the seed documents' names.

use std::path::PathBuf;

/// Directory flags as given on the command line (`None` = not given).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct DirFlags {
    /// Working directory holding `global-hooks/` and `modules/`
    /// [env: ADDON_OPERATOR_WORKING_DIR]
    #[arg(long, value_name = "DIR")]
    pub working_dir: Option<PathBuf>,
    /// Modules directories, separated by ':'
    /// [env: ADDON_OPERATOR_MODULES_DIR, MODULES_DIR]
    #[arg(long, value_name = "DIRS")]
    pub modules_dir: Option<String>,
    /// Global hooks directory
    /// [env: ADDON_OPERATOR_GLOBAL_HOOKS_DIR, GLOBAL_HOOKS_DIR]
    #[arg(long, value_name = "DIR")]
    pub global_hooks_dir: Option<PathBuf>,
    /// Order given to module directories without a numeric prefix
    /// [env: ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER]
    #[arg(long, value_name = "N")]
    pub unnumbered_modules_order: Option<u32>,
}

/// The directories to scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    pub modules_dirs: Vec<PathBuf>,
    pub global_hooks_dir: PathBuf,
    pub unnumbered_order: u32,
}

/// Resolves the directories. Precedence, first found wins:
///
/// - modules: `--modules-dir`, `--working-dir`/modules, `ADDON_OPERATOR_MODULES_DIR`,
///   `MODULES_DIR`, `ADDON_OPERATOR_WORKING_DIR`/modules, `modules`;
/// - global hooks: `--global-hooks-dir`, `--working-dir`/global-hooks,
///   `ADDON_OPERATOR_GLOBAL_HOOKS_DIR`, `GLOBAL_HOOKS_DIR`, `SHELL_OPERATOR_HOOKS_DIR`,
///   `ADDON_OPERATOR_WORKING_DIR`/global-hooks, `global-hooks`.
///
/// Flags beat environment variables; a specific directory beats the working directory at the
/// same level. `env` looks a variable up (the process environment in `main`, a map in tests).
pub fn resolve(flags: &DirFlags, env: &dyn Fn(&str) -> Option<String>) -> Dirs {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let flag_working = flags.working_dir.clone();
    let env_working = env("ADDON_OPERATOR_WORKING_DIR").map(PathBuf::from);
    let modules = flags
        .modules_dir
        .clone()
        .or_else(|| {
            flag_working
                .as_ref()
                .map(|w| w.join("modules").to_string_lossy().into())
        })
        .or_else(|| env("ADDON_OPERATOR_MODULES_DIR"))
        .or_else(|| env("MODULES_DIR"))
        .or_else(|| {
            env_working
                .as_ref()
                .map(|w| w.join("modules").to_string_lossy().into())
        })
        .unwrap_or_else(|| "modules".to_string());
    let global_hooks_dir = flags
        .global_hooks_dir
        .clone()
        .or_else(|| flag_working.as_ref().map(|w| w.join("global-hooks")))
        .or_else(|| env("ADDON_OPERATOR_GLOBAL_HOOKS_DIR").map(PathBuf::from))
        .or_else(|| env("GLOBAL_HOOKS_DIR").map(PathBuf::from))
        .or_else(|| env("SHELL_OPERATOR_HOOKS_DIR").map(PathBuf::from))
        .or_else(|| env_working.as_ref().map(|w| w.join("global-hooks")))
        .unwrap_or_else(|| PathBuf::from("global-hooks"));
    let unnumbered_order = flags
        .unnumbered_modules_order
        .or_else(|| env("ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER").and_then(|v| v.parse().ok()))
        .unwrap_or(addon_core::names::DEFAULT_UNNUMBERED_MODULE_ORDER);
    Dirs {
        modules_dirs: modules
            .split(':')
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect(),
        global_hooks_dir,
        unnumbered_order,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve_with(flags: DirFlags, vars: &[(&str, &str)]) -> Dirs {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(&flags, &|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_are_relative_modules_and_global_hooks() {
        let d = resolve_with(DirFlags::default(), &[]);
        assert_eq!(d.modules_dirs, [PathBuf::from("modules")]);
        assert_eq!(d.global_hooks_dir, PathBuf::from("global-hooks"));
        assert_eq!(d.unnumbered_order, 1);
    }

    #[test]
    fn working_dir_env_gives_both_dirs() {
        let d = resolve_with(
            DirFlags::default(),
            &[("ADDON_OPERATOR_WORKING_DIR", "/addons")],
        );
        assert_eq!(d.modules_dirs, [PathBuf::from("/addons/modules")]);
        assert_eq!(d.global_hooks_dir, PathBuf::from("/addons/global-hooks"));
    }

    #[test]
    fn upstream_env_names_beat_seed_names_which_beat_working_dir_env() {
        let d = resolve_with(
            DirFlags::default(),
            &[
                ("ADDON_OPERATOR_WORKING_DIR", "/w"),
                ("MODULES_DIR", "/seed-modules"),
                ("GLOBAL_HOOKS_DIR", "/seed-gh"),
                ("ADDON_OPERATOR_MODULES_DIR", "/a:/b"),
            ],
        );
        assert_eq!(d.modules_dirs, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(d.global_hooks_dir, PathBuf::from("/seed-gh"));
    }

    #[test]
    fn flags_beat_environment() {
        let flags = DirFlags {
            working_dir: Some(PathBuf::from("/flag-w")),
            modules_dir: Some("/flag-m".into()),
            global_hooks_dir: None,
            unnumbered_modules_order: Some(5),
        };
        let d = resolve_with(
            flags,
            &[
                ("ADDON_OPERATOR_GLOBAL_HOOKS_DIR", "/env-gh"),
                ("ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER", "9"),
            ],
        );
        assert_eq!(d.modules_dirs, [PathBuf::from("/flag-m")]);
        assert_eq!(d.global_hooks_dir, PathBuf::from("/flag-w/global-hooks"));
        assert_eq!(d.unnumbered_order, 5);
    }

    #[test]
    fn empty_env_values_are_ignored() {
        let d = resolve_with(DirFlags::default(), &[("MODULES_DIR", "")]);
        assert_eq!(d.modules_dirs, [PathBuf::from("modules")]);
    }
}
