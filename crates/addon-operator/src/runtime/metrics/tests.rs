//! Every recording method shows up in `encode()` with its upstream name, type and labels.

use super::*;

fn run(module: Option<&'static str>, outcome: HookOutcome) -> HookRunRecord<'static> {
    HookRunRecord {
        hook: "hooks/h.sh",
        module,
        binding: "every-minute",
        queue: "main",
        activation: "Schedule",
        duration: Duration::from_millis(30),
        user_cpu: Duration::from_millis(10),
        sys_cpu: Duration::from_millis(5),
        max_rss_bytes: 4096,
        outcome,
    }
}

fn binding() -> BindingLabels<'static> {
    BindingLabels {
        module: "alpha",
        hook: "alpha/hooks/pods",
        binding: "pods",
        queue: "main",
    }
}

/// Lines of `encode()` for one metric family: `# TYPE` and samples.
fn family(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            let sample = l.split(['{', ' ']).next().unwrap_or_default();
            l.starts_with(&format!("# TYPE {name} "))
                || sample == name
                || ["_total", "_bucket", "_sum", "_count"]
                    .iter()
                    .any(|s| sample == format!("{name}{s}"))
        })
        .map(str::to_string)
        .collect()
}

fn assert_has(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "missing line {line:?} in:\n{text}"
    );
}

#[test]
fn a_fresh_registry_shows_unlabelled_counters_at_zero_and_ends_with_eof() {
    let text = Metrics::default().encode();
    assert_has(&text, "# TYPE addon_operator_config_values_errors counter");
    assert_has(&text, "addon_operator_config_values_errors_total 0");
    assert_has(&text, "addon_operator_modules_discover_errors_total 0");
    assert_has(&text, "# TYPE addon_operator_live_ticks unknown");
    assert_has(&text, "addon_operator_live_ticks 0.0");
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(
        family(&text, "addon_operator_module_run_seconds").is_empty(),
        "no series, no family"
    );
}

