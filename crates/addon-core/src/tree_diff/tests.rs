//! Table tests of the tree difference: each case edits one copy of a small tree and names what
//! the difference must say.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;
use crate::discovery::{GlobalSource, SourceFile};
use crate::hook_config::{HookScope, parse};

/// A tree as the loader gives it: discovery, configs by hook path, digests by path.
#[derive(Clone)]
struct Fixture {
    found: Discovered,
    configs: BTreeMap<PathBuf, HookConfig>,
    digests: BTreeMap<PathBuf, String>,
}

impl Fixture {
    fn view(&self) -> TreeView<'_> {
        TreeView {
            found: &self.found,
            configs: &self.configs,
            digests: &self.digests,
        }
    }

    fn module(&mut self, name: &str) -> &mut ModuleSource {
        (self.found.modules.iter_mut())
            .find(|m| m.name.as_str() == name)
            .unwrap()
    }

    /// Sets the config of the hook at `path`.
    fn config(&mut self, path: &str, scope: HookScope, text: &str) {
        let name = HookName::new(path.rsplit('/').next().unwrap()).unwrap();
        let config = parse(&name, scope, text).unwrap();
        self.configs.insert(PathBuf::from(path), config);
    }
}

const STARTUP: &str = "configVersion: v1\nonStartup: 1\n";
const HOURLY: &str = "configVersion: v1\nschedule:\n- {crontab: \"0 * * * *\"}\n";
const MINUTELY: &str = "configVersion: v1\nschedule:\n- {crontab: \"* * * * *\"}\n";

fn hook(dir: &str, name: &str) -> HookFile {
    HookFile {
        name: HookName::new(name).unwrap(),
        path: PathBuf::from(format!("{dir}/{name}")),
        working_dir: PathBuf::from(dir),
        args: Vec::new(),
    }
}

fn module(name: &str, order: u32) -> ModuleSource {
    let path = format!("/modules/{order:03}-{name}");
    ModuleSource {
        name: ModuleName::new(name).unwrap(),
        order,
        path: PathBuf::from(&path),
        modules_dir: None,
        values_yaml: None,
        enabled_script: None,
        openapi: Default::default(),
        definition: Default::default(),
        has_chart: true,
        settings_check: None,
        hooks: vec![hook(&format!("{path}/hooks"), "startup")],
    }
}

/// Modules `alpha` and `beta` with one onStartup hook each, a global hook `sched` on a schedule.
fn base() -> Fixture {
    let mut fixture = Fixture {
        found: Discovered {
            global: GlobalSource {
                dir: PathBuf::from("/global-hooks"),
                hooks: vec![hook("/global-hooks", "sched")],
                openapi: Default::default(),
            },
            modules_values: Vec::new(),
            modules: vec![module("alpha", 1), module("beta", 2)],
            warnings: Vec::new(),
        },
        configs: BTreeMap::new(),
        digests: BTreeMap::new(),
    };
    fixture.config("/global-hooks/sched", HookScope::Global, HOURLY);
    for m in ["/modules/001-alpha", "/modules/002-beta"] {
        fixture.config(&format!("{m}/hooks/startup"), HookScope::Module, STARTUP);
        fixture.digests.insert(PathBuf::from(m), "chart-1".into());
        let hook = format!("{m}/hooks/startup");
        fixture.digests.insert(PathBuf::from(hook), "hook-1".into());
    }
    fixture
}

fn names(list: &[&str]) -> Vec<ModuleName> {
    list.iter().map(|n| ModuleName::new(n).unwrap()).collect()
}

fn hooks(list: &[&str]) -> Vec<HookName> {
    list.iter().map(|n| HookName::new(n).unwrap()).collect()
}

