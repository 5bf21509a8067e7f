//! Table tests of the lifecycle decisions: one row per step of the seeds' LIFECYCLE-STEPS
//! (1–16) and outcome, with the expected queue edits, tasks and state changes.

use std::path::PathBuf;

use super::*;
use crate::binding_context::{ContextBuilder, Snapshots};
use crate::discovery::HookFile;
use crate::hook_config::{BindingType, HookScope, WatchEvent, parse};
use crate::names::HookName;
use crate::queue::{Backoff, QueueTask};
use crate::values::config::ConfigChange;

fn m(name: &str) -> ModuleName {
    ModuleName::new(name).unwrap()
}

fn mods(names: &[&str]) -> Vec<ModuleName> {
    names.iter().map(|n| m(n)).collect()
}

fn hook(name: &str, yaml: &str) -> HookDef {
    let name = HookName::new(name).unwrap();
    HookDef {
        config: parse(&name, HookScope::Global, yaml).unwrap().into(),
        file: HookFile {
            path: PathBuf::from(name.as_str()),
            working_dir: PathBuf::from("global-hooks"),
            args: Vec::new(),
            name,
        }
        .into(),
    }
}

/// Global hooks: onStartup with ORDER 10 and 5 (run 5 first), two hooks with kubernetes
/// bindings (started by name), beforeAll/afterAll with ORDER.
fn global_hooks() -> Vec<HookDef> {
    let kube = "kubernetes:\n- name: pods\n  apiVersion: v1\n  kind: Pod\n";
    vec![
        hook("startup-a.sh", "configVersion: v1\nonStartup: 10\n"),
        hook("startup-b.sh", "configVersion: v1\nonStartup: 5\n"),
        hook("watch-z.sh", &format!("configVersion: v1\n{kube}")),
        hook(
            "watch-a.sh",
            &format!("configVersion: v1\nbeforeAll: 2\nafterAll: 1\n{kube}"),
        ),
        hook("prepare.sh", "configVersion: v1\nbeforeAll: 1\n"),
        hook(
            "every-minute.sh",
            "configVersion: v1\nschedule:\n- name: tick\n  crontab: '* * * * *'\n  queue: cron\n",
        ),
    ]
}

fn hook_named(name: &str) -> HookDef {
    global_hooks()
        .into_iter()
        .find(|h| h.name().as_str() == name)
        .unwrap()
}

/// The queues: `tasks` in `main`.
fn queues(tasks: Vec<Task>) -> QueueSet<Task> {
    let mut set = QueueSet::new(Backoff::default());
    for task in tasks {
        set.push_back(&QueueName::main(), task).unwrap();
    }
    set
}

/// Decides with a view of `enabled` modules, whether the first converge finished, and `main`.
fn with_view(
    enabled: &[&str],
    first_converge_done: bool,
    main: Vec<Task>,
    decide: impl FnOnce(View<'_>) -> Decision,
) -> Decision {
    let enabled = mods(enabled);
    let queues = queues(main);
    decide(View {
        enabled: &enabled,
        first_converge_done,
        queues: &queues,
    })
}

fn run(module: &str) -> Task {
    Task::ModuleRun {
        module: m(module),
        startup: false,
        reason: "converge",
    }
}

fn changed(values: bool, flags: bool) -> HookEffect {
    HookEffect {
        values_changed: values,
        enabled_changed: flags,
    }
}

/// The decision as lines: edits, head tasks, tail tasks (with their queue), changes; module
/// lists as `[a, b]`.
fn lines(decision: &Decision) -> Vec<String> {
    let edits = decision.edits.iter().map(|e| match e {
        QueueEdit::DropRunsOf(modules) => format!("edit DropRunsOf {}", list(modules)),
        other => format!("edit {other:?}"),
    });
    let head = decision
        .head
        .iter()
        .map(|t| format!("head {}", t.description()));
    let tail = (decision.tail.iter()).map(|(q, t)| format!("tail {q} {}", t.description()));
    let changes = decision.changes.iter().map(|c| match c {
        Change::Enabled(modules) => format!("change Enabled {}", list(modules)),
        Change::ModuleStarted(module) => format!("change ModuleStarted {module}"),
        Change::ModuleStopped(module) => format!("change ModuleStopped {module}"),
        other => format!("change {other:?}"),
    });
    edits.chain(head).chain(tail).chain(changes).collect()
}

fn list(modules: &[ModuleName]) -> String {
    let names: Vec<&str> = modules.iter().map(ModuleName::as_str).collect();
    format!("[{}]", names.join(", "))
}

struct Row {
    step: &'static str,
    decide: fn() -> Decision,
    expected: &'static [&'static str],
}

