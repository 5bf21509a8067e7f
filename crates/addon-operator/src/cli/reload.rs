//! `--reload-tree`: what a reload changed, as the log line and the debug API show it, and the
//! record of the last reload.

use std::collections::BTreeMap;

use addon_core::hook_config::{AdmissionBinding, ConversionBinding};
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

/// The webhook bindings of each hook that has some (validating, mutating, conversions), by
/// module (`None`: a global hook) and hook name.
type WebhookBindings<'a> = BTreeMap<
    (Option<&'a ModuleName>, &'a HookName),
    (
        &'a [AdmissionBinding],
        &'a [AdmissionBinding],
        &'a [ConversionBinding],
    ),
>;

fn webhook_bindings(tree: &Tree) -> WebhookBindings<'_> {
    let global = tree.found.global.hooks.iter().map(|h| (None, h));
    let modules =
        (tree.found.modules.iter()).flat_map(|m| m.hooks.iter().map(|h| (Some(&m.name), h)));
    global
        .chain(modules)
        .filter_map(|(module, hook)| {
            let config = tree.configs.get(&hook.config_key())?;
            let bindings = (
                config.validating.as_slice(),
                config.mutating.as_slice(),
                config.conversions.as_slice(),
            );
            config
                .has_webhooks()
                .then_some(((module, &hook.name), bindings))
        })
        .collect()
}

/// Why `new` cannot be applied in place: its webhook bindings differ from the running tree's
/// (the webhook servers, configurations and CRD conversions are set up at start).
pub fn webhook_problem(running: &Tree, new: &Tree) -> Option<String> {
    (webhook_bindings(running) != webhook_bindings(new)).then(|| {
        "webhook bindings were added, removed or changed: they apply at the next start (--reload-tree applies a tree only while its webhook bindings stay the same)".into()
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

    fn webhook_tree(validating: &str, other: &str) -> Tree {
        use addon_core::discovery::{Discovered, HookFile, ModuleSource};
        use addon_core::hook_config::{HookScope, parse};
        let hook = |name: &str| HookFile {
            name: HookName::new(name).unwrap(),
            path: std::path::PathBuf::from(format!("/m/{name}")),
            working_dir: std::path::PathBuf::from("/m"),
            args: Vec::new(),
        };
        let (policy, plain) = (hook("policy"), hook("plain"));
        let configs = [(&policy, validating), (&plain, other)]
            .into_iter()
            .map(|(h, text)| {
                let config = parse(&h.name, HookScope::Module, text).unwrap();
                (h.config_key(), config)
            })
            .collect();
        let module = ModuleSource {
            name: module("a"),
            order: 1,
            path: "/m".into(),
            modules_dir: None,
            values_yaml: None,
            enabled_script: None,
            openapi: Default::default(),
            definition: Default::default(),
            has_chart: false,
            settings_check: None,
            hooks: vec![policy, plain],
        };
        let found = Discovered {
            modules: vec![module],
            ..Discovered::default()
        };
        Tree { found, configs }
    }

    #[test]
    fn a_tree_reloads_while_its_webhook_bindings_stay_the_same() {
        let rule = "  rules:\n  - {apiGroups: [''], apiVersions: [v1], operations: ['*'], resources: [pods]}\n";
        let webhook = |name: &str| {
            format!("configVersion: v1\nkubernetesValidating:\n- name: {name}\n{rule}")
        };
        let running = webhook_tree(
            &webhook("a.example.com"),
            "configVersion: v1\nonStartup: 1\n",
        );
        let other_hook = webhook_tree(
            &webhook("a.example.com"),
            "configVersion: v1\nonStartup: 2\n",
        );
        assert_eq!(webhook_problem(&running, &other_hook), None);
        let changed = webhook_tree(
            &webhook("b.example.com"),
            "configVersion: v1\nonStartup: 1\n",
        );
        assert!(webhook_problem(&running, &changed).is_some());
        let none = webhook_tree(
            "configVersion: v1\nonStartup: 1\n",
            "configVersion: v1\nonStartup: 1\n",
        );
        assert!(webhook_problem(&running, &none).is_some());
        assert_eq!(webhook_problem(&none, &none), None);
    }

    #[test]
    fn an_empty_difference_says_nothing_changed() {
        let found = TreeChanges::of(&TreeDiff::default());
        assert!(found.is_empty());
        assert_eq!(found.summary(), "nothing the operator uses changed");
    }
}
