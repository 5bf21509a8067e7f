//! Every metric `docs/metrics.md` lists is served on `/metrics` with a plausible value after a
//! scenario that goes through every path that records one: hooks of every binding (failing,
//! allowed to fail, succeeding), Helm install and upgrades, a watch error, a drifted field written
//! back, an absent resource, a release left `failed`, a failed reload of the tree, a module delete that fails once.

use std::path::Path;
use std::time::Duration;

use crate::cluster::{Cluster, get, http_addr, start_operator, wait_for_metrics};
use crate::support::{path_with_tools, require_tool, write};

/// A bash hook printing `config` for `--config`; otherwise runs `body` with `$binding` set to the
/// first binding's name.
fn hook(root: &Path, rel: &str, config: &str, body: &str) {
    let text = format!(
        "#!/usr/bin/env bash\nset -euo pipefail\nif [[ \"${{1:-}}\" == \"--config\" ]]; then\ncat <<'CFG'\n{config}\nCFG\nexit 0\nfi\nbinding=$(jq -r '.[0].binding' \"$BINDING_CONTEXT_PATH\")\n{body}\n"
    );
    write(&root.join(rel), &text, true);
}

/// Fails the first run of `$binding` (a marker file in `$STATE_DIR` remembers it).
const FAIL_ONCE: &str = r#"fail_once() { local m="$STATE_DIR/failed-$1"; if [[ ! -e "$m" ]]; then touch "$m"; echo "failing $1 once" >&2; exit 1; fi; }"#;

fn tree(root: &Path) {
    hook(
        root,
        "global-hooks/all",
        r#"configVersion: v1
onStartup: 1
beforeAll: 1
afterAll: 1
schedule:
- {name: flaky, crontab: "*/2 * * * * *", allowFailure: true}
- {name: slow, crontab: "*/7 * * * * *", queue: slow}
- {name: stuck, crontab: "*/5 * * * * *", queue: stuck, allowFailure: true}
kubernetes:
- name: watched
  kind: ConfigMap
  labelSelector: {matchLabels: {watch: "yes"}}
  jqFilter: .metadata.name"#,
        &format!(
            "{FAIL_ONCE}\ncase \"$binding\" in\n  onStartup) fail_once global-startup ;;\n  flaky) exit 1 ;;\n  slow) sleep 6 ;;\n  stuck) sleep 60 ;;\nesac"
        ),
    );
    write(
        &root.join("modules/values.yaml"),
        "alphaEnabled: true\n",
        false,
    );
    // answers admission reviews (webhook_requests_total)
    write(
        &root.join("modules/001-alpha/hooks/policy"),
        crate::webhooks::POLICY_HOOK,
        true,
    );
    write(
        &root.join("modules/001-alpha/Chart.yaml"),
        "apiVersion: v2\nname: alpha\nversion: 0.1.0\n",
        false,
    );
    write(
        &root.join("modules/001-alpha/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alpha-cm\n  annotations: {\"drift.addon-operator.io/mode\": enforce}\ndata:\n  a: \"1\"\n",
        false,
    );
    hook(
        root,
        "modules/001-alpha/hooks/hook",
        r#"configVersion: v1
onStartup: 1
beforeHelm: 1
afterHelm: 1
afterDeleteHelm: 1
schedule:
- {name: flaky, crontab: "*/2 * * * * *", allowFailure: true}
kubernetes:
- {name: pods, kind: Pod}"#,
        &format!(
            "{FAIL_ONCE}\ncase \"$binding\" in\n  beforeHelm) fail_once alpha-before ;;\n  afterDeleteHelm) fail_once alpha-delete ;;\n  flaky) exit 1 ;;\nesac"
        ),
    );
}

/// Leaves release `alpha` with a `failed` last revision: an upgrade whose object cannot be
/// created (its namespace does not exist).
fn fail_the_release(root: &Path, cluster: &Cluster) {
    let chart = root.join("broken-chart");
    write(
        &chart.join("Chart.yaml"),
        "apiVersion: v2\nname: alpha\nversion: 0.1.0\n",
        false,
    );
    write(
        &chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: no-such-namespace\n",
        false,
    );
    let out = std::process::Command::new("helm")
        .args(["upgrade", "alpha"])
        .arg(&chart)
        .args(["--namespace", "default", "--kubeconfig"])
        .arg(&cluster.kubeconfig)
        .env("PATH", path_with_tools())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the broken upgrade must fail");
}

/// `(sample name, type)` of every metric the doc's tables list (`{module,global}` expanded;
/// histograms are checked through their `_count` sample).
fn documented_metrics() -> Vec<(String, String)> {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
    let doc = std::fs::read_to_string(doc_path).unwrap();
    let mut out = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| `addon_operator_")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`');
        let kind = cells[2].split_whitespace().next().unwrap().to_string();
        let names = match name.split_once("{module,global}") {
            Some((a, b)) => vec![format!("{a}module{b}"), format!("{a}global{b}")],
            None => vec![name.to_string()],
        };
        out.extend(names.into_iter().map(|n| (n, kind.clone())));
    }
    assert!(out.len() > 30, "the doc's tables were not found: {out:?}");
    out
}