fn check(rows: &[Row]) {
    let mut failed = Vec::new();
    for row in rows {
        let got = lines(&(row.decide)());
        if got != row.expected {
            failed.push(format!(
                "{}\n  expected: {:#?}\n  got: {got:#?}",
                row.step, row.expected
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn startup_steps_1_and_2() {
    check(&[
        Row {
            step: "1+2: startup queues onStartup by ORDER, kubernetes starts by name, a converge",
            decide: || startup(&global_hooks()),
            expected: &[
                "tail main GlobalHookRun:onStartup:startup-b.sh:onStartup",
                "tail main GlobalHookRun:onStartup:startup-a.sh:onStartup",
                "tail main GlobalHookEnableKubernetesBindings:watch-a.sh",
                "tail main GlobalHookEnableKubernetesBindings:watch-z.sh",
                "tail main ConvergeModules:startup",
                "change GlobalSchedulesStarted",
            ],
        },
        Row {
            step: "1: an onStartup run that changed values triggers nothing",
            decide: || {
                with_view(&[], false, vec![], |v| {
                    hook_finished(v, Origin::Lifecycle, None, changed(true, true))
                })
            },
            expected: &[],
        },
        Row {
            step: "2: a global Synchronization run that changed values triggers nothing",
            decide: || {
                with_view(&[], true, vec![], |v| {
                    hook_finished(v, Origin::Lifecycle, None, changed(true, false))
                })
            },
            expected: &[],
        },
    ]);
}

/// The Synchronization of `watch-a.sh`'s binding with `extra` binding fields (global, or of
/// `module`), queued as step 2 queues it.
fn synchronization(extra: &str, module: Option<&str>) -> Decision {
    let yaml = format!("configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n{extra}");
    let def = hook("watch-a.sh", &yaml);
    let binding = &def.config.kubernetes[0];
    if !synchronization_runs(binding) {
        return Decision::nothing();
    }
    let snapshots = Snapshots::new();
    let context = ContextBuilder::new(&def.config, &snapshots).synchronization(binding, &[]);
    let run = synchronization_run(module.map(m), def.name().clone(), binding, context);
    global_kubernetes_enabled(vec![run])
}

#[test]
fn kubernetes_synchronization_steps_2_and_5() {
    check(&[
        Row {
            step: "2: a global binding's Synchronization runs the hook at the head of main",
            decide: || synchronization("", None),
            expected: &["head GlobalHookRun:kubernetes:watch-a.sh:pods"],
        },
        Row {
            step: "2: executeHookOnSynchronization: false loads the objects without a run",
            decide: || synchronization("  executeHookOnSynchronization: false\n", None),
            expected: &[],
        },
        Row {
            step: "5: a module binding's Synchronization is a lifecycle run of the module hook",
            decide: || {
                let mut decision = synchronization("  allowFailure: true\n", Some("a"));
                let lifecycle_run = matches!(
                    decision.head.first(),
                    Some(Task::Hook(h)) if h.origin == Origin::Lifecycle && h.allow_failure
                );
                decision.head.retain(|_| lifecycle_run);
                decision
            },
            expected: &["head ModuleHookRun:kubernetes:a:watch-a.sh:pods"],
        },
    ]);
    let v0 = "onKubernetesEvent:\n- kind: Pod\n";
    let def = hook("legacy.sh", v0);
    assert!(
        !synchronization_runs(&def.config.kubernetes[0]),
        "2: v0 bindings never run on Synchronization"
    );
}

#[test]
fn reload_all_modules_steps_3_and_4() {
    check(&[
        Row {
            step: "3: a converge drops waiting converges, runs beforeAll by ORDER, then discovery",
            decide: || start_converge(&global_hooks()),
            expected: &[
                "edit DropQueuedConverges",
                "head GlobalHookRun:beforeAll:prepare.sh:beforeAll",
                "head GlobalHookRun:beforeAll:watch-a.sh:beforeAll",
                "head DiscoverModules",
                "change ConvergeStarted",
            ],
        },
        Row {
            step: "3: a beforeAll run that changed values triggers nothing",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    hook_finished(v, Origin::Lifecycle, None, changed(true, true))
                })
            },
            expected: &[],
        },
        Row {
            step: "4: discovery records the enabled modules and runs them in module order",
            decide: || discover(&["a", "b", "c"], &["c", "a"], &[], &["a", "c"], &[]),
            expected: &[
                "head ModuleRun:c:converge",
                "head ModuleRun:a:converge",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [c, a]",
            ],
        },
    ]);
}

/// Discovery with every module of `order`, the `enabled` ones, the Helm `releases`, the modules
/// enabled and started before, after the startup purge (the first discovery's rows set it).
fn discover(
    order: &[&str],
    enabled: &[&str],
    releases: &[&str],
    before: &[&str],
    kept: &[&str],
) -> Decision {
    discover_with(order, enabled, releases, before, kept, true)
}

fn discover_with(
    order: &[&str],
    enabled: &[&str],
    releases: &[&str],
    before: &[&str],
    kept: &[&str],
    startup_purge_done: bool,
) -> Decision {
    // each module has an ORDER of its own: no two run side by side
    let orders: Vec<u32> = (1..=order.len() as u32).collect();
    discover_in_lanes(
        order,
        &orders,
        enabled,
        releases,
        before,
        kept,
        startup_purge_done,
        4,
    )
}

#[allow(clippy::too_many_arguments)]
fn discover_in_lanes(
    order: &[&str],
    orders: &[u32],
    enabled: &[&str],
    releases: &[&str],
    before: &[&str],
    kept: &[&str],
    startup_purge_done: bool,
    lanes: usize,
) -> Decision {
    let strings = |names: &[&str]| -> Vec<String> { names.iter().map(|n| n.to_string()).collect() };
    let (order, enabled, before) = (mods(order), mods(enabled), mods(before));
    let (releases, kept) = (strings(releases), strings(kept));
    let found = Discovered {
        module_order: &order,
        orders,
        enabled: &enabled,
        requires: &[],
        releases: &releases,
        kept_releases: &kept,
    };
    let facts = ConvergeFacts {
        previously_enabled: &before,
        started: &before,
        startup_purge_done,
        global_checksum: "sum-before-afterAll",
        parallel_module_runs: lanes,
    };
    discovered(found, facts, &global_hooks())
}

#[test]
fn module_run_step_5() {
    check(&[
        Row {
            step: "5: a newly enabled module runs with onStartup; a running one without",
            decide: || discover(&["a", "b"], &["a", "b"], &["a"], &["a"], &[]),
            expected: &[
                "head ModuleRun:a:converge",
                "head ModuleRun:b:startup:converge",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [a, b]",
            ],
        },
        Row {
            step: "5: a module run finished: the module is started, nothing more",
            decide: || module_run_finished(&m("a"), false, false),
            expected: &["change ModuleStarted a"],
        },
        Row {
            step: "5: afterHelm changed the module's values: 'module run' again from the tail",
            decide: || module_run_finished(&m("a"), true, false),
            expected: &[
                "tail main ModuleRun:a:afterHelm hooks changed module values",
                "change ModuleStarted a",
            ],
        },
        Row {
            step: "5: module hooks of a run (onStartup, beforeHelm, afterHelm) trigger nothing",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    hook_finished(v, Origin::Lifecycle, Some(&m("a")), changed(true, false))
                })
            },
            expected: &[],
        },
    ]);
}

