//! The result of `addon-operator check` and its text and JSON renderings.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::edges::tree::configs::HookConfigs;

/// A hook and its bindings, as `check` reports them.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HookReport {
    pub name: String,
    pub bindings: Vec<String>,
}

impl HookReport {
    /// The report entry of a hook: its bindings, or none when its config was invalid.
    pub fn of(hook: &addon_core::discovery::HookFile, configs: &HookConfigs) -> Self {
        Self {
            name: hook.name.to_string(),
            bindings: configs.binding_summary(hook),
        }
    }
}

/// A module as `check` reports it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModuleReport {
    pub name: String,
    pub order: u32,
    pub path: String,
    pub values_key: String,
    pub enabled: bool,
    /// Why its `enabled` script disabled it (`$MODULE_ENABLED_REASON`), when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    pub helm: bool,
    pub hooks: Vec<HookReport>,
    /// The modules it requires (`module.yaml`), each with its constraint: `db >= 1.0`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Why an enabled module does not run (a requirement does not hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_running: Option<String>,
}

/// Everything `check` found; valid when `errors` is empty.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub global_hooks: Vec<HookReport>,
    pub modules: Vec<ModuleReport>,
    /// Merged values: `global` and one key per module.
    pub values: Map<String, Value>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

impl CheckReport {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// A summary for people.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Global hooks: {}", self.global_hooks.len());
        for hook in &self.global_hooks {
            write_hook(&mut out, hook, "  ");
        }
        let enabled = self.modules.iter().filter(|m| m.enabled).count();
        let _ = writeln!(out, "Modules: {} ({} enabled)", self.modules.len(), enabled);
        for m in &self.modules {
            let state = match (&m.not_running, &m.disabled_reason, m.enabled) {
                (Some(_), _, _) => "not running".to_string(),
                (None, _, true) => "enabled".to_string(),
                (None, Some(reason), false) => format!("disabled: {reason}"),
                (None, None, false) => "disabled".to_string(),
            };
            let helm = if m.helm { "chart" } else { "no chart" };
            let _ = writeln!(
                out,
                "  {:>3} {} [{state}, {helm}, values key {}] {}",
                m.order, m.name, m.values_key, m.path
            );
            if !m.requires.is_empty() {
                let _ = writeln!(out, "      requires: {}", m.requires.join(", "));
            }
            if let Some(reason) = &m.not_running {
                let _ = writeln!(out, "      not running: {reason}");
            }
            for hook in &m.hooks {
                write_hook(&mut out, hook, "      ");
            }
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        if self.errors.is_empty() {
            let _ = writeln!(out, "OK: the tree is valid");
        } else {
            let _ = writeln!(out, "{} error(s):", self.errors.len());
            for e in &self.errors {
                let _ = writeln!(out, "error: {e}");
            }
        }
        out
    }
}

fn write_hook(out: &mut String, hook: &HookReport, indent: &str) {
    let _ = writeln!(out, "{indent}{}: {}", hook.name, hook.bindings.join(", "));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_uses_the_documented_keys() {
        let report = CheckReport {
            global_hooks: vec![HookReport {
                name: "hooks/a".into(),
                bindings: vec!["onStartup: 1".into()],
            }],
            modules: vec![ModuleReport {
                name: "echo-server".into(),
                order: 10,
                path: "/m/010-echo-server".into(),
                values_key: "echoServer".into(),
                enabled: true,
                disabled_reason: None,
                helm: true,
                hooks: vec![],
                requires: vec![],
                not_running: None,
            }],
            ..Default::default()
        };
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["globalHooks"][0]["bindings"][0], "onStartup: 1");
        assert_eq!(v["modules"][0]["valuesKey"], "echoServer");
        assert_eq!(v["modules"][0]["helm"], true);
        assert!(v["errors"].as_array().unwrap().is_empty());
        assert!(v["values"].is_object());
    }

    #[test]
    fn a_module_its_script_disabled_shows_the_reason_in_text_and_json() {
        let report = CheckReport {
            modules: vec![ModuleReport {
                name: "web".into(),
                order: 10,
                path: "/m/010-web".into(),
                values_key: "web".into(),
                enabled: false,
                disabled_reason: Some("no nodes with label x".into()),
                helm: true,
                hooks: vec![],
                requires: vec![],
                not_running: None,
            }],
            ..Default::default()
        };
        assert!(
            (report.to_text()).contains("web [disabled: no nodes with label x, chart"),
            "{}",
            report.to_text()
        );
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["modules"][0]["disabledReason"], "no nodes with label x");
    }

    #[test]
    fn text_lists_every_error() {
        let report = CheckReport {
            errors: vec!["first".into(), "second".into()],
            ..Default::default()
        };
        let text = report.to_text();
        assert!(
            text.contains("2 error(s)")
                && text.contains("error: first")
                && text.contains("error: second")
        );
        assert!(!report.is_valid());
    }
}
