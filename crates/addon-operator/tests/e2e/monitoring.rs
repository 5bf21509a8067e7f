//! The Grafana dashboard and the Prometheus alerts in `deploy/monitoring` (and the chart): every
//! query parses (`promtool check rules`), names only metrics the operator serves (checked on the
//! scrape of `every_documented_metric_is_recorded`), the alerts fire and stay quiet on the series
//! of `alerts.test.yaml` (`promtool test rules`), the chart renders both only when asked, and a
//! real Prometheus scrapes the operator and sees its hook-run counter move.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::cluster::{Cluster, get, http_addr, start_operator, wait_for_metrics};
use crate::support::{Running, path_with_tools, require_tool, write};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dashboard() -> Value {
    let path = repo().join("deploy/monitoring/grafana-dashboard.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn alerts() -> Value {
    let path = repo().join("deploy/monitoring/alerts.yaml");
    addon_core::yaml::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The panels of the dashboard (rows left out).
fn panels(dashboard: &Value) -> Vec<&Value> {
    let all = dashboard["panels"].as_array().unwrap();
    all.iter().filter(|p| p["type"] != "row").collect()
}

/// `(panel title, PromQL)` of every query of the dashboard, with Grafana's variables replaced by
/// what Grafana would put there (`$__rate_interval` a duration, `$job` a regex); the variables'
/// own queries (`label_values(SELECTOR, label)`) give their selector.
fn dashboard_queries() -> Vec<(String, String)> {
    let dashboard = dashboard();
    let grafana = |expr: &str| {
        expr.replace("$__rate_interval", "5m")
            .replace("$__interval", "1m")
            .replace("$job", ".*")
            .replace("$instance", ".*")
    };
    let mut out = Vec::new();
    for panel in panels(&dashboard) {
        for target in panel["targets"].as_array().unwrap() {
            let title = panel["title"].as_str().unwrap().to_string();
            out.push((title, grafana(target["expr"].as_str().unwrap())));
        }
    }
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        let Some(query) = var["query"]["query"].as_str() else {
            continue;
        };
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.rsplit_once(','))
            .map(|(selector, _)| selector.to_string())
            .unwrap();
        out.push((format!("variable {}", var["name"]), grafana(&inner)));
    }
    assert!(out.len() > 25, "{out:?}");
    out
}

/// `(alert name, PromQL)` of every rule of the alerts file.
fn alert_queries() -> Vec<(String, String)> {
    let rules = alerts();
    let mut out = Vec::new();
    for group in rules["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let name = rule["alert"].as_str().unwrap().to_string();
            out.push((name, rule["expr"].as_str().unwrap().to_string()));
        }
    }
    out
}