/// Values of the samples named exactly `name` (with or without labels).
fn samples(text: &str, name: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect()
}

/// Every documented metric has samples, and their values are plausible for their type.
fn check_every_documented_metric(text: &str) {
    let mut problems = Vec::new();
    for (name, kind) in documented_metrics() {
        let sample = if kind == "histogram" {
            format!("{name}_count")
        } else {
            name.clone()
        };
        let values = samples(text, &sample);
        let plausible = match kind.as_str() {
            _ if values.is_empty() => false,
            "histogram" => {
                values.iter().all(|v| *v >= 1.0)
                    && !samples(text, &format!("{name}_sum")).is_empty()
            }
            "counter" if name.ends_with("errors_total") && !text.contains(&format!("{name}{{")) => {
                values.iter().all(|v| *v >= 0.0)
            }
            "counter" => values.iter().all(|v| *v >= 0.0) && values.iter().any(|v| *v > 0.0),
            _ if name.ends_with("_info")
                || name.ends_with("_leader")
                || name.ends_with("_done") =>
            {
                values.iter().all(|v| *v == 1.0)
            }
            _ if name.ends_with("max_rss_bytes") => values.iter().all(|v| *v > 0.0),
            _ => values.iter().all(|v| v.is_finite() && *v >= 0.0),
        };
        if !plausible {
            problems.push(format!("{sample} ({kind}): {values:?}"));
        }
    }
    assert!(
        problems.is_empty(),
        "missing or implausible:\n{}\n\n{text}",
        problems.join("\n")
    );
}