#[test]
fn module_run_phases_of_step_5() {
    use RunPhase::*;
    let all = [
        EnsureCrds,
        OnStartup,
        Synchronize,
        StartSchedules,
        BeforeHelm,
        Helm,
        AfterHelm,
    ];
    /// step, enabled, startup, has a chart, the phases
    type PhaseRow<'a> = (&'a str, bool, bool, bool, Option<&'a [RunPhase]>);
    let rows: [PhaseRow<'_>; 4] = [
        ("5: startup run with a chart", true, true, true, Some(&all)),
        (
            "5: run without onStartup and Synchronization (steps 14, 15, 16)",
            true,
            false,
            true,
            Some(&[EnsureCrds, BeforeHelm, Helm, AfterHelm]),
        ),
        (
            "5: a module without a chart has no Helm phase",
            true,
            false,
            false,
            Some(&[EnsureCrds, BeforeHelm, AfterHelm]),
        ),
        (
            "5: a module disabled by now is skipped",
            false,
            true,
            true,
            None,
        ),
    ];
    for (step, enabled, startup, chart, expected) in rows {
        let got = module_run_phases(enabled, startup, chart);
        assert_eq!(got.as_deref(), expected, "{step}");
    }
}

#[test]
fn module_delete_and_purge_steps_6_and_7() {
    check(&[
        Row {
            step: "6: modules disabled now are deleted first, in reverse module order",
            decide: || discover(&["a", "b", "c"], &["b"], &[], &["a", "b", "c"], &[]),
            expected: &[
                "head ModuleDelete:c",
                "head ModuleDelete:a",
                "head ModuleRun:b:converge",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [b]",
            ],
        },
        Row {
            step: "6: a disabled module that was never enabled but has a release is deleted",
            decide: || discover(&["a"], &[], &["a"], &[], &[]),
            expected: &[
                "head ModuleDelete:a",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled []",
            ],
        },
        Row {
            step: "6: a module delete finished: the module stops",
            decide: || module_delete_finished(&m("a")),
            expected: &["change ModuleStopped a"],
        },
        Row {
            step: "7: the first discovery purges releases without a module, except kept ones",
            decide: || discover_with(&["a"], &["a"], &["a", "old", "own"], &[], &["own"], false),
            expected: &[
                "head ModuleRun:a:startup:converge",
                "head ModulePurge:old",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [a]",
                "change StartupPurgeDone",
            ],
        },
        Row {
            step: "7: later discoveries purge nothing",
            decide: || discover(&["a"], &["a"], &["a", "old"], &["a"], &[]),
            expected: &[
                "head ModuleRun:a:converge",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [a]",
            ],
        },
    ]);
    let phases = [
        (
            true,
            vec![
                DeletePhase::BeforeDeleteHelm,
                DeletePhase::Uninstall,
                DeletePhase::AfterDeleteHelm,
            ],
        ),
        (false, vec![DeletePhase::AfterDeleteHelm]),
    ];
    for (release_exists, expected) in phases {
        assert_eq!(
            module_delete_phases(release_exists),
            expected,
            "6: release {release_exists}"
        );
    }
}