/// The metric names a PromQL expression selects: identifiers that are not functions, keywords,
/// label names (in `{...}`, `by (...)`, `on (...)`, ...), strings, numbers or durations.
fn metric_names(expr: &str) -> BTreeSet<String> {
    const KEYWORDS: [&str; 13] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "inf",
        "nan",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    let mut skip_group = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '{' || c == '[' || (c == '(' && skip_group) {
            let close = match c {
                '{' => '}',
                '[' => ']',
                _ => ')',
            };
            while i < chars.len() && chars[i] != close {
                i += 1;
            }
            i += 1;
            skip_group = false;
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let rest: String = chars[i..].iter().collect();
            let rest = rest.trim_start();
            let next = rest.chars().next();
            let grouped = ["by", "without"].iter().any(|k| {
                rest.strip_prefix(k)
                    .is_some_and(|after| after.trim_start().starts_with('('))
            });
            if grouped {
                // an aggregation: `sum by (labels) (...)`
            } else if KEYWORDS.contains(&word.to_ascii_lowercase().as_str()) {
                skip_group = [
                    "by",
                    "without",
                    "on",
                    "ignoring",
                    "group_left",
                    "group_right",
                ]
                .contains(&word.as_str());
            } else if next != Some('(') {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn metric_names_are_read_from_promql() {
    let names = metric_names(
        r#"histogram_quantile(0.95, sum by (module, le) (rate(a_seconds_bucket{job=~"x|y", le!="1"}[5m]))) / on (job) group_left (x) b > 0.5 or absent(c) unless d offset 5m"#,
    );
    let expected: BTreeSet<String> = ["a_seconds_bucket", "b", "c", "d"].map(String::from).into();
    assert_eq!(names, expected);
}

/// Sample names in a `/metrics` page (classic text format).
fn served_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(String::from)
        .collect()
}

/// Every metric the dashboard's and the alerts' queries name is in `text`, a scrape of an
/// operator that went through every path (see `every_documented_metric_is_recorded`).
pub fn check_queries_name_served_metrics(text: &str) {
    let served = served_names(text);
    let mut missing = Vec::new();
    for (what, expr) in dashboard_queries().into_iter().chain(alert_queries()) {
        for name in metric_names(&expr) {
            if !served.contains(&name) {
                missing.push(format!("{what}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "queries name metrics the operator does not serve:\n{}\n\nserved: {served:?}",
        missing.join("\n")
    );
}

fn promtool(args: &[&str]) -> Output {
    Command::new("promtool")
        .args(args)
        .env("PATH", path_with_tools())
        .current_dir(repo().join("deploy/monitoring"))
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A rules file with one recording rule per query (promtool parses every `expr`).
fn recording_rules(queries: &[(String, String)]) -> String {
    let mut file = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, (_, expr)) in queries.iter().enumerate() {
        let expr = serde_json::to_string(expr).unwrap();
        file.push_str(&format!(
            "      - record: dashboard:query_{i}\n        expr: {expr}\n"
        ));
    }
    file
}

/// The dashboard is a Grafana model (schema 39, a `datasource` variable every query uses), and
/// `docs/metrics.md` describes each of its panels.
#[test]
fn the_dashboard_uses_the_datasource_variable_and_every_panel_is_documented() {
    let dashboard = dashboard();
    assert_eq!(dashboard["schemaVersion"], 39);
    let vars = dashboard["templating"]["list"].as_array().unwrap();
    let datasource = vars.iter().find(|v| v["name"] == "datasource").unwrap();
    assert_eq!(datasource["type"], "datasource");
    assert_eq!(datasource["query"], "prometheus");
    let doc = std::fs::read_to_string(repo().join("docs/metrics.md")).unwrap();
    let mut problems = Vec::new();
    let mut ids = BTreeSet::new();
    for panel in panels(&dashboard) {
        let title = panel["title"].as_str().unwrap();
        assert!(ids.insert(panel["id"].as_u64().unwrap()), "duplicate id");
        if panel["datasource"]["uid"] != "${datasource}" {
            problems.push(format!("{title}: not on ${{datasource}}"));
        }
        for target in panel["targets"].as_array().unwrap() {
            if target["datasource"]["uid"] != "${datasource}" {
                problems.push(format!("{title}: a query not on ${{datasource}}"));
            }
        }
        if !doc.contains(&format!("| **{title}** |")) {
            problems.push(format!("{title}: not described in docs/metrics.md"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every query of the dashboard parses as PromQL (`promtool check rules` on recording rules
/// made of them); a broken query would not.
#[test]
fn dashboard_queries_parse_with_promtool() {
    if !require_tool("promtool") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let queries = dashboard_queries();
    let good = dir.path().join("dashboard-rules.yaml");
    std::fs::write(&good, recording_rules(&queries)).unwrap();
    let out = promtool(&["check", "rules", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("SUCCESS: {} rules found", queries.len())),
        "{}",
        text(&out)
    );
    let broken = [("broken".to_string(), "sum by (x (rate(y[5m]))".to_string())];
    let bad = dir.path().join("broken-rules.yaml");
    std::fs::write(&bad, recording_rules(&broken)).unwrap();
    let out = promtool(&["check", "rules", bad.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
}

/// `promtool check rules` accepts the alerts, and `promtool test rules` passes: each alert fires
/// on some series of alerts.test.yaml and is expected quiet on others.
#[test]
fn alert_rules_fire_and_stay_quiet_under_promtool() {
    if !require_tool("promtool") {
        return;
    }
    let out = promtool(&["check", "rules", "alerts.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = promtool(&["test", "rules", "alerts.test.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("SUCCESS"), "{}", text(&out));

    let path = repo().join("deploy/monitoring/alerts.test.yaml");
    let tests = addon_core::yaml::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases: Vec<&Value> = (tests["tests"].as_array().unwrap().iter())
        .flat_map(|t| t["alert_rule_test"].as_array().unwrap())
        .collect();
    for (alert, _) in alert_queries() {
        let of = |firing: bool| {
            cases.iter().any(|c| {
                c["alertname"] == alert.as_str()
                    && c["exp_alerts"].as_array().unwrap().is_empty() != firing
            })
        };
        assert!(
            of(true) && of(false),
            "{alert}: needs a firing and a quiet case"
        );
    }
}

fn helm_template(args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("helm")
        .args(["template", "ao", "deploy/helm/addon-operator", "-n", "ops"])
        .args(args)
        .env("HOME", home.path())
        .env("PATH", path_with_tools())
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The rendered objects of a `helm template` output.
fn objects(rendered: &str) -> Vec<Value> {
    rendered
        .split("\n---")
        .filter_map(|doc| addon_core::yaml::parse(doc).ok())
        .filter(|v| v.is_object())
        .collect()
}

/// `helm template` renders the dashboard ConfigMap (with the Grafana sidecar's label) and the
/// PrometheusRule only when enabled, each with the content of deploy/monitoring.
#[test]
fn the_chart_renders_the_dashboard_and_the_alerts_only_when_enabled() {
    if !require_tool("helm") {
        return;
    }
    let kinds = |rendered: &str| -> Vec<String> {
        objects(rendered)
            .iter()
            .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
            .collect()
    };
    let default = kinds(&helm_template(&[]));
    assert!(
        !default
            .iter()
            .any(|k| k.contains("dashboard") || k.contains("PrometheusRule")),
        "{default:?}"
    );
    let rendered = helm_template(&[
        "--set",
        "dashboards.enabled=true,prometheusRule.enabled=true",
        "--set",
        "prometheusRule.labels.release=kube-prometheus-stack",
    ]);
    let all = objects(&rendered);
    let map = all
        .iter()
        .find(|o| {
            o["kind"] == "ConfigMap" && o["metadata"]["name"] == "ao-addon-operator-dashboard"
        })
        .unwrap_or_else(|| panic!("no dashboard ConfigMap:\n{rendered}"));
    assert_eq!(map["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(map["metadata"]["namespace"], "ops");
    let json: Value =
        serde_json::from_str(map["data"]["addon-operator.json"].as_str().unwrap()).unwrap();
    assert_eq!(json, dashboard());
    let rule = all
        .iter()
        .find(|o| o["kind"] == "PrometheusRule")
        .unwrap_or_else(|| panic!("no PrometheusRule:\n{rendered}"));
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(
        rule["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    assert_eq!(rule["spec"], alerts());
}

/// A global hook that runs every second and writes nothing.
const TICKING_HOOK: &str = "#!/usr/bin/env bash\nif [[ \"${1:-}\" == \"--config\" ]]; then\n  echo '{\"configVersion\":\"v1\",\"schedule\":[{\"name\":\"tick\",\"crontab\":\"* * * * * *\"}]}'\n  exit 0\nfi\n";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `s` with everything but unreserved characters percent-encoded (a URL query value).
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of an instant query's single sample, if the answer has one.
fn query(prometheus: &str, promql: &str) -> Option<f64> {
    let path = format!("/api/v1/query?query={}", url_encode(promql));
    let (code, body) = get(prometheus, &path)?;
    let answer: Value = serde_json::from_str(&body).ok().filter(|_| code == 200)?;
    answer["data"]["result"][0]["value"][1]
        .as_str()?
        .parse()
        .ok()
}

/// Debian's Prometheus (on loopback, a free port, a temporary storage directory) scrapes the
/// operator on the emulated cluster every second: the target is up, and the hook-run counter
/// it stores grows after the hook runs again. The exposition parses in the real scraper.
#[test]
fn prometheus_scrapes_the_operator_and_sees_hook_runs() {
    if !(require_tool("prometheus") && require_tool("helm")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("global-hooks/tick"), TICKING_HOOK, true);
    std::fs::create_dir_all(root.join("modules")).unwrap();
    let cluster = Cluster::start(root);
    let _operator = start_operator(root, &cluster, &[]);
    let operator = http_addr(root);
    wait_for_metrics(
        root,
        &operator,
        "a hook run",
        Duration::from_secs(60),
        |t| t.contains("addon_operator_global_hook_run_seconds_count{"),
    );

    let port = free_port();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: addon-operator\n    static_configs:\n      - targets: ['{operator}']\n"
    );
    write(&root.join("prometheus.yml"), &config, false);
    let log = root.join("prometheus.log");
    let child = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            root.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            root.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .env("PATH", path_with_tools())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _prometheus = Running(child);
    let prometheus = format!("127.0.0.1:{port}");
    let runs = "sum(addon_operator_global_hook_run_seconds_count{job=\"addon-operator\"})";
    let context = || std::fs::read_to_string(&log).unwrap_or_default();
    let limit = Duration::from_secs(60);
    let first = std::cell::Cell::new(0.0);
    addon_operator_testkit::wait::wait_for(
        "Prometheus to scrape the operator",
        limit,
        || {
            let up = query(&prometheus, "up{job=\"addon-operator\"}") == Some(1.0);
            let seen = query(&prometheus, runs).filter(|n| *n > 0.0);
            seen.inspect(|n| first.set(*n)).is_some() && up
        },
        context,
    );
    addon_operator_testkit::wait::wait_for(
        "the hook-run counter to grow in Prometheus",
        limit,
        || query(&prometheus, runs).is_some_and(|n| n > first.get()),
        context,
    );
    // the process metrics and a gauge of ours are stored too
    assert!(query(&prometheus, "process_resident_memory_bytes").is_some_and(|b| b > 1e6));
    assert_eq!(query(&prometheus, "addon_operator_leader"), Some(1.0));
}
