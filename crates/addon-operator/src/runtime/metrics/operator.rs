//! The operator's own metric families (upstream names and labels) and their registration.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};

use super::exact_counter::ExactNameCounter;

/// Label pairs of one series, in upstream's label order.
pub type Labels = Vec<(&'static str, String)>;

/// Upstream's buckets for every addon-operator histogram (seconds).
pub const BUCKETS: [f64; 14] = [
    0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// Upstream's (shell-operator's) buckets for `tasks_queue_action_duration_seconds`: queue
/// operations are in-memory, so they start at 100 µs and end at 0.5 s.
pub const QUEUE_ACTION_BUCKETS: [f64; 13] = [
    0.0, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
];

pub type CounterFamily = Family<Labels, Counter<u64>>;
pub type SecondsCounterFamily = Family<Labels, Counter<f64, AtomicU64>>;
pub type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;
pub type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

fn new_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

fn histogram_family() -> HistogramFamily {
    Family::new_with_constructor(new_histogram as fn() -> Histogram)
}

fn new_queue_action_histogram() -> Histogram {
    Histogram::new(QUEUE_ACTION_BUCKETS)
}

/// The metrics of one kind of hook (global or module): run time, CPU, memory, outcomes.
#[derive(Debug, Clone)]
pub struct HookRunFamilies {
    pub run_seconds: HistogramFamily,
    pub user_cpu_seconds: HistogramFamily,
    pub sys_cpu_seconds: HistogramFamily,
    pub max_rss_bytes: GaugeFamily,
    pub allowed_errors: CounterFamily,
    pub errors: CounterFamily,
    pub success: CounterFamily,
}

impl HookRunFamilies {
    /// One run's CPU and peak memory under `labels`.
    pub fn resources(&self, labels: &Labels, user: Duration, sys: Duration, max_rss_bytes: u64) {
        let user_cpu = self.user_cpu_seconds.get_or_create(labels);
        user_cpu.observe(user.as_secs_f64());
        let sys_cpu = self.sys_cpu_seconds.get_or_create(labels);
        sys_cpu.observe(sys.as_secs_f64());
        // 0: no sample saw the process (see `ResourceUsage::max_rss_kb`); unknown, not zero.
        if max_rss_bytes > 0 {
            let rss = self.max_rss_bytes.get_or_create(labels);
            rss.set(max_rss_bytes as f64);
        }
    }

    fn new() -> Self {
        Self {
            run_seconds: histogram_family(),
            user_cpu_seconds: histogram_family(),
            sys_cpu_seconds: histogram_family(),
            max_rss_bytes: GaugeFamily::default(),
            allowed_errors: CounterFamily::default(),
            errors: CounterFamily::default(),
            success: CounterFamily::default(),
        }
    }

    fn register(&self, r: &mut Registrar<'_>, kind: &str) {
        let what = format!("{kind} hook runs");
        r.add(
            &format!("{kind}_hook_run_seconds"),
            &format!("Wall time of {what}"),
            &self.run_seconds,
        );
        r.add(
            &format!("{kind}_hook_run_user_cpu_seconds"),
            &format!("User CPU time of {what}"),
            &self.user_cpu_seconds,
        );
        r.add(
            &format!("{kind}_hook_run_sys_cpu_seconds"),
            &format!("System CPU time of {what}"),
            &self.sys_cpu_seconds,
        );
        r.add(
            &format!("{kind}_hook_run_max_rss_bytes"),
            &format!("Peak resident memory of the last of {what}"),
            &self.max_rss_bytes,
        );
        r.add(
            &format!("{kind}_hook_allowed_errors"),
            &format!("Failed {what} with allowFailure: true"),
            &self.allowed_errors,
        );
        r.add(
            &format!("{kind}_hook_errors"),
            &format!("Failed {what}"),
            &self.errors,
        );
        r.add(
            &format!("{kind}_hook_success"),
            &format!("Successful {what}"),
            &self.success,
        );
    }
}

/// Registers metrics under `<prefix><name>`. Counters are registered without `_total`:
/// the OpenMetrics encoder appends it.
struct Registrar<'a> {
    registry: &'a mut Registry,
    prefix: &'a str,
}

impl Registrar<'_> {
    fn add(&mut self, name: &str, help: &str, metric: &(impl Metric + Clone)) {
        self.registry
            .register(format!("{}{name}", self.prefix), help, metric.clone());
    }
}