#[test]
fn after_all_step_8() {
    check(&[
        Row {
            step: "8: afterAll changed global values: 'reload all modules' again at once",
            decide: || converge_done("sum-1", "sum-2", true),
            expected: &["head ConvergeModules:afterAll hooks changed global values"],
        },
        Row {
            step: "8: the first converge finished unchanged (operator startup)",
            decide: || converge_done("sum-1", "sum-1", false),
            expected: &["change ConvergeFinished { activation: \"OperatorStartup\" }"],
        },
        Row {
            step: "8: a later converge finished unchanged",
            decide: || converge_done("sum-1", "sum-1", true),
            expected: &["change ConvergeFinished { activation: \"ReloadAllModules\" }"],
        },
        Row {
            step: "8: an afterAll run that changed values triggers nothing by itself",
            decide: || {
                with_view(&[], true, vec![], |v| {
                    hook_finished(v, Origin::Lifecycle, None, changed(true, true))
                })
            },
            expected: &[],
        },
    ]);
}

/// A watch event (`Added`) of `watch-a.sh` (global, or of `module`) for a binding into `queue`
/// that executes on `executes_on`, Synchronization done or not.
fn kube_event(
    synced: bool,
    executes_on: &[WatchEvent],
    module: Option<&str>,
    queue: &str,
) -> Decision {
    if !watch_event_runs(synced, executes_on, WatchEvent::Added) {
        return Decision::nothing();
    }
    let def = hook_named("watch-a.sh");
    let binding = &def.config.kubernetes[0];
    let item = crate::binding_context::ObjectAndFilterResult::new(
        serde_json::json!({"kind": "Pod", "metadata": {"name": "p"}}),
        None,
    );
    let snapshots = Snapshots::new();
    let context =
        ContextBuilder::new(&def.config, &snapshots).event(binding, WatchEvent::Added, &item);
    event_run(EventRun {
        module: module.map(m),
        hook: def.name().clone(),
        binding: BindingType::Kubernetes,
        context,
        allow_failure: false,
        queue: QueueName::new(queue).unwrap(),
    })
}

/// A schedule tick of `every-minute.sh` (global, or of `module`), before or after the first
/// converge finished.
fn schedule_tick(first_converge_done: bool, module: Option<&str>) -> Decision {
    if !schedule_tick_runs(first_converge_done) {
        return Decision::nothing();
    }
    let def = hook_named("every-minute.sh");
    let binding = &def.config.schedules[0];
    let snapshots = Snapshots::new();
    event_run(EventRun {
        module: module.map(m),
        hook: def.name().clone(),
        binding: BindingType::Schedule,
        context: ContextBuilder::new(&def.config, &snapshots).schedule(binding),
        allow_failure: binding.allow_failure,
        queue: binding.queue.clone(),
    })
}

