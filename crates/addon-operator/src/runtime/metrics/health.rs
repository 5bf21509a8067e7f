//! Metrics for dashboards and alerts that upstream has no name for: leadership, the converge in
//! progress, the age of the oldest task of each queue, hook timeouts, webhook requests, and the process' own CPU and
//! memory (`process_*`, as Prometheus' Go client exports them) with the cgroup memory limit.

use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::operator::{CounterFamily, GaugeFamily, HistogramFamily, Labels};

/// The families of this file; cloning shares the series.
#[derive(Debug, Clone)]
pub struct HealthFamilies {
    pub leader: Gauge<f64, AtomicU64>,
    pub first_converge_done: Gauge<f64, AtomicU64>,
    pub converge_running: Gauge<f64, AtomicU64>,
    pub queue_oldest_task_age: GaugeFamily,
    pub hook_timeouts: CounterFamily,
    pub webhook_requests: CounterFamily,
    pub webhook_request_seconds: HistogramFamily,
}

fn new_histogram() -> Histogram {
    Histogram::new(super::BUCKETS)
}

impl HealthFamilies {
    /// Creates the families and registers them (and the process collector) under `prefix`.
    pub fn register(registry: &mut Registry, prefix: &str) -> Self {
        let families = Self {
            leader: Gauge::default(),
            first_converge_done: Gauge::default(),
            converge_running: Gauge::default(),
            queue_oldest_task_age: GaugeFamily::default(),
            hook_timeouts: CounterFamily::default(),
            webhook_requests: CounterFamily::default(),
            webhook_request_seconds: HistogramFamily::new_with_constructor(
                new_histogram as fn() -> Histogram,
            ),
        };
        let name = |n: &str| format!("{prefix}{n}");
        registry.register(
            name("leader"),
            "1 while this replica does the work (holds the leader lease with --ha, always without it), else 0",
            families.leader.clone(),
        );
        registry.register(
            name("first_converge_done"),
            "1 once the first converge (the startup one) has finished, else 0",
            families.first_converge_done.clone(),
        );
        registry.register(
            name("converge_running_seconds"),
            "How long the converge in progress has run (0 when no converge runs)",
            families.converge_running.clone(),
        );
        registry.register(
            name("tasks_queue_oldest_task_age_seconds"),
            "Age of the task that has waited longest in a queue (0 when the queue is empty)",
            families.queue_oldest_task_age.clone(),
        );
        registry.register(
            name("hook_timeouts"),
            "Hook runs stopped because they ran longer than --hook-timeout",
            families.hook_timeouts.clone(),
        );
        registry.register(
            name("webhook_requests"),
            "Admission and conversion review requests by kind and result (allowed, denied, failed)",
            families.webhook_requests.clone(),
        );
        registry.register(
            name("webhook_request_seconds"),
            "Wall time of answering one admission or conversion review",
            families.webhook_request_seconds.clone(),
        );
        registry.register_collector(Box::new(ProcessCollector {
            started: SystemTime::now(),
            limit_name: name("memory_limit_bytes"),
        }));
        families
    }
}

/// Labels of `hook_timeouts_total` (`module` empty for global hooks).
pub fn hook_labels(module: Option<&str>, hook: &str) -> Labels {
    vec![
        ("module", module.unwrap_or_default().to_string()),
        ("hook", hook.to_string()),
    ]
}

/// `process_*` read on every scrape, and the memory limit of the operator's cgroup.
#[derive(Debug)]
struct ProcessCollector {
    started: SystemTime,
    limit_name: String,
}

/// What `/proc/self` says, read at scrape time; a field that cannot be read is left out.
#[derive(Debug, Default, PartialEq)]
struct ProcessSample {
    cpu_seconds: Option<f64>,
    resident_bytes: Option<f64>,
    virtual_bytes: Option<f64>,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
}

impl ProcessSample {
    fn read() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).ok();
        let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        Self {
            cpu_seconds: usage.map(|u| seconds(u.user_time()) + seconds(u.system_time())),
            resident_bytes: status_kib(&status, "VmRSS:").map(|k| k * 1024.0),
            virtual_bytes: status_kib(&status, "VmSize:").map(|k| k * 1024.0),
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|d| d.count() as f64),
            max_fds: nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .ok()
                .map(|(soft, _)| soft as f64),
        }
    }
}