/// Every operator metric family; cloning shares the series.
#[derive(Debug, Clone)]
pub struct OperatorFamilies {
    pub binding_count: GaugeFamily,
    pub config_values_errors: Counter<u64>,
    pub config_reloads: CounterFamily,
    pub tree_reloads: CounterFamily,
    pub task_failures: CounterFamily,
    pub modules_discover_errors: Counter<u64>,
    pub module_delete_errors: CounterFamily,
    pub module_run_seconds: HistogramFamily,
    pub module_run_errors: CounterFamily,
    pub helm_release_redeployed: CounterFamily,
    pub absent_resources: CounterFamily,
    pub module_info: GaugeFamily,
    pub module_maintenance: GaugeFamily,
    pub module_hooks: HookRunFamilies,
    pub global_hooks: HookRunFamilies,
    pub convergence_seconds: Family<Labels, ExactNameCounter>,
    pub convergence: CounterFamily,
    pub module_helm_seconds: HistogramFamily,
    pub helm_operation_seconds: HistogramFamily,
    pub task_wait_in_queue_seconds: SecondsCounterFamily,
    pub queue_length: GaugeFamily,
    pub queue_head_info: GaugeFamily,
    pub live_ticks: ExactNameCounter,
    pub queue_action_seconds: HistogramFamily,
    pub kube_snapshot_objects: GaugeFamily,
    pub kube_jq_filter_seconds: HistogramFamily,
    pub kube_event_seconds: HistogramFamily,
    pub kube_watch_errors: CounterFamily,
    pub admin_events: CounterFamily,
    pub release: ReleaseFamilies,
}

/// Drift and health of modules' releases (the release guard).
#[derive(Debug, Clone)]
pub struct ReleaseFamilies {
    pub drift: CounterFamily,
    pub drift_restores: CounterFamily,
    pub drifted_objects: GaugeFamily,
    pub ready: GaugeFamily,
}

impl OperatorFamilies {
    /// Creates the families and registers them in `registry` under `prefix`.
    pub fn register(registry: &mut Registry, prefix: &str) -> Self {
        let families = Self::new();
        let mut r = Registrar { registry, prefix };
        families.register_modules(&mut r);
        families.module_hooks.register(&mut r, "module");
        families.global_hooks.register(&mut r, "global");
        families.register_converge_and_helm(&mut r);
        families.register_queues(&mut r);
        families.register_kube(&mut r);
        families.register_release(&mut r);
        families
    }

    fn new() -> Self {
        Self {
            binding_count: GaugeFamily::default(),
            config_values_errors: Counter::default(),
            config_reloads: CounterFamily::default(),
            tree_reloads: CounterFamily::default(),
            task_failures: CounterFamily::default(),
            modules_discover_errors: Counter::default(),
            module_delete_errors: CounterFamily::default(),
            module_run_seconds: histogram_family(),
            module_run_errors: CounterFamily::default(),
            helm_release_redeployed: CounterFamily::default(),
            absent_resources: CounterFamily::default(),
            module_info: GaugeFamily::default(),
            module_maintenance: GaugeFamily::default(),
            module_hooks: HookRunFamilies::new(),
            global_hooks: HookRunFamilies::new(),
            convergence_seconds: Family::default(),
            convergence: CounterFamily::default(),
            module_helm_seconds: histogram_family(),
            helm_operation_seconds: histogram_family(),
            task_wait_in_queue_seconds: SecondsCounterFamily::default(),
            queue_length: GaugeFamily::default(),
            queue_head_info: GaugeFamily::default(),
            live_ticks: ExactNameCounter::default(),
            queue_action_seconds: Family::new_with_constructor(
                new_queue_action_histogram as fn() -> Histogram,
            ),
            kube_snapshot_objects: GaugeFamily::default(),
            kube_jq_filter_seconds: histogram_family(),
            kube_event_seconds: histogram_family(),
            kube_watch_errors: CounterFamily::default(),
            admin_events: CounterFamily::default(),
            release: ReleaseFamilies {
                drift: CounterFamily::default(),
                drift_restores: CounterFamily::default(),
                drifted_objects: GaugeFamily::default(),
                ready: GaugeFamily::default(),
            },
        }
    }

