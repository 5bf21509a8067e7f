//! Modules of one ORDER run side by side (`--parallel-module-runs`): orders never overlap, a
//! failing member retries alone, a disable stops only its member, and one lane is the
//! one-by-one order.

use std::time::Duration;

use addon_operator::edges::exec::hook_run::HookOutputs;
use addon_operator_testkit::scenario::{Op, config_patch, start_parallel, tree};
use addon_operator_testkit::wait::wait_for_async;
use addon_operator_testkit::{FakeHelm, FakeHooks, HookSpan};
use serde_json::json;

/// alpha, beta, gamma of ORDER 10 and delta of ORDER 20, each with a chart and a beforeHelm
/// hook; beta also has an afterDeleteHelm hook.
fn two_orders() -> tempfile::TempDir {
    let mut files = vec![(
        "modules/values.yaml".to_string(),
        "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\ndeltaEnabled: true\n"
            .to_string(),
    )];
    for dir in ["010-alpha", "010-beta", "010-gamma", "020-delta"] {
        let name = &dir[4..];
        files.push((
            format!("modules/{dir}/Chart.yaml"),
            format!("name: {name}\nversion: 0.1.0\n"),
        ));
        files.push((
            format!("modules/{dir}/hooks/before"),
            "configVersion: v1\nbeforeHelm: 1\n".to_string(),
        ));
    }
    files.push((
        "modules/010-beta/hooks/deleted".to_string(),
        "configVersion: v1\nafterDeleteHelm: 1\n".to_string(),
    ));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    tree(&files)
}

/// beforeHelm hooks take `slow` for alpha and gamma, 10 s for the others; `fails` says which
/// run of beta's hook (1-based) fails.
fn timed_hooks(slow: Duration, fails: impl Fn(usize) -> bool + Send + Sync + 'static) -> FakeHooks {
    let hooks = FakeHooks::new();
    hooks.take_time(move |call| match call.name.as_str() {
        "alpha/hooks/before" | "gamma/hooks/before" => slow,
        _ => Duration::from_secs(10),
    });
    let beta_runs = std::sync::atomic::AtomicUsize::new(0);
    hooks.respond(move |call| {
        if call.name == "beta/hooks/before" {
            let run = beta_runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if fails(run) {
                return Err("beta is broken".into());
            }
        }
        Ok(HookOutputs::default())
    });
    hooks
}

fn spans_of<'a>(spans: &'a [HookSpan], module: &str) -> Vec<&'a HookSpan> {
    let name = format!("{module}/hooks/before");
    spans.iter().filter(|s| s.name == name).collect()
}

fn last_end(spans: &[&HookSpan]) -> tokio::time::Instant {
    spans.iter().map(|s| s.end).max().unwrap()
}

fn first_start(spans: &[&HookSpan]) -> tokio::time::Instant {
    spans.iter().map(|s| s.start).min().unwrap()
}

