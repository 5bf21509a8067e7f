//! `--reload-tree`: what a reload changed, as the log line and the debug API show it, and the
//! record of the last reload.

use addon_core::hook_config::HookConfig;
use addon_core::names::{HookName, ModuleName};
use addon_core::tree_diff::TreeDiff;
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
    /// The hooks that changed, by scope (the debug record shows them).
    pub hooks: Value,
}

impl TreeChanges {
    /// Nothing changed that the operator uses.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty() && !self.global
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
            return "nothing the operator uses changed".into();
        }
        parts.join("; ")
    }

    fn to_json(&self) -> Value {
        json!({
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "global": self.global,
            "hooks": self.hooks,
        })
    }
}

impl TreeChanges {
    /// The changes `diff` names, by module.
    pub fn of(diff: &TreeDiff) -> Self {
        let names = |list: &[ModuleName]| list.iter().map(ToString::to_string).collect();
        Self {
            added: names(&diff.added),
            removed: names(&diff.removed),
            changed: diff.changed.iter().map(|m| m.module.to_string()).collect(),
            global: !diff.global_hooks.is_empty() || diff.global_values,
            hooks: hooks_json(diff),
        }
    }
}

/// The hooks that changed, by scope (`global` or the module) and kind of change.
fn hooks_json(diff: &TreeDiff) -> Value {
    let mut out = serde_json::Map::new();
    let scopes = std::iter::once(("global".to_string(), &diff.global_hooks))
        .chain((diff.changed.iter()).map(|m| (m.module.to_string(), &m.hooks)));
    for (scope, hooks) in scopes.filter(|(_, h)| !h.is_empty()) {
        let list = |names: &[HookName]| names.iter().map(ToString::to_string).collect::<Vec<_>>();
        out.insert(
            scope,
            json!({
                "added": list(&hooks.added),
                "removed": list(&hooks.removed),
                "rebound": list(&hooks.rebound),
                "edited": list(&hooks.edited),
            }),
        );
    }
    Value::Object(out)
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
    use addon_core::tree_diff::{HookChanges, ModuleChanges};

    fn module(name: &str) -> ModuleName {
        ModuleName::new(name).unwrap()
    }

    #[test]
    fn added_removed_and_changed_modules_are_named_with_their_hooks() {
        let diff = TreeDiff {
            added: vec![module("c")],
            removed: vec![module("a")],
            changed: vec![ModuleChanges {
                module: module("b"),
                hooks: HookChanges {
                    rebound: vec![HookName::new("hooks/tick").unwrap()],
                    ..HookChanges::default()
                },
                enablement: false,
                files: false,
            }],
            ..TreeDiff::default()
        };
        let found = TreeChanges::of(&diff);
        assert_eq!(found.summary(), "added: c; removed: a; changed: b");
        assert!(!found.global);
        assert_eq!(
            found.to_json()["hooks"]["b"]["rebound"],
            json!(["hooks/tick"])
        );
        assert!(found.to_json()["hooks"].get("global").is_none());
    }

    #[test]
    fn an_empty_difference_says_nothing_changed() {
        let found = TreeChanges::of(&TreeDiff::default());
        assert!(found.is_empty());
        assert_eq!(found.summary(), "nothing the operator uses changed");
    }
}
