//! `/metrics` in both text formats, chosen by `Accept`: the classic one linted by `promtool check metrics`, each parsed by the Prometheus Python client's parser for its format (strict for OpenMetrics), and both carrying the same samples.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use addon_operator::runtime::metrics::{
    BindingLabels, ConfigReloadCause, HelmOperation, HookOutcome, HookRunRecord, ModuleInfo,
    QueueHead,
};
use addon_operator_testkit::tools::require_tool;
use serde_json::Value;

use crate::client::get_accepting;
use crate::server::{Running, start};

/// What Prometheus 2 and 3 send when scraping.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Debian's Python, whose `python3-prometheus-client` the parsers come from.
const PYTHON: &str = "/usr/bin/python3";

const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families as classic
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
parse = openmetrics if sys.argv[1] == "openmetrics" else classic
samples = [[f.name, f.type, s.name, sorted(s.labels.items()), float(s.value)]
           for f in parse(sys.stdin.read()) for s in f.samples]
print(json.dumps(sorted(samples, key=json.dumps)))
"#;

/// Every family of the operator's registry with a series.
fn record_everything(server: &Running) {
    let m = &server.metrics;
    for module in [Some("alpha"), None] {
        m.hook_run(&HookRunRecord {
            hook: "hooks/h.sh",
            module,
            binding: "every-minute",
            queue: "main",
            activation: "Schedule",
            duration: Duration::from_millis(30),
            user_cpu: Duration::from_millis(10),
            sys_cpu: Duration::from_millis(5),
            max_rss_bytes: 4096,
            outcome: HookOutcome::Success,
        });
    }
    m.binding_counts([(Some("alpha"), "hooks/h.sh", 2)].into_iter());
    m.config_values_error();
    m.config_reload(ConfigReloadCause::External);
    m.tree_reload("applied");
    m.task_failure("main", "hook");
    m.module_run("alpha", "Schedule", Duration::from_millis(40), false);
    m.module_delete("alpha", false);
    m.module_helm("alpha", "Schedule", Duration::from_millis(20));
    m.helm_operation(
        "alpha",
        "Schedule",
        HelmOperation::Upgrade,
        Duration::from_millis(9),
    );
    m.absent_resources("alpha", "Deployment/web", 2);
    m.helm_release_redeployed("alpha");
    m.modules_info(&[ModuleInfo {
        module: "alpha".into(),
        enabled: true,
        critical: false,
    }]);
    m.converge("OperatorStartup", Duration::from_millis(1500));
    let binding = BindingLabels {
        module: "alpha",
        hook: "hooks/h.sh",
        binding: "pods",
        queue: "main",
    };
    m.task_wait_in_queue(&binding, Duration::from_millis(3));
    m.queue_length("main", 2);
    m.queue_heads(&[QueueHead {
        queue: "main".into(),
        task_type: "ModuleRun".into(),
        module: "alpha".into(),
        hook: String::new(),
    }]);
    m.queue_action("main", "AddLast", Duration::from_micros(50));
    m.live_tick();
    m.kube_snapshot_objects(&binding, "Pod", 3);
    m.kube_jq_filter(&binding, "Pod", Duration::from_micros(80));
    m.kube_event(&binding, "Pod", Duration::from_micros(900));
    m.kube_watch_error("expired");
}

/// Runs `program` with `text` on stdin; its status, stdout and stderr.
fn pipe(program: &str, args: &[&str], text: &str) -> (bool, String, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// Whether Debian's Python with `prometheus_client` is there; under `CI` its absence fails.
fn require_python_client() -> bool {
    let found = Command::new(PYTHON)
        .args(["-c", "import prometheus_client"])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{PYTHON} with prometheus_client is required (run scripts/install-tools)"
        );
        eprintln!("skipping: {PYTHON} with prometheus_client not found");
    }
    found
}

/// The samples of `text` as the Python client's parser for `format` reads them.
fn parsed(format: &str, text: &str) -> Value {
    let (ok, out, err) = pipe(PYTHON, &["-c", PARSE, format], text);
    assert!(ok, "the {format} parser refused the page: {err}\n{text}");
    serde_json::from_str(&out).unwrap()
}

#[tokio::test]
async fn without_asking_a_client_gets_the_classic_format_promtool_accepts() {
    let server = start().await;
    record_everything(&server);
    for accept in [None, Some("text/plain"), Some("*/*")] {
        let response = get_accepting(server.addr, "/metrics", accept).await;
        assert_eq!(
            response.header("content-type"),
            Some("text/plain; version=0.0.4; charset=utf-8"),
            "{accept:?}"
        );
        let body = &response.body;
        assert!(
            !body.contains("# EOF") && !body.contains(" unknown\n"),
            "{body}"
        );
        assert!(body.contains("\n# TYPE addon_operator_config_values_errors_total counter\n"));
        assert!(
            body.contains("\naddon_operator_config_values_errors_total 1\n"),
            "{body}"
        );
        assert!(
            body.contains("\n# TYPE addon_operator_live_ticks untyped\n"),
            "{body}"
        );
        assert!(body.contains("\naddon_operator_live_ticks 1.0\n"), "{body}");
        assert!(!body.contains("_created"), "{body}");
    }
    if !require_tool("promtool") {
        return;
    }
    let classic = get_accepting(server.addr, "/metrics", None).await.body;
    let (_, out, err) = pipe("promtool", &["check", "metrics"], &classic);
    // the one lint problem is a name the Go operator exposes (dashboards query it)
    let upstream_name = "addon_operator_binding_count non-histogram and non-summary metrics \
        should not have \"_count\" suffix";
    let problems: Vec<&str> = (out.lines().chain(err.lines()))
        .filter(|l| !l.trim().is_empty() && *l != upstream_name)
        .collect();
    assert!(
        problems.is_empty(),
        "promtool check metrics:\n{out}{err}\n{classic}"
    );
}

#[tokio::test]
async fn both_formats_parse_strictly_and_carry_the_same_samples() {
    let server = start().await;
    record_everything(&server);
    let openmetrics = get_accepting(server.addr, "/metrics", Some(PROMETHEUS_ACCEPT)).await;
    assert_eq!(
        openmetrics.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(openmetrics.body.ends_with("# EOF\n"));
    if !require_python_client() {
        return;
    }
    let classic = get_accepting(server.addr, "/metrics", None).await.body;
    // `process_*` are read from /proc at each scrape: the same samples, not the same values
    let settled = |mut samples: serde_json::Value| {
        for sample in samples.as_array_mut().unwrap() {
            if sample[0].as_str().unwrap().starts_with("process_") {
                sample[4] = serde_json::Value::Null;
            }
        }
        samples
    };
    let from_openmetrics = settled(parsed("openmetrics", &openmetrics.body));
    let from_classic = settled(parsed("classic", &classic));
    assert!(
        from_openmetrics.as_array().unwrap().len() > 100,
        "{from_openmetrics}"
    );
    assert_eq!(from_classic, from_openmetrics);
}