#[test]
fn kubernetes_events_steps_9_and_10() {
    check(&[
        Row {
            step: "9: a global kubernetes event runs the hook at the tail of its binding's queue",
            decide: || kube_event(true, &WatchEvent::ALL, None, "main"),
            expected: &["tail main GlobalHookRun:kubernetes:watch-a.sh:pods"],
        },
        Row {
            step: "9: an event before the binding's Synchronization ran runs nothing",
            decide: || kube_event(false, &WatchEvent::ALL, None, "main"),
            expected: &[],
        },
        Row {
            step: "9: an event type the binding does not execute on runs nothing",
            decide: || kube_event(true, &[WatchEvent::Modified], None, "main"),
            expected: &[],
        },
        Row {
            step: "9: a global event run changed global values: 'global values changed'",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    hook_finished(v, Origin::Event, None, changed(true, false))
                })
            },
            expected: &["tail main ConvergeModules:global values changed"],
        },
        Row {
            step: "9: a global event run changed only *Enabled flags: 'global values changed'",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    hook_finished(v, Origin::Event, None, changed(false, true))
                })
            },
            expected: &["tail main ConvergeModules:global values changed"],
        },
        Row {
            step: "9: before the first converge finished, a global values change queues nothing",
            decide: || {
                with_view(&[], false, vec![], |v| {
                    hook_finished(v, Origin::Event, None, changed(true, true))
                })
            },
            expected: &[],
        },
        Row {
            step: "10: a module kubernetes event runs the module hook in its binding's queue",
            decide: || kube_event(true, &WatchEvent::ALL, Some("a"), "watchers"),
            expected: &["tail watchers ModuleHookRun:kubernetes:a:watch-a.sh:pods"],
        },
        Row {
            step: "10: a module event run changed its values: 'module values changed'",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    hook_finished(v, Origin::Event, Some(&m("a")), changed(true, false))
                })
            },
            expected: &["tail main ModuleRun:a:module values changed"],
        },
        Row {
            step: "10: a module event run that changed nothing queues nothing",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    hook_finished(v, Origin::Event, Some(&m("a")), changed(false, false))
                })
            },
            expected: &[],
        },
    ]);
}

#[test]
fn schedules_steps_11_and_12() {
    check(&[
        Row {
            step: "11: a global schedule tick runs the hook at the tail of its binding's queue",
            decide: || schedule_tick(true, None),
            expected: &["tail cron GlobalHookRun:schedule:every-minute.sh:tick"],
        },
        Row {
            step: "11: a tick before the first converge finished runs nothing",
            decide: || schedule_tick(false, None),
            expected: &[],
        },
        Row {
            step: "11: a global schedule run changed *Enabled flags: 'global values changed'",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    hook_finished(v, Origin::Event, None, changed(false, true))
                })
            },
            expected: &["tail main ConvergeModules:global values changed"],
        },
        Row {
            step: "12: a module schedule tick runs the module hook",
            decide: || schedule_tick(true, Some("a")),
            expected: &["tail cron ModuleHookRun:schedule:a:every-minute.sh:tick"],
        },
        Row {
            step: "12: a module schedule run changed its values: 'module values changed'",
            decide: || {
                with_view(&["a", "b"], true, vec![], |v| {
                    hook_finished(v, Origin::Event, Some(&m("b")), changed(true, false))
                })
            },
            expected: &["tail main ModuleRun:b:module values changed"],
        },
    ]);
}

#[test]
fn values_changed_steps_13_and_14() {
    check(&[
        Row {
            step: "13: 'global values changed' while a converge waits in main queues no second",
            decide: || {
                let waiting = Task::Converge {
                    reason: "config changed",
                };
                with_view(&["a"], true, vec![waiting], |v| {
                    hook_finished(v, Origin::Event, None, changed(true, false))
                })
            },
            expected: &[],
        },
        Row {
            step: "13: 'global values changed' queues 'reload all modules' behind a waiting run",
            decide: || {
                with_view(&["a"], true, vec![run("a")], |v| {
                    hook_finished(v, Origin::Event, None, changed(true, false))
                })
            },
            expected: &["tail main ConvergeModules:global values changed"],
        },
        Row {
            step: "14: 'module values changed' while a run of the module waits queues no second",
            decide: || {
                with_view(&["a"], true, vec![run("a")], |v| {
                    hook_finished(v, Origin::Event, Some(&m("a")), changed(true, false))
                })
            },
            expected: &[],
        },
        Row {
            step: "14: 'module values changed' of a disabled module queues nothing",
            decide: || {
                with_view(&["b"], true, vec![], |v| {
                    hook_finished(v, Origin::Event, Some(&m("a")), changed(true, false))
                })
            },
            expected: &[],
        },
    ]);
}