#[test]
fn each_edit_of_a_tree_is_named_by_module_and_hook_and_decides_converge_or_runs() {
    struct Case {
        what: &'static str,
        edit: fn(&mut Fixture),
        added: &'static [&'static str],
        removed: &'static [&'static str],
        /// (module, enablement, files, added, removed, rebound, edited hooks)
        changed: Vec<(&'static str, bool, bool, Hooks)>,
        global_hooks: Hooks,
        global_values: bool,
        converges: bool,
        runs: &'static [&'static str],
    }
    type Hooks = [&'static [&'static str]; 4];
    const NONE: Hooks = [&[], &[], &[], &[]];
    let cases = vec![
        Case {
            what: "nothing changed",
            edit: |_| {},
            added: &[],
            removed: &[],
            changed: vec![],
            global_hooks: NONE,
            global_values: false,
            converges: false,
            runs: &[],
        },
        Case {
            what: "a module directory added",
            edit: |f| f.found.modules.push(module("gamma", 3)),
            added: &["gamma"],
            removed: &[],
            changed: vec![],
            global_hooks: NONE,
            global_values: false,
            converges: true,
            runs: &[],
        },
        Case {
            what: "a module directory removed",
            edit: |f| f.found.modules.retain(|m| m.name.as_str() != "alpha"),
            added: &[],
            removed: &["alpha"],
            changed: vec![],
            global_hooks: NONE,
            global_values: false,
            converges: true,
            runs: &[],
        },
        Case {
            what: "a module.yaml's requirements changed",
            edit: |f| {
                let text = "requirements:\n  modules:\n    beta: '>= 1'\n";
                f.module("alpha").definition = crate::module_definition::parse(text).unwrap();
            },
            added: &[],
            removed: &[],
            changed: vec![("alpha", true, false, NONE)],
            global_hooks: NONE,
            global_values: false,
            converges: true,
            runs: &[],
        },
        Case {
            what: "a template edited",
            edit: |f| {
                let path = PathBuf::from("/modules/001-alpha");
                f.digests.insert(path, "chart-2".into());
            },
            added: &[],
            removed: &[],
            changed: vec![("alpha", false, true, NONE)],
            global_hooks: NONE,
            global_values: false,
            converges: false,
            runs: &["alpha"],
        },
        Case {
            what: "a hook script edited, its config the same",
            edit: |f| {
                let path = PathBuf::from("/modules/002-beta/hooks/startup");
                f.digests.insert(path, "hook-2".into());
            },
            added: &[],
            removed: &[],
            changed: vec![("beta", false, false, [&[], &[], &[], &["startup"]])],
            global_hooks: NONE,
            global_values: false,
            converges: false,
            runs: &["beta"],
        },
        Case {
            what: "a module hook's config changed",
            edit: |f| {
                f.config(
                    "/modules/001-alpha/hooks/startup",
                    HookScope::Module,
                    HOURLY,
                )
            },
            added: &[],
            removed: &[],
            changed: vec![("alpha", false, false, [&[], &[], &["startup"], &[]])],
            global_hooks: NONE,
            global_values: false,
            converges: false,
            runs: &["alpha"],
        },
        Case {
            what: "a hook added to a module and another removed",
            edit: |f| {
                let m = f.module("beta");
                m.hooks = vec![hook("/modules/002-beta/hooks", "new")];
                f.config("/modules/002-beta/hooks/new", HookScope::Module, STARTUP);
            },
            added: &[],
            removed: &[],
            changed: vec![("beta", false, false, [&["new"], &["startup"], &[], &[]])],
            global_hooks: NONE,
            global_values: false,
            converges: false,
            runs: &["beta"],
        },
        Case {
            what: "a module's values.yaml changed",
            edit: |f| {
                f.module("alpha").values_yaml = Some(SourceFile {
                    path: PathBuf::from("/modules/001-alpha/values.yaml"),
                    text: "alphaEnabled: false\n".into(),
                })
            },
            added: &[],
            removed: &[],
            changed: vec![("alpha", true, false, NONE)],
            global_hooks: NONE,
            global_values: false,
            converges: true,
            runs: &[],
        },
        Case {
            what: "an enabled script added",
            edit: |f| {
                f.module("beta").enabled_script = Some(PathBuf::from("/modules/002-beta/enabled"))
            },
            added: &[],
            removed: &[],
            changed: vec![("beta", true, false, NONE)],
            global_hooks: NONE,
            global_values: false,
            converges: true,
            runs: &[],
        },
        Case {
            what: "a module schema changed",
            edit: |f| {
                f.module("alpha").openapi.values = Some(SourceFile {
                    path: PathBuf::from("/modules/001-alpha/openapi/values.yaml"),
                    text: "type: object\n".into(),
                })
            },
            added: &[],
            removed: &[],
            changed: vec![("alpha", false, true, NONE)],
            global_hooks: NONE,
            global_values: false,
            converges: false,
            runs: &["alpha"],
        },
        Case {
            what: "a global hook's schedule changed",
            edit: |f| f.config("/global-hooks/sched", HookScope::Global, MINUTELY),
            added: &[],
            removed: &[],
            changed: vec![],
            global_hooks: [&[], &[], &["sched"], &[]],
            global_values: false,
            converges: true,
            runs: &[],
        },
        Case {
            what: "a global hook edited only",
            edit: |f| {
                f.digests
                    .insert(PathBuf::from("/global-hooks/sched"), "x".into());
            },
            added: &[],
            removed: &[],
            changed: vec![],
            global_hooks: [&[], &[], &[], &["sched"]],
            global_values: false,
            converges: true,
            runs: &[],
        },
        Case {
            what: "the modules directory's values.yaml changed",
            edit: |f| {
                f.found.modules_values = vec![SourceFile {
                    path: PathBuf::from("/modules/values.yaml"),
                    text: "global: {}\n".into(),
                }]
            },
            added: &[],
            removed: &[],
            changed: vec![],
            global_hooks: NONE,
            global_values: true,
            converges: true,
            runs: &[],
        },
    ];
    for case in cases {
        let old = base();
        let mut new = old.clone();
        (case.edit)(&mut new);
        let found = diff(old.view(), new.view());
        let what = case.what;
        assert_eq!(found.added, names(case.added), "{what}");
        assert_eq!(found.removed, names(case.removed), "{what}");
        let changed: Vec<ModuleChanges> = (case.changed.iter())
            .map(|(m, enablement, files, h)| ModuleChanges {
                module: ModuleName::new(m).unwrap(),
                hooks: hook_changes_of(h),
                enablement: *enablement,
                files: *files,
            })
            .collect();
        assert_eq!(found.changed, changed, "{what}");
        assert_eq!(
            found.global_hooks,
            hook_changes_of(&case.global_hooks),
            "{what}"
        );
        assert_eq!(found.global_values, case.global_values, "{what}");
        assert_eq!(found.converges(), case.converges, "{what}");
        assert_eq!(found.module_runs(), names(case.runs), "{what}");
        assert_eq!(found.is_empty(), what == "nothing changed", "{what}");
    }
}

fn hook_changes_of(h: &[&'static [&'static str]; 4]) -> HookChanges {
    HookChanges {
        added: hooks(h[0]),
        removed: hooks(h[1]),
        rebound: hooks(h[2]),
        edited: hooks(h[3]),
    }
}

#[test]
fn a_rebound_hook_both_stops_and_starts_and_an_edited_one_does_neither() {
    let changes = HookChanges {
        added: hooks(&["a"]),
        removed: hooks(&["r"]),
        rebound: hooks(&["b"]),
        edited: hooks(&["e"]),
    };
    let starting: Vec<&str> = changes.starting().map(HookName::as_str).collect();
    let stopping: Vec<&str> = changes.stopping().map(HookName::as_str).collect();
    assert_eq!(starting, ["a", "b"]);
    assert_eq!(stopping, ["r", "b"]);
}