#[test]
fn every_documented_metric_is_recorded() {
    if !(require_tool("jq") && require_tool("helm") && require_tool("kubectl")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    let cluster = Cluster::start(root);
    // `stuck` sleeps past the hook timeout (hook_timeouts_total); `slow` stays under it
    let webhook_port = crate::webhooks::free_port();
    let mut extra: Vec<String> = ["--resources-monitor-interval", "1s", "--reload-tree"]
        .into_iter()
        .chain(["--hook-timeout", "8s", "--hook-kill-grace", "1s"])
        .map(String::from)
        .collect();
    let webhook_args = crate::webhooks::admission_server_args(webhook_port);
    extra.extend(
        webhook_args
            .iter()
            .map(|a| a.to_string_lossy().into_owned()),
    );
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let _operator = start_operator(root, &cluster, &extra);
    let addr = http_addr(root);
    let long = Duration::from_secs(90);
    wait_for_metrics(root, &addr, "the first converge", long, |_| {
        get(&addr, "/readyz").is_some_and(|(code, _)| code == 200)
    });

    // an admission review allowed and one denied
    let (rt, webhook) =
        crate::webhooks::admission_server_up(webhook_port, &root.join("operator.log"));
    for name in ["good", "bad"] {
        let (status, _) = rt.block_on(crate::webhooks::post(webhook, name));
        assert_eq!(status, 200);
    }
    wait_for_metrics(root, &addr, "the reviews counted", long, |t| {
        t.contains(r#"webhook_requests_total{kind="admission",result="allowed"} 1"#)
            && t.contains(r#"webhook_requests_total{kind="admission",result="denied"} 1"#)
    });
    wait_for_metrics(root, &addr, "a hook timeout", long, |t| {
        t.contains(r#"hook_timeouts_total{module="",hook="all"} "#)
    });

    // a watch event after Synchronization, then a watch error (resume from an expired version)
    let watched = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\n  namespace: default\n  labels: {watch: \"yes\"}\n";
    cluster
        .kubectl(&["apply", "--validate=false", "-f", "-"], Some(watched))
        .unwrap();
    wait_for_metrics(root, &addr, "a kube event", long, |t| {
        t.contains("kube_event_duration_seconds_count{")
    });
    cluster.emulator.expire_history();
    cluster.emulator.drop_watches();
    wait_for_metrics(root, &addr, "a watch error", long, |t| {
        t.contains("kubernetes_client_watch_errors_total{error_type=\"expired\"}")
    });

    // a field of the release edited by hand: drift, written back (the object is `enforce`)
    let edit = [
        "patch",
        "configmap",
        "alpha-cm",
        "-n",
        "default",
        "-p",
        r#"{"data":{"a":"2"}}"#,
    ];
    cluster.kubectl(&edit, None).unwrap();
    wait_for_metrics(root, &addr, "a drift restored", long, |t| {
        t.contains(r#"module_drift_restores_total{module="alpha",kind="ConfigMap"} "#)
    });

    // an object of the release deleted: counted as absent, and the module reinstalls it
    cluster
        .kubectl(&["delete", "configmap", "alpha-cm", "-n", "default"], None)
        .unwrap();
    wait_for_metrics(root, &addr, "an absent resource", long, |t| {
        t.contains(r#"modules_absent_resources_total{module="alpha",resource="default/ConfigMap/alpha-cm"} "#)
    });

    // the release left `failed` by someone else's upgrade (once the module reinstalled the
    // object and is idle again): redeployed
    wait_for_metrics(root, &addr, "the object reinstalled", long, |_| {
        let found = cluster.kubectl(&["get", "configmap", "alpha-cm", "-n", "default"], None);
        std::thread::sleep(Duration::from_millis(500));
        found.is_some()
    });
    std::thread::sleep(Duration::from_secs(1));
    fail_the_release(root, &cluster);
    wait_for_metrics(root, &addr, "a redeploy", long, |t| {
        t.contains(r#"modules_helm_release_redeployed_total{module="alpha"} "#)
    });

    // a hook whose --config breaks: the tree is not reloaded, the running one goes on
    hook(
        root,
        "modules/001-alpha/hooks/broken",
        "onStartup: [no]",
        "",
    );
    wait_for_metrics(root, &addr, "a failed tree reload", long, |t| {
        t.contains(r#"tree_reloads_total{result="failed"} "#)
    });

    // the module disabled (and put in maintenance: mm_module_maintenance): its delete fails
    // once (afterDeleteHelm), then succeeds
    let disable = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\n  namespace: default\ndata:\n  alphaEnabled: \"false\"\n  alphaMaintenance: NoResourceReconciliation\n";
    cluster
        .kubectl(&["apply", "--validate=false", "-f", "-"], Some(disable))
        .unwrap();
    let text = wait_for_metrics(root, &addr, "the module delete", long, |t| {
        t.contains("module_delete_errors_total{module=\"alpha\"} 1")
            && t.contains("tasks_queue_head_info{")
            && !samples(t, "addon_operator_tasks_queue_length").is_empty()
    });
    check_every_documented_metric(&text);
    crate::monitoring::check_queries_name_served_metrics(&text);
}

/// A module's `enabled` script is measured as the Go operator measures it: CPU and peak memory
/// in the module hook families under `hook="enabled"`, `binding="enabled"`, with no run time or
/// outcome counters (those count hook runs).
#[test]
fn an_enabled_script_run_is_measured_as_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("modules/values.yaml"),
        "betaEnabled: true\n",
        false,
    );
    let script = "#!/bin/sh\necho true > \"$MODULE_ENABLED_RESULT\"\n";
    write(&root.join("modules/002-beta/enabled"), script, true);
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
    let cluster = Cluster::start(root);
    let _operator = start_operator(root, &cluster, &[]);
    let addr = http_addr(root);
    wait_for_metrics(root, &addr, "ready", Duration::from_secs(60), |_| {
        get(&addr, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    // read after ready: the text read while waiting may be older than the converge
    let text = wait_for_metrics(root, &addr, "the metrics", Duration::from_secs(5), |_| true);
    let labels = [
        r#"module="beta""#,
        r#"hook="enabled""#,
        r#"binding="enabled""#,
        r#"queue="""#,
        r#"activation="""#,
    ];
    let sample = |name: &str| -> Option<f64> {
        let line = text.lines().find(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{'))
                && labels.iter().all(|label| l.contains(label))
        })?;
        line.rsplit(' ').next()?.parse().ok()
    };
    for family in ["user_cpu_seconds_count", "sys_cpu_seconds_count"] {
        let name = format!("addon_operator_module_hook_run_{family}");
        let count = sample(&name);
        assert!(count.is_some_and(|c| c >= 1.0), "{name}: {count:?}\n{text}");
    }
    let rss = sample("addon_operator_module_hook_run_max_rss_bytes");
    assert!(
        rss.is_some_and(|bytes| bytes > 0.0),
        "max_rss_bytes: {rss:?}\n{text}"
    );
    for counted in ["run_seconds_count", "success_total", "errors_total"] {
        let name = format!("addon_operator_module_hook_{counted}");
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with(&name) && l.contains(r#"hook="enabled""#)),
            "{name} counts the enabled script:\n{text}"
        );
    }
}

/// A global hook whose binding cannot start (its kind is not served) is counted, as upstream,
/// in `global_hook_errors_total` under `binding="GlobalEnableKubernetesBindings"` and the hook
/// file's base name, once per failed attempt.
#[test]
fn a_binding_that_cannot_start_is_a_global_hook_error() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let config = r#"{"configVersion":"v1","kubernetes":[{"apiVersion":"stable.example.com/v1","kind":"CronTab"}]}"#;
    let hook = format!("#!/bin/sh\n[ \"$1\" = --config ] && echo '{config}'\nexit 0\n");
    write(&root.join("global-hooks/sub/watch.sh"), &hook, true);
    std::fs::create_dir_all(root.join("modules")).unwrap();
    let cluster = Cluster::start(root);
    let _operator = start_operator(root, &cluster, &[]);
    let addr = http_addr(root);
    let series = r#"addon_operator_global_hook_errors_total{hook="watch.sh",binding="GlobalEnableKubernetesBindings",queue="main",activation="OperatorStartup"} "#;
    let text = wait_for_metrics(
        root,
        &addr,
        "a failed binding start",
        Duration::from_secs(60),
        |t| t.contains(series),
    );
    let count = samples(&text, "addon_operator_global_hook_errors_total");
    assert!(count.iter().any(|c| *c >= 1.0), "{text}");
    assert!(
        !text.contains(r#"global_hook_success_total{hook="watch.sh""#),
        "{text}"
    );
}