#[test]
fn resources_absent_step_15() {
    check(&[
        Row {
            step: "15: 'helm resources absent' runs the module (without onStartup)",
            decide: || with_view(&["a"], true, vec![], |v| resources_absent(v, &m("a"))),
            expected: &["tail main ModuleRun:a:helm resources absent"],
        },
        Row {
            step: "15: a run of the module already waits: nothing more",
            decide: || {
                with_view(&["a"], true, vec![run("a")], |v| {
                    resources_absent(v, &m("a"))
                })
            },
            expected: &[],
        },
        Row {
            step: "15: a module disabled meanwhile is not run",
            decide: || with_view(&[], true, vec![], |v| resources_absent(v, &m("a"))),
            expected: &[],
        },
    ]);
}

fn edit(global: bool, flags: &[&str], sections: &[&str]) -> ConfigChange {
    ConfigChange {
        global_changed: global,
        enabled_changed: mods(flags),
        modules_changed: mods(sections),
    }
}

#[test]
fn config_edit_step_16() {
    check(&[
        Row {
            step: "16: the global section changed: drop disabled modules' runs, reload all",
            decide: || {
                with_view(&["a", "b"], true, vec![run("b")], |v| {
                    config_edited(v, &edit(true, &[], &["a"]), &mods(&["c"]))
                })
            },
            expected: &[
                "edit CancelMainRetryDelay",
                "edit DropRunsOf [c]",
                "edit DropConvergeSteps",
                "tail main ConvergeModules:config changed",
            ],
        },
        Row {
            step: "16: an *Enabled flag changed: reload all modules",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    config_edited(v, &edit(false, &["b"], &[]), &mods(&["a"]))
                })
            },
            expected: &[
                "edit CancelMainRetryDelay",
                "edit DropRunsOf [a]",
                "edit DropConvergeSteps",
                "tail main ConvergeModules:config changed",
            ],
        },
        Row {
            step: "16: a converge already waits: the edit queues no second one",
            decide: || {
                let waiting = Task::Converge { reason: "startup" };
                with_view(&["a"], false, vec![waiting], |v| {
                    config_edited(v, &edit(true, &[], &[]), &[])
                })
            },
            expected: &[
                "edit CancelMainRetryDelay",
                "edit DropRunsOf []",
                "edit DropConvergeSteps",
            ],
        },
        Row {
            step: "16: only module sections changed: run each enabled module not yet queued",
            decide: || {
                with_view(&["a", "b", "c"], true, vec![run("c")], |v| {
                    config_edited(v, &edit(false, &[], &["a", "c", "d"]), &[])
                })
            },
            expected: &[
                "edit CancelMainRetryDelay",
                "tail main ModuleRun:a:config changed",
            ],
        },
        Row {
            step: "16: an edit that changes nothing does nothing",
            decide: || {
                with_view(&["a"], true, vec![], |v| {
                    config_edited(v, &edit(false, &[], &[]), &[])
                })
            },
            expected: &[],
        },
    ]);
}

#[test]
fn config_edit_drops_the_pending_steps_of_a_converge_but_keeps_deletes() {
    let before_all = start_converge(&global_hooks()).head.remove(0);
    let hook_of = |module: &str| {
        Task::Hook(HookTask {
            module: Some(m(module)),
            hook: HookName::new("hooks/h.sh").unwrap(),
            binding: BindingType::Schedule,
            contexts: Vec::new(),
            allow_failure: false,
            origin: Origin::Event,
        })
    };
    let rows: [(QueueEdit, Task, bool); 9] = [
        (QueueEdit::DropConvergeSteps, run("a"), true),
        (QueueEdit::DropConvergeSteps, Task::DiscoverModules, true),
        (QueueEdit::DropConvergeSteps, before_all, true),
        (
            QueueEdit::DropConvergeSteps,
            Task::ModuleDelete { module: m("a") },
            false,
        ),
        (
            QueueEdit::DropConvergeSteps,
            Task::Converge { reason: "x" },
            false,
        ),
        (
            QueueEdit::DropQueuedConverges,
            Task::Converge { reason: "x" },
            true,
        ),
        (QueueEdit::DropRunsOf(mods(&["a"])), hook_of("a"), true),
        (QueueEdit::DropRunsOf(mods(&["a"])), hook_of("b"), false),
        (QueueEdit::CancelMainRetryDelay, run("a"), false),
    ];
    for (edit, task, removed) in rows {
        assert_eq!(
            edit.removes(&task),
            removed,
            "{edit:?} on {}",
            task.description()
        );
    }
    assert!(QueueEdit::DropRunsOf(Vec::new()).every_queue());
    assert!(!QueueEdit::DropConvergeSteps.every_queue());
}