#[test]
fn module_hook_run_records_time_cpu_memory_and_success_with_module_labels() {
    let metrics = Metrics::default();
    metrics.hook_run(&run(Some("alpha"), HookOutcome::Success));
    let text = metrics.encode();
    let labels = r#"module="alpha",hook="hooks/h.sh",binding="every-minute",queue="main",activation="Schedule""#;
    assert_has(
        &text,
        "# TYPE addon_operator_module_hook_run_seconds histogram",
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_run_seconds_count{{{labels}}} 1"),
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_run_seconds_sum{{{labels}}} 0.03"),
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_run_seconds_bucket{{le=\"0.05\",{labels}}} 1"),
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_run_seconds_bucket{{le=\"0.02\",{labels}}} 0"),
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_run_user_cpu_seconds_sum{{{labels}}} 0.01"),
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_run_sys_cpu_seconds_sum{{{labels}}} 0.005"),
    );
    assert_has(
        &text,
        "# TYPE addon_operator_module_hook_run_max_rss_bytes gauge",
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_run_max_rss_bytes{{{labels}}} 4096.0"),
    );
    assert_has(&text, "# TYPE addon_operator_module_hook_success counter");
    assert_has(
        &text,
        &format!("addon_operator_module_hook_success_total{{{labels}}} 1"),
    );
    // as upstream, a run adds 0 to the other outcomes: a hook that never failed shows 0 errors
    assert_has(
        &text,
        &format!("addon_operator_module_hook_errors_total{{{labels}}} 0"),
    );
    assert_has(
        &text,
        &format!("addon_operator_module_hook_allowed_errors_total{{{labels}}} 0"),
    );
    assert!(family(&text, "addon_operator_global_hook_run_seconds").is_empty());
}

#[test]
fn a_run_too_short_to_sample_leaves_the_peak_memory_as_it_was() {
    let metrics = Metrics::default();
    metrics.hook_run(&run(Some("alpha"), HookOutcome::Success));
    let unsampled = HookRunRecord {
        max_rss_bytes: 0,
        ..run(Some("alpha"), HookOutcome::Success)
    };
    metrics.hook_run(&unsampled);
    let text = metrics.encode();
    let series = family(&text, "addon_operator_module_hook_run_max_rss_bytes");
    assert_eq!(series.len(), 2, "{series:?}");
    assert!(series[1].ends_with(" 4096.0"), "{series:?}");

    let fresh = Metrics::default();
    fresh.hook_run(&unsampled);
    let series = family(
        &fresh.encode(),
        "addon_operator_module_hook_run_max_rss_bytes",
    );
    assert!(series.iter().all(|l| l.starts_with('#')), "{series:?}");
}

#[test]
fn global_hook_failures_count_as_errors_or_allowed_errors_without_a_module_label() {
    let metrics = Metrics::default();
    metrics.hook_run(&run(None, HookOutcome::Failure));
    metrics.hook_run(&run(None, HookOutcome::Failure));
    metrics.hook_run(&run(None, HookOutcome::AllowedFailure));
    let text = metrics.encode();
    let labels = r#"hook="hooks/h.sh",binding="every-minute",queue="main",activation="Schedule""#;
    assert_has(
        &text,
        &format!("addon_operator_global_hook_errors_total{{{labels}}} 2"),
    );
    assert_has(
        &text,
        &format!("addon_operator_global_hook_allowed_errors_total{{{labels}}} 1"),
    );
    assert_has(
        &text,
        &format!("addon_operator_global_hook_run_seconds_count{{{labels}}} 3"),
    );
    assert_has(
        &text,
        &format!("addon_operator_global_hook_success_total{{{labels}}} 0"),
    );
}

#[test]
fn module_lifecycle_metrics_have_upstream_names_and_labels() {
    let metrics = Metrics::default();
    metrics.binding_counts([(Some("gone"), "gone/hooks/x", 2)].into_iter());
    metrics.binding_counts(
        [
            (Some("alpha"), "alpha/hooks/a", 3),
            (None, "global-hooks/g", 1),
        ]
        .into_iter(),
    );
    metrics.config_values_error();
    metrics.discover_error();
    metrics.module_run("alpha", "OperatorStartup", Duration::from_secs(2), false);
    metrics.module_run("alpha", "OperatorStartup", Duration::from_secs(1), true);
    metrics.module_delete("beta", false);
    metrics.module_delete("beta", true);
    metrics.helm_release_redeployed("alpha");
    metrics.absent_resources("alpha", "Deployment/web", 2);
    let text = metrics.encode();
    assert_has(
        &text,
        r#"addon_operator_binding_count{module="alpha",hook="alpha/hooks/a"} 3.0"#,
    );
    assert_has(
        &text,
        r#"addon_operator_binding_count{module="",hook="global-hooks/g"} 1.0"#,
    );
    assert!(
        !text.contains("gone/hooks/x"),
        "a hook no longer in the tree: {text}"
    );
    assert_has(&text, "addon_operator_config_values_errors_total 1");
    assert_has(&text, "addon_operator_modules_discover_errors_total 1");
    assert_has(
        &text,
        r#"addon_operator_module_run_seconds_count{module="alpha",activation="OperatorStartup"} 2"#,
    );
    assert_has(
        &text,
        r#"addon_operator_module_run_errors_total{module="alpha"} 1"#,
    );
    assert_has(
        &text,
        r#"addon_operator_module_delete_errors_total{module="beta"} 1"#,
    );
    assert_has(
        &text,
        r#"addon_operator_modules_helm_release_redeployed_total{module="alpha"} 1"#,
    );
    assert_has(
        &text,
        r#"addon_operator_modules_absent_resources_total{module="alpha",resource="Deployment/web"} 2"#,
    );
}

#[test]
fn module_info_is_replaced_as_a_whole() {
    let metrics = Metrics::default();
    let info = |module: &str, enabled| ModuleInfo {
        module: module.into(),
        enabled,
        critical: false,
    };
    metrics.modules_info(&[info("alpha", true), info("beta", true)]);
    metrics.modules_info(&[info("alpha", true), info("beta", false)]);
    let mut lines = family(&metrics.encode(), "addon_operator_mm_module_info");
    lines.sort();
    assert_eq!(
        lines,
        [
            "# TYPE addon_operator_mm_module_info gauge",
            r#"addon_operator_mm_module_info{module="alpha",enabled="true",critical="false"} 1.0"#,
            r#"addon_operator_mm_module_info{module="beta",enabled="false",critical="false"} 1.0"#,
        ]
    );
}

#[test]
fn converge_counts_seconds_without_total_suffix_and_runs_with_it() {
    let metrics = Metrics::default();
    metrics.converge("OperatorStartup", Duration::from_millis(1500));
    metrics.converge("OperatorStartup", Duration::from_millis(500));
    let text = metrics.encode();
    assert_has(&text, "# TYPE addon_operator_convergence_seconds unknown");
    assert_has(
        &text,
        r#"addon_operator_convergence_seconds{activation="OperatorStartup"} 2.0"#,
    );
    assert_has(&text, "# TYPE addon_operator_convergence counter");
    assert_has(
        &text,
        r#"addon_operator_convergence_total{activation="OperatorStartup"} 2"#,
    );
}

#[test]
fn helm_metrics_carry_module_activation_and_operation() {
    let metrics = Metrics::default();
    metrics.module_helm("alpha", "Schedule", Duration::from_millis(300));
    metrics.helm_operation(
        "alpha",
        "Schedule",
        HelmOperation::Upgrade,
        Duration::from_millis(250),
    );
    metrics.helm_operation(
        "alpha",
        "Schedule",
        HelmOperation::CheckUpgrade,
        Duration::ZERO,
    );
    let text = metrics.encode();
    assert_has(&text, "# TYPE addon_operator_module_helm_seconds histogram");
    assert_has(
        &text,
        r#"addon_operator_module_helm_seconds_sum{module="alpha",activation="Schedule"} 0.3"#,
    );
    assert_has(
        &text,
        r#"addon_operator_helm_operation_seconds_count{module="alpha",activation="Schedule",operation="upgrade"} 1"#,
    );
    assert_has(
        &text,
        r#"addon_operator_helm_operation_seconds_bucket{le="0.0",module="alpha",activation="Schedule",operation="check-upgrade"} 1"#,
    );
}

#[test]
fn queue_metrics_have_upstream_names_and_labels() {
    let metrics = Metrics::default();
    metrics.queue_length("main", 3);
    metrics.queue_heads(&[QueueHead {
        queue: "main".into(),
        task_type: "ModuleRun".into(),
        module: "alpha".into(),
        hook: String::new(),
    }]);
    metrics.queue_action("main", "add_last", Duration::from_millis(1));
    metrics.task_wait_in_queue(&binding(), Duration::from_millis(250));
    metrics.task_wait_in_queue(&binding(), Duration::from_millis(250));
    metrics.live_tick();
    metrics.live_tick();
    let text = metrics.encode();
    assert_has(&text, "# TYPE addon_operator_tasks_queue_length gauge");
    assert_has(
        &text,
        r#"addon_operator_tasks_queue_length{queue="main"} 3.0"#,
    );
    assert_has(
        &text,
        r#"addon_operator_tasks_queue_head_info{queue="main",module="alpha",task_type="ModuleRun",hook=""} 1.0"#,
    );
    assert_has(
        &text,
        r#"addon_operator_tasks_queue_action_duration_seconds_count{queue_name="main",queue_action="add_last"} 1"#,
    );
    assert_has(
        &text,
        "# TYPE addon_operator_task_wait_in_queue_seconds counter",
    );
    assert_has(
        &text,
        r#"addon_operator_task_wait_in_queue_seconds_total{module="alpha",hook="alpha/hooks/pods",binding="pods",queue="main"} 0.5"#,
    );
    assert_has(&text, "addon_operator_live_ticks 2.0");
}

#[test]
fn queue_heads_replace_the_previous_heads() {
    let metrics = Metrics::default();
    let head = |queue: &str| QueueHead {
        queue: queue.into(),
        task_type: "GlobalHookRun".into(),
        module: String::new(),
        hook: "g".into(),
    };
    metrics.queue_heads(&[head("main"), head("q2")]);
    metrics.queue_heads(&[head("q2")]);
    let text = metrics.encode();
    assert!(
        !text.contains(r#"tasks_queue_head_info{queue="main""#),
        "{text}"
    );
    assert!(
        text.contains(r#"tasks_queue_head_info{queue="q2""#),
        "{text}"
    );
}

#[test]
fn kubernetes_binding_metrics_have_upstream_names_and_labels() {
    let metrics = Metrics::default();
    metrics.kube_snapshot_objects(&binding(), "Pod", 7);
    metrics.kube_jq_filter(&binding(), "Pod", Duration::from_millis(2));
    metrics.kube_event(&binding(), "Pod", Duration::from_millis(3));
    metrics.kube_watch_error("expired");
    let text = metrics.encode();
    let labels = r#"module="alpha",hook="alpha/hooks/pods",binding="pods",queue="main",kind="Pod""#;
    assert_has(
        &text,
        &format!("addon_operator_kube_snapshot_objects{{{labels}}} 7.0"),
    );
    assert_has(
        &text,
        &format!("addon_operator_kube_jq_filter_duration_seconds_count{{{labels}}} 1"),
    );
    assert_has(
        &text,
        &format!("addon_operator_kube_event_duration_seconds_count{{{labels}}} 1"),
    );
    assert_has(
        &text,
        r#"addon_operator_kubernetes_client_watch_errors_total{error_type="expired"} 1"#,
    );
}

#[test]
fn a_listing_observes_each_object_and_queue_actions_use_fine_buckets() {
    let metrics = Metrics::default();
    metrics.kube_jq_filter_each(&binding(), "Pod", Duration::from_millis(2), 4);
    metrics.queue_action("main", "AddLast", Duration::from_micros(150));
    let text = metrics.encode();
    let labels = r#"module="alpha",hook="alpha/hooks/pods",binding="pods",queue="main",kind="Pod""#;
    assert_has(
        &text,
        &format!("addon_operator_kube_jq_filter_duration_seconds_count{{{labels}}} 4"),
    );
    assert_has(
        &text,
        &format!("addon_operator_kube_jq_filter_duration_seconds_sum{{{labels}}} 0.008"),
    );
    assert_has(
        &text,
        r#"addon_operator_tasks_queue_action_duration_seconds_bucket{le="0.0002",queue_name="main",queue_action="AddLast"} 1"#,
    );
    assert_has(
        &text,
        r#"addon_operator_tasks_queue_action_duration_seconds_bucket{le="0.0001",queue_name="main",queue_action="AddLast"} 0"#,
    );
}

#[test]
fn the_prefix_is_configurable() {
    let metrics = Metrics::new("my_");
    metrics.live_tick();
    let text = metrics.encode();
    assert_has(&text, "my_live_ticks 1.0");
    assert_has(&text, "my_config_values_errors_total 0");
    assert!(!text.contains("addon_operator_"), "{text}");
}

#[test]
fn histograms_use_upstream_buckets() {
    let metrics = Metrics::default();
    metrics.module_run("alpha", "a", Duration::from_secs(20), true);
    let text = metrics.encode();
    let bounds: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("addon_operator_module_run_seconds_bucket"))
        .filter_map(|l| {
            l.split("le=\"")
                .nth(1)?
                .split('"')
                .next()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        bounds,
        [
            "0.0", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1.0",
            "2.0", "5.0", "10.0", "+Inf"
        ]
    );
}

#[test]
fn hook_metrics_go_to_their_own_registry_with_hook_and_module_labels() {
    let metrics = Metrics::default();
    let ops = addon_core::hook_output::metrics::parse(
        r#"{"name":"my_gauge","action":"set","value":5,"labels":{"a":"1"}}"#,
    )
    .unwrap();
    metrics
        .hook_metric_ops("alpha/hooks/h", Some("alpha"), &ops)
        .unwrap();
    assert!(!metrics.encode().contains("my_gauge"));
    assert_eq!(
        metrics.encode_hooks(),
        "# TYPE my_gauge gauge\nmy_gauge{a=\"1\",hook=\"alpha/hooks/h\",module=\"alpha\"} 5\n"
    );
    metrics.expire_hook_metrics("alpha/hooks/h");
    assert_eq!(metrics.encode_hooks(), "");
}

#[tokio::test(start_paused = true)]
async fn live_ticks_grow_every_ten_seconds_until_shutdown() {
    let metrics = Arc::new(Metrics::default());
    let shutdown = CancellationToken::new();
    let task = spawn_live_ticks(metrics.clone(), shutdown.clone());
    tokio::time::sleep(Duration::from_secs(25)).await;
    shutdown.cancel();
    task.await.unwrap();
    assert_has(&metrics.encode(), "addon_operator_live_ticks 3.0");
}

#[test]
fn metrics_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Metrics>();
    let metrics = Arc::new(Metrics::default());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let metrics = metrics.clone();
            std::thread::spawn(move || metrics.config_values_error())
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_has(
        &metrics.encode(),
        "addon_operator_config_values_errors_total 4",
    );
}