/// The number of a `/proc/self/status` line such as `VmRSS:   1234 kB`.
fn status_kib(status: &str, key: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// The memory limit of the cgroup the process is in: cgroup v2 `memory.max` (of its own group,
/// or the root of the namespace), else v1 `memory.limit_in_bytes`; 0 when unlimited (the
/// series is always there; alerts divide by `limit > 0`), `None` when no cgroup says.
fn memory_limit() -> Option<f64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let v2 = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|path| format!("/sys/fs/cgroup{}/memory.max", path.trim_end_matches('/')));
    let candidates = v2.into_iter().chain([
        "/sys/fs/cgroup/memory.max".to_string(),
        "/sys/fs/cgroup/memory/memory.limit_in_bytes".to_string(),
    ]);
    candidates
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .find_map(|text| parse_limit(&text))
}

/// 0 for an unlimited group (`max`, or v1's huge number), the bytes of a limit, `None` for text
/// that is no limit at all.
fn parse_limit(text: &str) -> Option<f64> {
    let text = text.trim();
    if text == "max" {
        return Some(0.0);
    }
    let bytes: u64 = text.parse().ok()?;
    Some(if bytes < 1 << 62 { bytes as f64 } else { 0.0 })
}

fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: Option<f64>,
) -> std::fmt::Result {
    let Some(value) = value else { return Ok(()) };
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        let sample = ProcessSample::read();
        if let Some(cpu) = sample.cpu_seconds {
            let metric = ConstCounter::new(cpu);
            let help = "Total user and system CPU time spent in seconds";
            metric.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                help,
                None,
                metric.metric_type(),
            )?)?;
        }
        let e = &mut encoder;
        gauge(
            e,
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            sample.resident_bytes,
        )?;
        gauge(
            e,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            sample.virtual_bytes,
        )?;
        gauge(
            e,
            "process_open_fds",
            "Number of open file descriptors",
            sample.open_fds,
        )?;
        gauge(
            e,
            "process_max_fds",
            "Maximum number of open file descriptors",
            sample.max_fds,
        )?;
        let started = self.started.duration_since(SystemTime::UNIX_EPOCH).ok();
        gauge(
            e,
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds",
            started.map(|d| d.as_secs_f64()),
        )?;
        gauge(
            e,
            &self.limit_name,
            "Memory limit of the operator's cgroup (0 when unlimited)",
            memory_limit(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_gives_its_kib() {
        let status = "Name:\tx\nVmSize:\t  2048 kB\nVmRSS:\t   512 kB\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(512.0));
        assert_eq!(status_kib(status, "VmSize:"), Some(2048.0));
        assert_eq!(status_kib(status, "VmSwap:"), None);
    }

    #[test]
    fn an_unlimited_cgroup_has_no_limit() {
        assert_eq!(parse_limit("max\n"), Some(0.0));
        assert_eq!(parse_limit("9223372036854771712\n"), Some(0.0));
        assert_eq!(parse_limit("268435456\n"), Some(268_435_456.0));
        assert_eq!(parse_limit("garbage"), None);
    }

    #[test]
    fn the_operator_page_has_leadership_the_converge_and_the_process() {
        let metrics = super::super::Metrics::new("addon_operator_");
        let page = metrics.encode();
        assert!(page.contains("\naddon_operator_leader 0.0\n"), "{page}");
        metrics.leader(true);
        metrics.converge_state(true, std::time::Duration::from_secs(3));
        metrics.queue_oldest_task_age("main", std::time::Duration::from_secs(7));
        metrics.hook_timeout(None, "slow");
        metrics.webhook_request("admission", "denied", std::time::Duration::from_millis(5));
        let page = metrics.encode();
        for line in [
            "addon_operator_leader 1.0",
            "addon_operator_first_converge_done 1.0",
            "addon_operator_converge_running_seconds 3.0",
            "addon_operator_tasks_queue_oldest_task_age_seconds{queue=\"main\"} 7.0",
            "addon_operator_hook_timeouts_total{module=\"\",hook=\"slow\"} 1",
            "addon_operator_webhook_requests_total{kind=\"admission\",result=\"denied\"} 1",
            "addon_operator_webhook_request_seconds_count{kind=\"admission\"} 1",
        ] {
            assert!(page.lines().any(|l| l == line), "{line}:\n{page}");
        }
        for family in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_start_time_seconds",
        ] {
            assert!(
                page.lines().any(|l| l.starts_with(family)),
                "{family}:\n{page}"
            );
        }
    }

    #[test]
    fn this_process_reports_its_cpu_memory_and_files() {
        let sample = ProcessSample::read();
        assert!(sample.resident_bytes.is_some_and(|b| b > 1e5), "{sample:?}");
        assert!(sample.virtual_bytes >= sample.resident_bytes, "{sample:?}");
        assert!(sample.open_fds.is_some_and(|n| n >= 3.0), "{sample:?}");
        assert!(sample.cpu_seconds.is_some_and(|s| s >= 0.0), "{sample:?}");
    }
}