/// Modules a, b, c of ORDER 1, d of ORDER 2, e and f of ORDER 3: every one enabled, a, b, d
/// started before.
fn discover_groups(lanes: usize) -> Decision {
    let all = ["a", "b", "c", "d", "e", "f"];
    let orders = [1, 1, 1, 2, 3, 3];
    discover_in_lanes(&all, &orders, &all, &[], &["a", "b", "d"], &[], true, lanes)
}

#[test]
fn modules_of_one_order_run_side_by_side_step_5() {
    check(&[
        Row {
            step: "5: with lanes, each ORDER of two modules or more is one group; a lone ORDER runs in main",
            decide: || discover_groups(4),
            expected: &[
                "head ParallelModuleRun:order 1:a,b,c(startup):converge",
                "head ModuleRun:d:converge",
                "head ParallelModuleRun:order 3:e(startup),f(startup):converge",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [a, b, c, d, e, f]",
            ],
        },
        Row {
            step: "5: --parallel-module-runs 1 is the one-by-one plan of the seeds",
            decide: || discover_groups(1),
            expected: &[
                "head ModuleRun:a:converge",
                "head ModuleRun:b:converge",
                "head ModuleRun:c:startup:converge",
                "head ModuleRun:d:converge",
                "head ModuleRun:e:startup:converge",
                "head ModuleRun:f:startup:converge",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [a, b, c, d, e, f]",
            ],
        },
        Row {
            step: "6+5: deletes come first, then the groups of the enabled modules",
            decide: || {
                let all = ["a", "b", "c"];
                discover_in_lanes(&all, &[1, 1, 1], &["a", "c"], &[], &all, &[], true, 2)
            },
            expected: &[
                "head ModuleDelete:b",
                "head ParallelModuleRun:order 1:a,c:converge",
                "head GlobalHookRun:afterAll:watch-a.sh:afterAll",
                "head ConvergeDone",
                "change Enabled [a, c]",
            ],
        },
        Row {
            step: "5: afterHelm changed the values of a group member: it runs again in its lane first",
            decide: || module_run_finished(&m("a"), true, true),
            expected: &[
                "head ModuleRun:a:afterHelm hooks changed module values",
                "change ModuleStarted a",
            ],
        },
    ]);
}

fn member(module: &str) -> GroupMember {
    GroupMember {
        module: m(module),
        startup: false,
    }
}

/// Lanes 0..3 of which `busy` hold a task, and what the group does with `pending` members.
fn step(busy: &[usize], pending: &[&str]) -> (GroupStep, Vec<String>) {
    let lanes = lanes(3);
    let mut set = queues(vec![]);
    for lane in &lanes {
        set.ensure(lane.clone());
    }
    for index in busy {
        set.push_back(&lanes[*index], run("x")).unwrap();
    }
    let mut pending: std::collections::VecDeque<GroupMember> =
        pending.iter().map(|p| member(p)).collect();
    let got = group_step(&set, &lanes, &mut pending, "converge");
    let left = pending.iter().map(|p| p.module.to_string()).collect();
    (got, left)
}

fn dispatched(pairs: &[(usize, &str)]) -> GroupStep {
    GroupStep::Dispatch(
        pairs
            .iter()
            .map(|(lane, module)| (QueueName::parallel(*lane), run(module)))
            .collect(),
    )
}