    fn register_release(&self, r: &mut Registrar<'_>) {
        let release = &self.release;
        r.add(
            "module_drift",
            "Changes seen to fields a module's release sets, by module, kind and mode",
            &release.drift,
        );
        r.add(
            "module_drift_restores",
            "Drifted objects written back (enforce mode), by module and kind",
            &release.drift_restores,
        );
        r.add(
            "module_drifted_objects",
            "Objects of a module's release whose fields differ from the release now",
            &release.drifted_objects,
        );
        r.add(
            "module_ready",
            "1 when every object of the module's release is ready, 0 otherwise",
            &release.ready,
        );
    }

    fn register_modules(&self, r: &mut Registrar<'_>) {
        r.add("binding_count", "Bindings of a hook", &self.binding_count);
        r.add(
            "config_values_errors",
            "Checks that found invalid config values",
            &self.config_values_errors,
        );
        r.add(
            "config_reloads",
            "Changes seen on the config store: own_write echoes (ignored) and external edits",
            &self.config_reloads,
        );
        r.add(
            "tree_reloads",
            "Module tree reloads (--reload-tree) by result: applied, or failed (the running tree goes on)",
            &self.tree_reloads,
        );
        r.add(
            "task_failures",
            "Failed task runs by queue and by the kind of what failed (hook, helm, kube, config, values, module)",
            &self.task_failures,
        );
        r.add(
            "modules_discover_errors",
            "Failed module discoveries",
            &self.modules_discover_errors,
        );
        r.add(
            "module_delete_errors",
            "Failed module deletions",
            &self.module_delete_errors,
        );
        r.add(
            "module_run_seconds",
            "Wall time of module runs",
            &self.module_run_seconds,
        );
        r.add(
            "module_run_errors",
            "Failed module runs",
            &self.module_run_errors,
        );
        r.add(
            "modules_helm_release_redeployed",
            "Helm releases installed again because resources were missing",
            &self.helm_release_redeployed,
        );
        r.add(
            "modules_absent_resources",
            "Resources of a module's release found missing",
            &self.absent_resources,
        );
        r.add(
            "mm_module_info",
            "One series per known module: enabled and critical",
            &self.module_info,
        );
        r.add(
            "mm_module_maintenance",
            "1 for each module in maintenance mode, by state",
            &self.module_maintenance,
        );
    }

    fn register_converge_and_helm(&self, r: &mut Registrar<'_>) {
        r.add(
            "convergence_seconds",
            "Total wall time spent converging modules",
            &self.convergence_seconds,
        );
        r.add(
            "convergence",
            "Finished module converges",
            &self.convergence,
        );
        r.add(
            "module_helm_seconds",
            "Wall time of a module's Helm step",
            &self.module_helm_seconds,
        );
        r.add(
            "helm_operation_seconds",
            "Wall time of one Helm operation",
            &self.helm_operation_seconds,
        );
    }

    fn register_queues(&self, r: &mut Registrar<'_>) {
        r.add(
            "task_wait_in_queue_seconds",
            "Total time tasks waited in a queue before they ran",
            &self.task_wait_in_queue_seconds,
        );
        r.add("tasks_queue_length", "Tasks in a queue", &self.queue_length);
        r.add(
            "tasks_queue_head_info",
            "The task at the head of each queue",
            &self.queue_head_info,
        );
        r.add(
            "live_ticks",
            "Grows by 1 every 10 seconds while the operator lives",
            &self.live_ticks,
        );
        r.add(
            "tasks_queue_action_duration_seconds",
            "Wall time of a queue operation",
            &self.queue_action_seconds,
        );
    }

    fn register_kube(&self, r: &mut Registrar<'_>) {
        r.add(
            "kube_snapshot_objects",
            "Objects cached for a kubernetes binding",
            &self.kube_snapshot_objects,
        );
        r.add(
            "kube_jq_filter_duration_seconds",
            "Wall time of applying a binding's jqFilter",
            &self.kube_jq_filter_seconds,
        );
        r.add(
            "kube_event_duration_seconds",
            "Wall time of handling one Kubernetes event",
            &self.kube_event_seconds,
        );
        r.add(
            "kubernetes_client_watch_errors",
            "Watch errors of the Kubernetes client",
            &self.kube_watch_errors,
        );
        r.add(
            "admin_events",
            "Kubernetes Events for admins by result: created, patched (an identical one counted), dropped_queue_full, dropped_spam, failed",
            &self.admin_events,
        );
    }
}
