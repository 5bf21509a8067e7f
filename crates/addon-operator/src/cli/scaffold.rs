//! `module new` and `hook new`: a module directory (chart, values, schemas, a hook with its
//! declarative tests, an optional `enabled` script) or one hook with its test file, that pass
//! `check` and `test` as written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use addon_core::names::ModuleName;

use crate::edges::tree::dirs::{DirFlags, resolve};

/// The language of a generated hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// bash with jq
    Bash,
    /// python3, standard library only
    Python,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ModuleNewArgs {
    /// The module's name (kebab-case: lowercase words separated by dashes)
    pub name: String,
    #[command(flatten)]
    pub dirs: DirFlags,
    /// The order in the directory name (`NNN-<name>`); default: the next ten past the highest
    /// order in the modules directory
    #[arg(long)]
    pub order: Option<u32>,
    /// The language of the module's hook
    #[arg(long, value_enum, default_value = "bash")]
    pub lang: Lang,
    /// Also write an `enabled` script (and its tests)
    #[arg(long)]
    pub enabled: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct HookNewArgs {
    /// The hook's file name (letters, digits, `-`, `_`, `.`)
    pub name: String,
    /// The module (kebab-case) whose `hooks/` gets the hook; without it, a global hook
    #[arg(long)]
    pub module: Option<String>,
    #[command(flatten)]
    pub dirs: DirFlags,
    /// The language of the hook
    #[arg(long, value_enum, default_value = "bash")]
    pub lang: Lang,
}

/// A scaffold that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("'{name}' is not a module name: use lowercase words separated by dashes (my-module)")]
    ModuleName { name: String },
    #[error("'{name}' is not a hook file name: use letters, digits, '-', '_' and '.'")]
    HookName { name: String },
    #[error("module {name} already exists in {}", dir.display())]
    ModuleExists { name: String, dir: PathBuf },
    #[error("no module {name} in {}", dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoModule { name: String, dirs: Vec<PathBuf> },
    #[error("{} already exists", path.display())]
    FileExists { path: PathBuf },
    #[error("read the directory {}", path.display())]
    ReadDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ScaffoldError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::ModuleName { .. } | Self::HookName { .. } => "name",
            Self::ModuleExists { .. } | Self::FileExists { .. } => "exists",
            Self::NoModule { .. } => "no_module",
            Self::ReadDir { .. } | Self::Write { .. } => "io",
        }
    }
}

/// One file to write: its path relative to the new directory, its text, and whether it runs.
struct File {
    path: String,
    text: String,
    executable: bool,
}

fn file(path: &str, text: String, executable: bool) -> File {
    File {
        path: path.to_string(),
        text,
        executable,
    }
}

/// Fills the placeholders of a template: `__NAME__` (kebab-case), `__KEY__` (camelCase values key).
fn fill(template: &str, module: &ModuleName) -> String {
    template
        .replace("__NAME__", module.as_str())
        .replace("__KEY__", &module.values_key())
}