#[test]
fn a_running_group_fills_idle_lanes_and_finishes_when_all_are_empty() {
    let descriptions = |s: &GroupStep| match s {
        GroupStep::Dispatch(tasks) => tasks
            .iter()
            .map(|(q, t)| format!("{q} {}", t.description()))
            .collect(),
        other => vec![format!("{other:?}")],
    };
    type StepRow<'a> = (
        &'a str,
        &'a [usize],
        &'a [&'a str],
        GroupStep,
        &'a [&'a str],
    );
    let rows: [StepRow<'_>; 5] = [
        (
            "members go to the idle lanes in module order; the rest wait",
            &[],
            &["a", "b", "c", "d"],
            dispatched(&[(0, "a"), (1, "b"), (2, "c")]),
            &["d"],
        ),
        (
            "a lane held by a failing member is skipped: the others take the members",
            &[0],
            &["d", "e"],
            dispatched(&[(1, "d"), (2, "e")]),
            &[],
        ),
        (
            "every lane busy: wait",
            &[0, 1, 2],
            &["d"],
            GroupStep::Wait,
            &["d"],
        ),
        (
            "nothing pending but a member still in a lane (a retry, a re-run): wait",
            &[2],
            &[],
            GroupStep::Wait,
            &[],
        ),
        (
            "nothing pending and every lane empty: the group is done",
            &[],
            &[],
            GroupStep::Finished,
            &[],
        ),
    ];
    for (name, busy, pending, expected, left) in rows {
        let (got, got_left) = step(busy, pending);
        assert_eq!(descriptions(&got), descriptions(&expected), "{name}");
        assert_eq!(got_left, left, "{name}");
    }
    assert!(lanes(1).is_empty(), "one run at a time needs no lane");
    assert_eq!(lanes(2), [QueueName::parallel(0), QueueName::parallel(1)]);
    assert!(QueueName::parallel(7).is_parallel() && !QueueName::main().is_parallel());
}

#[test]
fn a_group_that_has_not_started_counts_as_a_queued_run_of_its_members() {
    let group = Task::ModuleGroup {
        order: 1,
        members: vec![member("a"), member("b")],
        reason: "converge",
    };
    let queued = with_view(&["a", "b", "c"], true, vec![group.clone()], |v| {
        config_edited(v, &edit(false, &[], &["a", "c"]), &[])
    });
    assert_eq!(
        lines(&queued),
        [
            "edit CancelMainRetryDelay",
            "tail main ModuleRun:c:config changed"
        ]
    );
    let enabled = mods(&["a", "b"]);
    let mut set = queues(vec![group.clone()]);
    if let Ok(main) = set.get_mut(&QueueName::main()) {
        main.start_head();
    }
    let view = View {
        enabled: &enabled,
        first_converge_done: true,
        queues: &set,
    };
    assert!(
        view.module_run_if_not_queued(&m("a"), "config changed")
            .is_some(),
        "a running group may have run the module before the edit: it runs again after"
    );
    assert!(QueueEdit::DropConvergeSteps.removes(&group));
    assert!(!QueueEdit::DropRunsOf(mods(&["a"])).removes(&group));
}

#[test]
fn a_module_never_runs_side_by_side_with_a_module_it_requires_step_5() {
    let run = |name: &str, requires: &[&str]| PlannedRun {
        module: m(name),
        order: 1,
        startup: false,
        requires: requires.iter().map(|r| m(r)).collect(),
    };
    let runs = vec![
        run("a", &[]),
        run("b", &[]),
        run("c", &["a"]),
        run("d", &[]),
    ];
    let tasks: Vec<String> = runs_by_order(runs, 4, "converge")
        .iter()
        .map(Task::description)
        .collect();
    assert_eq!(
        tasks,
        [
            "ParallelModuleRun:order 1:a,b:converge",
            "ParallelModuleRun:order 1:c,d:converge"
        ]
    );
}

#[test]
fn discovery_passes_each_modules_requirements_to_the_groups_step_5() {
    let order = mods(&["a", "b", "c"]);
    let requires = vec![vec![], vec![], vec![m("a")]];
    let found = Discovered {
        module_order: &order,
        orders: &[1, 1, 1],
        enabled: &order,
        requires: &requires,
        releases: &[],
        kept_releases: &[],
    };
    let facts = ConvergeFacts {
        previously_enabled: &order,
        started: &order,
        startup_purge_done: true,
        global_checksum: "sum",
        parallel_module_runs: 4,
    };
    let decision = discovered(found, facts, &[]);
    let tasks: Vec<String> = decision.head.iter().map(Task::description).collect();
    assert_eq!(
        tasks[..2],
        [
            "ParallelModuleRun:order 1:a,b:converge",
            "ModuleRun:c:converge"
        ]
    );
}
