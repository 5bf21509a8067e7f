//! `--reload-tree`: what changed between the running module tree and a newly loaded one (for the
//! log line and the debug API), and the record of the last reload.

use std::collections::BTreeMap;
use std::path::PathBuf;

use addon_core::discovery::{HookFile, ModuleSource};
use addon_core::hook_config::HookConfig;
use serde_json::{Value, json};

use crate::edges::tree::runnable::Tree;

/// What a new tree changes, by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TreeChanges {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Modules whose directory, values, schemas, hooks or hook configs differ.
    pub changed: Vec<String>,
    /// The global hooks, their configs or the global values differ.
    pub global: bool,
}

impl TreeChanges {
    /// Nothing the definitions show (only files they do not hold, like templates, changed).
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// One line for the log: `added: a, b; removed: c; changed: d; global`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (what, names) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("changed", &self.changed),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what}: {}", names.join(", ")));
            }
        }
        if self.global {
            parts.push("global hooks or values changed".into());
        }
        if parts.is_empty() {
            return "files changed (charts or hook scripts); definitions unchanged".into();
        }
        parts.join("; ")
    }

    fn to_json(&self) -> Value {
        json!({
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "global": self.global,
        })
    }
}

type Configs = BTreeMap<PathBuf, HookConfig>;

/// The modules and global parts `new` adds, removes or changes compared to `old`.
pub fn changes(old: &Tree, new: &Tree) -> TreeChanges {
    let by_name = |tree: &Tree| -> BTreeMap<String, ModuleSource> {
        (tree.found.modules.iter())
            .map(|m| (m.name.to_string(), m.clone()))
            .collect()
    };
    let (before, after) = (by_name(old), by_name(new));
    let mut changes = TreeChanges::default();
    for (name, module) in &after {
        match before.get(name) {
            None => changes.added.push(name.clone()),
            Some(was) if was != module || !same_configs(&was.hooks, old, new) => {
                changes.changed.push(name.clone())
            }
            Some(_) => {}
        }
    }
    changes.removed = (before.keys())
        .filter(|name| !after.contains_key(*name))
        .cloned()
        .collect();
    changes.global =
        old.found.global != new.found.global || !same_configs(&old.found.global.hooks, old, new);
    changes
}

/// Whether the hooks `hooks` have the same configs in both trees.
fn same_configs(hooks: &[HookFile], old: &Tree, new: &Tree) -> bool {
    let config = |configs: &Configs, hook: &HookFile| configs.get(&hook.config_key()).cloned();
    (hooks.iter()).all(|hook| config(&old.configs, hook) == config(&new.configs, hook))
}

/// The debug API's record of a reload that applied.
pub fn applied_record(changes: &TreeChanges) -> Value {
    json!({ "result": "applied", "changes": changes.to_json(), "problems": [] })
}

/// The debug API's record of a reload that failed: the running tree goes on.
pub fn failed_record(problems: &[String]) -> Value {
    json!({ "result": "failed", "problems": problems })
}

/// Why a tree cannot be reloaded in place: webhook servers answer with the first runtime.
pub fn webhook_problem(tree: &Tree) -> Option<String> {
    tree.configs
        .values()
        .any(HookConfig::has_webhooks)
        .then(|| {
            "hooks with webhook bindings need a restart: --reload-tree does not reload them".into()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::discovery::Discovered;

    fn module(name: &str, order: u32) -> ModuleSource {
        ModuleSource {
            name: addon_core::names::ModuleName::new(name).expect("module name"),
            order,
            path: PathBuf::from(format!("/modules/{name}")),
            modules_dir: None,
            values_yaml: None,
            enabled_script: None,
            openapi: Default::default(),
            has_chart: true,
            hooks: Vec::new(),
        }
    }

    fn tree(modules: Vec<ModuleSource>) -> Tree {
        Tree {
            found: Discovered {
                modules,
                ..Discovered::default()
            },
            configs: BTreeMap::new(),
        }
    }

    #[test]
    fn added_removed_and_changed_modules_are_named() {
        let old = tree(vec![module("a", 1), module("b", 2)]);
        let new = tree(vec![module("b", 3), module("c", 4)]);
        let found = changes(&old, &new);
        assert_eq!(found.added, ["c"]);
        assert_eq!(found.removed, ["a"]);
        assert_eq!(found.changed, ["b"]);
        assert!(!found.global);
        assert_eq!(found.summary(), "added: c; removed: a; changed: b");
    }

    #[test]
    fn the_same_tree_changes_nothing_the_definitions_show() {
        let found = changes(&tree(vec![module("a", 1)]), &tree(vec![module("a", 1)]));
        assert!(found.is_empty());
        assert!(found.summary().contains("definitions unchanged"));
    }
}