fn enabled(op: &Op) -> Vec<String> {
    let modules = op.handle.enabled_modules();
    modules.iter().map(|m| m.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn modules_of_one_order_run_side_by_side_and_the_next_order_waits_for_the_group() {
    let hooks = timed_hooks(Duration::from_secs(10), |_| false);
    let op = start_parallel(two_orders(), "", hooks, FakeHelm::new(), 4).await;
    op.settle().await;
    let spans = op.hooks.spans();
    let group: Vec<&HookSpan> = ["alpha", "beta", "gamma"]
        .iter()
        .flat_map(|m| spans_of(&spans, m))
        .collect();
    assert_eq!(group.len(), 3, "{spans:?}");
    let overlapping = group
        .iter()
        .all(|s| s.start < first_start(&group) + Duration::from_secs(10));
    assert!(
        overlapping,
        "the members of ORDER 10 ran side by side: {group:?}"
    );
    let delta = spans_of(&spans, "delta");
    assert!(
        first_start(&delta) >= last_end(&group),
        "ORDER 20 started only after the whole ORDER 10 group: {spans:?}"
    );
    let history = op.handle.history();
    assert!(
        history.contains(
            &"start ParallelModuleRun:order 10:alpha(startup),beta(startup),gamma(startup):converge"
                .to_string()
        ),
        "{history:#?}"
    );
    assert!(
        history.contains(&"start ModuleRun:delta:startup:converge".to_string()),
        "a lone ORDER runs in main as before: {history:#?}"
    );
    assert_eq!(enabled(&op), ["alpha", "beta", "gamma", "delta"]);
    let upgrades = op
        .runs()
        .iter()
        .filter(|r| r.starts_with("helm upgrade"))
        .count();
    assert_eq!(upgrades, 4, "{:?}", op.runs());
}

#[tokio::test(start_paused = true)]
async fn a_failing_member_retries_alone_while_the_others_finish_and_the_next_order_waits() {
    let hooks = timed_hooks(Duration::from_secs(10), |run| run <= 2);
    let op = start_parallel(two_orders(), "", hooks, FakeHelm::new(), 4).await;
    let failing = || async { op.handle.first_failure().is_some() };
    wait_for_async(
        "beta to fail",
        Duration::from_secs(60),
        failing,
        String::new,
    )
    .await;
    let text = op.handle.queues_text();
    assert!(
        text.contains("parallel_queue_")
            && text.contains("ModuleRun:beta:startup:converge:failures 1"),
        "the lane shows its module and its failure:\n{text}"
    );
    assert!(
        text.contains("ParallelModuleRun:order 10"),
        "main shows the group it waits for:\n{text}"
    );
    assert!(
        !op.handle.first_converge_done(),
        "not ready before the last group"
    );
    op.settle().await;
    let spans = op.hooks.spans();
    let beta = spans_of(&spans, "beta");
    assert_eq!(
        beta.len(),
        3,
        "two failures and the retry that worked: {beta:?}"
    );
    for other in ["alpha", "gamma"] {
        let runs = spans_of(&spans, other);
        assert_eq!(
            runs.len(),
            1,
            "{other} ran once, untouched by beta's retries"
        );
        assert!(
            last_end(&runs) <= beta[1].start,
            "{other} finished while beta waited for its retry"
        );
    }
    let delta = spans_of(&spans, "delta");
    assert!(
        first_start(&delta) >= last_end(&beta),
        "ORDER 20 waited for beta's successful retry: {spans:?}"
    );
    assert!(op.handle.first_converge_done());
}

#[tokio::test(start_paused = true)]
async fn a_config_edit_disabling_a_failing_member_stops_only_that_member() {
    let hooks = timed_hooks(Duration::from_secs(40), |_| true);
    let op = start_parallel(two_orders(), "", hooks, FakeHelm::new(), 4).await;
    let failing = || async { op.handle.first_failure().is_some() };
    wait_for_async(
        "beta to fail",
        Duration::from_secs(60),
        failing,
        String::new,
    )
    .await;
    let mark = op.clear_history_marker();
    op.config.edit(Ok(addon_core::config::Config::from_file(
        "config.yaml",
        "betaEnabled: \"false\"\n",
    )
    .unwrap()));
    op.settle().await;
    let spans = op.hooks.spans();
    let beta = spans_of(&spans, "beta");
    assert_eq!(
        beta.len(),
        1,
        "beta's failing run was dropped, not retried: {beta:?}"
    );
    for other in ["alpha", "gamma"] {
        let runs = spans_of(&spans, other);
        assert!(
            runs[0].end - runs[0].start == Duration::from_secs(40),
            "{other}'s run in the group went on to its end: {runs:?}"
        );
    }
    let after = op.runs_since(mark);
    let upgrades: Vec<&String> = after
        .iter()
        .filter(|r| r.starts_with("helm upgrade"))
        .collect();
    assert!(
        upgrades.iter().any(|r| *r == "helm upgrade alpha")
            && upgrades.iter().any(|r| *r == "helm upgrade gamma"),
        "alpha and gamma finished their runs: {after:?}"
    );
    assert!(
        after.contains(&"run beta/hooks/deleted afterDeleteHelm".to_string()),
        "{after:?}"
    );
    assert!(
        !after.contains(&"helm upgrade beta".to_string()),
        "{after:?}"
    );
    assert_eq!(enabled(&op), ["alpha", "gamma", "delta"]);
    assert!(op.handle.first_failure().is_none());
}

#[tokio::test(start_paused = true)]
async fn one_parallel_run_keeps_the_one_by_one_order() {
    let hooks = timed_hooks(Duration::from_secs(10), |_| false);
    let op = start_parallel(two_orders(), "", hooks, FakeHelm::new(), 1).await;
    op.settle().await;
    let starts: Vec<String> = op
        .handle
        .history()
        .into_iter()
        .filter(|l| l.starts_with("start "))
        .collect();
    assert_eq!(
        starts,
        [
            "start ConvergeModules:startup",
            "start DiscoverModules",
            "start ModuleRun:alpha:startup:converge",
            "start ModuleRun:beta:startup:converge",
            "start ModuleRun:gamma:startup:converge",
            "start ModuleRun:delta:startup:converge",
            "start ConvergeDone",
        ]
    );
    assert_eq!(
        op.runs(),
        [
            "run alpha/hooks/before beforeHelm",
            "helm upgrade alpha",
            "run beta/hooks/before beforeHelm",
            "helm upgrade beta",
            "run gamma/hooks/before beforeHelm",
            "helm upgrade gamma",
            "run delta/hooks/before beforeHelm",
            "helm upgrade delta",
        ]
    );
    let spans = op.hooks.spans();
    assert!(
        spans.windows(2).all(|w| w[0].end <= w[1].start),
        "no two runs overlap: {spans:?}"
    );
    assert!(!op.handle.queues_text().contains("parallel_queue"));
}

#[tokio::test(start_paused = true)]
async fn values_and_config_patches_of_members_running_side_by_side_are_all_kept() {
    let hooks = FakeHooks::new();
    hooks.take_time(|_| Duration::from_secs(10));
    hooks.respond(|call| {
        let Some(module) = call.name.strip_suffix("/hooks/before") else {
            return Ok(HookOutputs::default());
        };
        let mut out = config_patch(&format!(
            r#"[{{"op": "add", "path": "/{module}/fromConfig", "value": "{module}"}}]"#
        ));
        out.values_patch =
            format!(r#"[{{"op": "add", "path": "/{module}/fromValues", "value": "{module}"}}]"#);
        Ok(out)
    });
    let op = start_parallel(two_orders(), "", hooks, FakeHelm::new(), 4).await;
    op.settle().await;
    let values = op.handle.values();
    let config = op.config.current();
    for module in ["alpha", "beta", "gamma", "delta"] {
        assert_eq!(values[module]["fromValues"], json!(module), "{values}");
        assert_eq!(values[module]["fromConfig"], json!(module), "{values}");
        let name = addon_core::names::ModuleName::new(module).unwrap();
        assert_eq!(
            config.module_values(&name)["fromConfig"],
            json!(module),
            "the config store holds every member's patch"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_config_edit_disabling_a_member_not_yet_in_a_lane_drops_it_from_the_group() {
    let hooks = timed_hooks(Duration::from_secs(40), |_| false);
    let op = start_parallel(two_orders(), "", hooks, FakeHelm::new(), 2).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let text = op.handle.queues_text();
    assert!(
        text.contains("ModuleRun:alpha")
            && text.contains("ModuleRun:beta")
            && !text.contains("ModuleRun:gamma"),
        "two lanes: alpha and beta run, gamma waits in the group:\n{text}"
    );
    op.edit_config("gammaEnabled: \"false\"\n").await;
    let spans = op.hooks.spans();
    assert!(
        spans_of(&spans, "gamma").is_empty(),
        "gamma never ran: {spans:?}"
    );
    let alpha = spans_of(&spans, "alpha");
    assert_eq!(
        alpha[0].end - alpha[0].start,
        Duration::from_secs(40),
        "alpha went on"
    );
    assert_eq!(enabled(&op), ["alpha", "beta", "delta"]);
}

#[tokio::test(start_paused = true)]
async fn task_metrics_name_the_lane_and_the_module_of_each_member() {
    let hooks = timed_hooks(Duration::from_secs(10), |_| false);
    let op = start_parallel(two_orders(), "", hooks, FakeHelm::new(), 4).await;
    op.settle().await;
    let text = op.handle.metrics().encode();
    for module in ["alpha", "beta", "gamma"] {
        let lane_wait = format!(
            r#"addon_operator_task_wait_in_queue_seconds_total{{module="{module}",hook="",binding="ModuleRun",queue="parallel_queue_"#
        );
        assert!(
            text.contains(&lane_wait),
            "{module} waited in a lane:\n{text}"
        );
    }
    let delta = r#"addon_operator_task_wait_in_queue_seconds_total{module="delta",hook="",binding="ModuleRun",queue="main"}"#;
    assert!(text.contains(delta), "a lone ORDER runs in main:\n{text}");
    let group = r#"binding="ParallelModuleRun",queue="main"}"#;
    assert!(text.contains(group), "the group waited in main:\n{text}");
}