pub fn module_new_cli(args: &ModuleNewArgs) -> anyhow::Result<ExitCode> {
    let dir = module_new(args, &|name| std::env::var(name).ok())?;
    println!("created {}", dir.display());
    let working = args.dirs.working_dir.as_deref().unwrap_or(Path::new("."));
    let name = &args.name;
    println!(
        "next:\n  addon-operator check --working-dir {w}\n  addon-operator test --working-dir {w}\n  addon-operator module render {name} --working-dir {w}",
        w = working.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn hook_new_cli(args: &HookNewArgs) -> anyhow::Result<ExitCode> {
    let paths = hook_new(args, &|name| std::env::var(name).ok())?;
    for path in paths {
        println!("created {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the module directory; its path.
pub fn module_new(
    args: &ModuleNewArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, ScaffoldError> {
    let module = ModuleName::new(&args.name).map_err(|_| ScaffoldError::ModuleName {
        name: args.name.clone(),
    })?;
    let dirs = resolve(&args.dirs, env).modules_dirs;
    if let Some(existing) = find_module(&dirs, &module)? {
        return Err(ScaffoldError::ModuleExists {
            name: module.to_string(),
            dir: existing,
        });
    }
    let root = dirs
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("modules"));
    let order = match args.order {
        Some(order) => order,
        None => next_order(&root)?,
    };
    let dir = root.join(format!("{order:03}-{}", module.as_str()));
    let mut files = vec![
        file("Chart.yaml", fill(CHART, &module), false),
        file("templates/configmap.yaml", fill(TEMPLATE, &module), false),
        file("values.yaml", fill(VALUES, &module), false),
        file(
            "openapi/config-values.yaml",
            fill(CONFIG_SCHEMA, &module),
            false,
        ),
        file("openapi/values.yaml", fill(VALUES_SCHEMA, &module), false),
        file(
            "hooks/compute-greeting",
            fill(
                match args.lang {
                    Lang::Bash => GREETING_BASH,
                    Lang::Python => GREETING_PYTHON,
                },
                &module,
            ),
            true,
        ),
        file(
            "hooks/compute-greeting.test.yaml",
            fill(GREETING_TEST, &module),
            false,
        ),
    ];
    if args.enabled {
        files.push(file("enabled", fill(ENABLED, &module), true));
        files.push(file(
            "tests/enabled.test.yaml",
            fill(ENABLED_TEST, &module),
            false,
        ));
    }
    write_all(&dir, &files)?;
    Ok(dir)
}

/// Writes the hook and its test file; their paths.
pub fn hook_new(
    args: &HookNewArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<PathBuf>, ScaffoldError> {
    let valid = !args.name.is_empty()
        && !args.name.starts_with('.')
        && (args.name.chars()).all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !valid || args.name.ends_with(".yaml") {
        return Err(ScaffoldError::HookName {
            name: args.name.clone(),
        });
    }
    let resolved = resolve(&args.dirs, env);
    let (dir, template, test) = match &args.module {
        Some(name) => {
            let module = ModuleName::new(name)
                .map_err(|_| ScaffoldError::ModuleName { name: name.clone() })?;
            let found = find_module(&resolved.modules_dirs, &module)?.ok_or_else(|| {
                ScaffoldError::NoModule {
                    name: name.clone(),
                    dirs: resolved.modules_dirs.clone(),
                }
            })?;
            let template = match args.lang {
                Lang::Bash => MODULE_HOOK_BASH,
                Lang::Python => MODULE_HOOK_PYTHON,
            };
            (
                found.join("hooks"),
                fill(template, &module),
                MODULE_HOOK_TEST,
            )
        }
        None => {
            let template = match args.lang {
                Lang::Bash => GLOBAL_HOOK_BASH,
                Lang::Python => GLOBAL_HOOK_PYTHON,
            };
            (
                resolved.global_hooks_dir,
                template.to_string(),
                GLOBAL_HOOK_TEST,
            )
        }
    };
    let hook = &args.name;
    let test = test.replace("__HOOK__", hook);
    let files = [
        file(hook, template.replace("__HOOK__", hook), true),
        file(&format!("{hook}.test.yaml"), test, false),
    ];
    write_all(&dir, &files)?;
    Ok(files.iter().map(|f| dir.join(&f.path)).collect())
}

/// The directory of `module` in `dirs` (`NNN-<name>` or `<name>`), if there is one.
fn find_module(dirs: &[PathBuf], module: &ModuleName) -> Result<Option<PathBuf>, ScaffoldError> {
    for dir in dirs {
        for entry in entries(dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let bare = strip_order(&name).1;
            let same = ModuleName::new(bare).is_ok_and(|m| m == *module);
            if same && entry.path().is_dir() {
                return Ok(Some(entry.path()));
            }
        }
    }
    Ok(None)
}

/// The entries of `dir`; none when it does not exist.
fn entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>, ScaffoldError> {
    match std::fs::read_dir(dir) {
        Ok(read) => Ok(read.filter_map(Result::ok).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(ScaffoldError::ReadDir {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// `(order, name)` of a module directory name (`030-my-module` → `(Some(30), "my-module")`).
fn strip_order(name: &str) -> (Option<u32>, &str) {
    match name.split_once('-') {
        Some((digits, rest))
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (digits.parse().ok(), rest)
        }
        _ => (None, name),
    }
}

/// The next multiple of ten past the highest order in `dir` (10 in an empty one).
fn next_order(dir: &Path) -> Result<u32, ScaffoldError> {
    let highest = entries(dir)?
        .iter()
        .filter_map(|e| strip_order(&e.file_name().to_string_lossy()).0)
        .max();
    Ok(highest.map_or(10, |h| (h / 10 + 1) * 10))
}

/// Writes `files` under `dir`, none when one of them exists already.
fn write_all(dir: &Path, files: &[File]) -> Result<(), ScaffoldError> {
    if let Some(existing) = files.iter().map(|f| dir.join(&f.path)).find(|p| p.exists()) {
        return Err(ScaffoldError::FileExists { path: existing });
    }
    for f in files {
        let path = dir.join(&f.path);
        let written = (path.parent().map_or(Ok(()), std::fs::create_dir_all))
            .and_then(|()| std::fs::write(&path, &f.text))
            .and_then(|()| {
                use std::os::unix::fs::PermissionsExt;
                let mode = if f.executable { 0o755 } else { 0o644 };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            });
        written.map_err(|source| ScaffoldError::Write { path, source })?;
    }
    Ok(())
}

const CHART: &str = "apiVersion: v2
name: __NAME__
description: The __NAME__ module of addon-operator
version: 0.1.0
";

const TEMPLATE: &str = r#"# Helm gets the module's values as .Values.__KEY__ (config values, defaults and what hooks
# computed) and the global ones as .Values.global; `addon-operator module render __NAME__` shows
# what this renders to.
apiVersion: v1
kind: ConfigMap
metadata:
  name: __NAME__
data:
  greeting: {{ .Values.__KEY__.internal.greeting | quote }}
"#;

const VALUES: &str =
    "# Static values of the module: the lowest layer, under the config (the ConfigMap or
# --config-file). __KEY__Enabled turns the module on or off.
__KEY__Enabled: true
__KEY__:
  message: hello from __NAME__
";

const CONFIG_SCHEMA: &str =
    "# What the config may set under __KEY__ (checked at every change; a property that is not
# listed is refused).
type: object
properties:
  message:
    type: string
";

const VALUES_SCHEMA: &str =
    "# The module's values as hooks and Helm get them: the config values (x-extend) and what the
# hooks compute under `internal` (Helm does not run until hooks have set it).
x-extend:
  schema: config-values.yaml
type: object
x-required-for-helm: [internal]
properties:
  internal:
    type: object
    properties:
      greeting: {type: string}
";

const GREETING_BASH: &str = r#"#!/usr/bin/env bash
# Before Helm: computes __KEY__.internal.greeting from the configured message and hands it to
# the chart (a JSON patch of the module's values). Try it with
#   addon-operator hook run hooks/compute-greeting --module __NAME__ --binding beforeHelm
# and see compute-greeting.test.yaml for what it should do (`addon-operator test`).
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<'EOF'
configVersion: v1
beforeHelm: 10
EOF
  exit 0
fi
message=$(jq -r '.__KEY__.message' "$VALUES_PATH")
jq -n --arg greeting "$message!" \
  '[{"op": "add", "path": "/__KEY__/internal", "value": {"greeting": $greeting}}]' \
  > "$VALUES_JSON_PATCH_PATH"
"#;

const GREETING_PYTHON: &str = r#"#!/usr/bin/env python3
"""Before Helm: computes __KEY__.internal.greeting from the configured message and hands it to
the chart (a JSON patch of the module's values). Try it with
  addon-operator hook run hooks/compute-greeting --module __NAME__ --binding beforeHelm
and see compute-greeting.test.yaml for what it should do (`addon-operator test`)."""
import json
import os
import sys

if sys.argv[1:] == ["--config"]:
    print(json.dumps({"configVersion": "v1", "beforeHelm": 10}))
    sys.exit(0)

with open(os.environ["VALUES_PATH"]) as f:
    values = json.load(f)
greeting = values["__KEY__"]["message"] + "!"
patch = [{"op": "add", "path": "/__KEY__/internal", "value": {"greeting": greeting}}]
with open(os.environ["VALUES_JSON_PATCH_PATH"], "w") as f:
    json.dump(patch, f)
"#;

const GREETING_TEST: &str = r#"# Tests of hooks/compute-greeting: `addon-operator test` runs them as the operator would run the
# hook (docs/authoring.md, "Test your hooks").
cases:
- name: the greeting is the message of values.yaml
  binding: beforeHelm
  expect:
    values:
      __KEY__:
        internal: {greeting: "hello from __NAME__!"}
- name: the greeting follows the config
  binding: beforeHelm
  configValues:
    __KEY__: {message: hi}
  expect:
    valuesPatch:
    - {op: add, path: /__KEY__/internal, value: {greeting: "hi!"}}
"#;

const ENABLED: &str = r#"#!/usr/bin/env bash
# Enabled script: runs at every discovery, after __KEY__Enabled said yes, and answers true or
# false in $MODULE_ENABLED_RESULT. Here: the module is on while its message is not empty.
set -euo pipefail
message=$(jq -r '.__KEY__.message // ""' "$VALUES_PATH")
if [[ -n "$message" ]]; then
  echo true > "$MODULE_ENABLED_RESULT"
else
  echo false > "$MODULE_ENABLED_RESULT"
fi
"#;

const ENABLED_TEST: &str = r#"# Tests of the module's enabled script (`addon-operator test`).
cases:
- name: enabled with a message
  enabledScript: true
  expect:
    enabled: true
- name: disabled without a message
  enabledScript: true
  configValues:
    __KEY__: {message: ""}
  expect:
    enabled: false
"#;

const MODULE_HOOK_BASH: &str = r#"#!/usr/bin/env bash
# A hook of module __NAME__. --config prints its bindings (docs/hooks.md); a run reads
# $BINDING_CONTEXT_PATH and $VALUES_PATH and may write JSON patches to $VALUES_JSON_PATCH_PATH.
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<'EOF'
configVersion: v1
beforeHelm: 20
EOF
  exit 0
fi
binding=$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")
echo "__HOOK__: $binding"
"#;

const MODULE_HOOK_PYTHON: &str = r#"#!/usr/bin/env python3
"""A hook of module __NAME__. --config prints its bindings (docs/hooks.md); a run reads
$BINDING_CONTEXT_PATH and $VALUES_PATH and may write JSON patches to $VALUES_JSON_PATCH_PATH."""
import json
import os
import sys

if sys.argv[1:] == ["--config"]:
    print(json.dumps({"configVersion": "v1", "beforeHelm": 20}))
    sys.exit(0)

with open(os.environ["BINDING_CONTEXT_PATH"]) as f:
    contexts = json.load(f)
print("__HOOK__:", contexts[0]["binding"])
"#;

const GLOBAL_HOOK_BASH: &str = r#"#!/usr/bin/env bash
# A global hook. --config prints its bindings (docs/hooks.md); a run reads $BINDING_CONTEXT_PATH
# and $VALUES_PATH and may write JSON patches of the global values to $VALUES_JSON_PATCH_PATH.
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<'EOF'
configVersion: v1
onStartup: 10
EOF
  exit 0
fi
binding=$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")
echo "__HOOK__: $binding"
"#;

const GLOBAL_HOOK_PYTHON: &str = r#"#!/usr/bin/env python3
"""A global hook. --config prints its bindings (docs/hooks.md); a run reads $BINDING_CONTEXT_PATH
and $VALUES_PATH and may write JSON patches of the global values to $VALUES_JSON_PATCH_PATH."""
import json
import os
import sys

if sys.argv[1:] == ["--config"]:
    print(json.dumps({"configVersion": "v1", "onStartup": 10}))
    sys.exit(0)

with open(os.environ["BINDING_CONTEXT_PATH"]) as f:
    contexts = json.load(f)
print("__HOOK__:", contexts[0]["binding"])
"#;

const MODULE_HOOK_TEST: &str = r#"# Tests of hooks/__HOOK__ (`addon-operator test`; docs/authoring.md, "Test your hooks").
cases:
- name: before Helm it changes nothing
  binding: beforeHelm
  expect:
    unchanged: true
"#;

const GLOBAL_HOOK_TEST: &str = r#"# Tests of __HOOK__ (`addon-operator test`; docs/authoring.md, "Test your hooks").
cases:
- name: at startup it changes nothing
  binding: onStartup
  expect:
    unchanged: true
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn module_args(root: &Path, name: &str) -> ModuleNewArgs {
        ModuleNewArgs {
            name: name.to_string(),
            dirs: DirFlags {
                working_dir: Some(root.to_path_buf()),
                ..DirFlags::default()
            },
            order: None,
            lang: Lang::Bash,
            enabled: false,
        }
    }

    #[test]
    fn a_new_module_comes_ten_past_the_highest_order() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("modules/025-other")).unwrap();
        let dir = module_new(&module_args(tmp.path(), "my-module"), &no_env).unwrap();
        assert_eq!(dir, tmp.path().join("modules/030-my-module"));
        let values = std::fs::read_to_string(dir.join("values.yaml")).unwrap();
        assert!(values.contains("myModuleEnabled: true"), "{values}");
        assert!(!dir.join("enabled").exists());
    }

    #[test]
    fn an_existing_module_or_a_bad_name_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("modules/my-module")).unwrap();
        let exists = module_new(&module_args(tmp.path(), "my-module"), &no_env).unwrap_err();
        assert_eq!(exists.category(), "exists", "{exists}");
        let bad = module_new(&module_args(tmp.path(), "My_Module"), &no_env).unwrap_err();
        assert_eq!(bad.category(), "name", "{bad}");
    }

    #[test]
    fn orders_are_read_from_directory_names() {
        assert_eq!(strip_order("030-my-module"), (Some(30), "my-module"));
        assert_eq!(strip_order("my-module"), (None, "my-module"));
        assert_eq!(strip_order("x1-a"), (None, "x1-a"));
    }

    #[test]
    fn a_hook_name_with_a_slash_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let args = HookNewArgs {
            name: "../escape".to_string(),
            module: None,
            dirs: DirFlags {
                working_dir: Some(tmp.path().to_path_buf()),
                ..DirFlags::default()
            },
            lang: Lang::Bash,
        };
        let err = hook_new(&args, &no_env).unwrap_err();
        assert_eq!(err.category(), "name", "{err}");
    }
}
