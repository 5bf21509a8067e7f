//! Prometheus metrics: the operator's own (upstream names, `/metrics`) and those hooks write
//! (`/metrics/hooks`), behind one [`Metrics`] handle the runtime shares in an `Arc`.
//!
//! Every recording method takes plain values and never fails; `docs/metrics.md` lists each metric.

mod exact_counter;
mod exposition;
mod health;
mod hooks;
mod operator;
mod records;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use addon_core::hook_output::metrics::MetricOperation;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

pub use exposition::{Exposition, OPENMETRICS_CONTENT_TYPE, PROMETHEUS_TEXT_CONTENT_TYPE};
pub use hooks::HookMetricsError;
pub use operator::{BUCKETS, QUEUE_ACTION_BUCKETS};
pub use records::{
    BindingLabels, ConfigReloadCause, HelmOperation, HookOutcome, HookRunRecord, ModuleInfo,
    QueueHead,
};

use hooks::HookMetricsStore;
use operator::{Labels, OperatorFamilies};

/// Upstream's default metric name prefix (`--prometheus-metrics-prefix`).
pub const DEFAULT_PREFIX: &str = "addon_operator_";

/// How often `live_ticks` grows.
pub const LIVE_TICK_INTERVAL: Duration = Duration::from_secs(10);

/// The operator's metrics registry and the hook metrics store. `Send + Sync`; share it in an `Arc`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    families: OperatorFamilies,
    health: health::HealthFamilies,
    hooks: Mutex<HookMetricsStore>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(DEFAULT_PREFIX)
    }
}

fn labels<const N: usize>(pairs: [(&'static str, &str); N]) -> Labels {
    pairs.into_iter().map(|(k, v)| (k, v.to_string())).collect()
}

fn bool_label(value: bool) -> &'static str {
    if value { "true" } else { "false" }
}

impl Metrics {
    /// All operator metrics named `<prefix><name>` (upstream: `addon_operator_` + name).
    pub fn new(prefix: &str) -> Self {
        let mut registry = Registry::default();
        let families = OperatorFamilies::register(&mut registry, prefix);
        let health = health::HealthFamilies::register(&mut registry, prefix);
        Self {
            registry,
            families,
            health,
            hooks: Mutex::new(HookMetricsStore::default()),
        }
    }

    /// After a module's `enabled` script ran: its CPU and memory, as the Go operator records
    /// them (the module hook families with `hook` and `binding` "enabled", `queue` and
    /// `activation` empty; no run time or outcome counters).
    pub fn enabled_script(&self, module: &str, user: Duration, sys: Duration, max_rss_bytes: u64) {
        let labels = labels([
            ("module", module),
            ("hook", "enabled"),
            ("binding", "enabled"),
            ("queue", ""),
            ("activation", ""),
        ]);
        let families = &self.families.module_hooks;
        families.resources(&labels, user, sys, max_rss_bytes);
    }

    /// After a global or module hook run: run time, CPU, memory and the outcome counter.
    pub fn hook_run(&self, run: &HookRunRecord<'_>) {
        let (families, labels) = match run.module {
            Some(module) => (
                &self.families.module_hooks,
                labels([
                    ("module", module),
                    ("hook", run.hook),
                    ("binding", run.binding),
                    ("queue", run.queue),
                    ("activation", run.activation),
                ]),
            ),
            None => (
                &self.families.global_hooks,
                labels([
                    ("hook", run.hook),
                    ("binding", run.binding),
                    ("queue", run.queue),
                    ("activation", run.activation),
                ]),
            ),
        };
        families
            .run_seconds
            .get_or_create(&labels)
            .observe(run.duration.as_secs_f64());
        families.resources(&labels, run.user_cpu, run.sys_cpu, run.max_rss_bytes);
        // As upstream: every run adds to all three outcome counters (0 to two of them), so a
        // hook that never failed has `*_errors_total 0` rather than no series.
        for (family, outcome) in [
            (&families.success, HookOutcome::Success),
            (&families.errors, HookOutcome::Failure),
            (&families.allowed_errors, HookOutcome::AllowedFailure),
        ] {
            let counter = family.get_or_create(&labels);
            if run.outcome == outcome {
                counter.inc();
            }
        }
    }

    /// After loading the tree: how many bindings each hook has (module `None` for global
    /// hooks); hooks not listed leave the family.
    pub fn binding_counts<'a>(
        &self,
        hooks: impl Iterator<Item = (Option<&'a str>, &'a str, usize)>,
    ) {
        let family = &self.families.binding_count;
        family.clear();
        for (module, hook, count) in hooks {
            let labels = labels([("module", module.unwrap_or_default()), ("hook", hook)]);
            family.get_or_create(&labels).set(count as f64);
        }
    }

    /// When config values (ConfigMap or config file) fail validation.
    pub fn config_values_error(&self) {
        self.families.config_values_errors.inc();
    }

    /// A change seen on the config store's watch (or found while saving): our own write echoed
    /// back, or an edit by someone else that changed the config.
    pub fn config_reload(&self, cause: ConfigReloadCause) {
        self.families
            .config_reloads
            .get_or_create(&labels([("cause", cause.label())]))
            .inc();
    }

    /// A reload of the module tree (`--reload-tree`): `result` is `applied` or `failed`.
    pub fn tree_reload(&self, result: &str) {
        self.families
            .tree_reloads
            .get_or_create(&labels([("result", result)]))
            .inc();
    }

    /// A task run failed; `kind` says what failed (`addon_core::error::FailureKind`).
    pub fn task_failure(&self, queue: &str, kind: &str) {
        self.families
            .task_failures
            .get_or_create(&labels([("queue", queue), ("kind", kind)]))
            .inc();
    }

    /// A global hook's Kubernetes bindings failed to start: counted, as upstream, in
    /// `global_hook_errors_total` under `binding="GlobalEnableKubernetesBindings"`,
    /// `activation="OperatorStartup"` and the hook file's base name (the hook did not run).
    pub fn global_bindings_start_failed(&self, hook_file: &str, queue: &str) {
        let labels = labels([
            ("hook", hook_file),
            ("binding", "GlobalEnableKubernetesBindings"),
            ("queue", queue),
            ("activation", "OperatorStartup"),
        ]);
        self.families
            .global_hooks
            .errors
            .get_or_create(&labels)
            .inc();
    }

    /// When discovering modules (reading the modules dirs, enabled scripts) fails.
    pub fn discover_error(&self) {
        self.families.modules_discover_errors.inc();
    }

    /// After a ModuleRun task: its wall time, and an error count when it failed.
    pub fn module_run(&self, module: &str, activation: &str, duration: Duration, success: bool) {
        let run = labels([("module", module), ("activation", activation)]);
        self.families
            .module_run_seconds
            .get_or_create(&run)
            .observe(duration.as_secs_f64());
        if !success {
            self.families
                .module_run_errors
                .get_or_create(&labels([("module", module)]))
                .inc();
        }
    }

    /// After a ModuleDelete task; counts failures.
    pub fn module_delete(&self, module: &str, success: bool) {
        if !success {
            let labels = labels([("module", module)]);
            self.families
                .module_delete_errors
                .get_or_create(&labels)
                .inc();
        }
    }

    /// After the Helm step of a module run (render, checks, upgrade).
    pub fn module_helm(&self, module: &str, activation: &str, duration: Duration) {
        let labels = labels([("module", module), ("activation", activation)]);
        self.families
            .module_helm_seconds
            .get_or_create(&labels)
            .observe(duration.as_secs_f64());
    }

    /// After one Helm operation of a module. Failures are counted by `module_run`.
    pub fn helm_operation(
        &self,
        module: &str,
        activation: &str,
        operation: HelmOperation,
        duration: Duration,
    ) {
        let labels = labels([
            ("module", module),
            ("activation", activation),
            ("operation", operation.as_str()),
        ]);
        let histogram = self.families.helm_operation_seconds.get_or_create(&labels);
        histogram.observe(duration.as_secs_f64());
    }

    /// When the resource monitor finds `count` resources of a module's release missing.
    pub fn absent_resources(&self, module: &str, resource: &str, count: u64) {
        let labels = labels([("module", module), ("resource", resource)]);
        self.families
            .absent_resources
            .get_or_create(&labels)
            .inc_by(count);
    }

    /// A change to fields a module's release sets (`{prefix}module_drift_total`).
    pub fn module_drift(&self, module: &str, kind: &str, mode: &str) {
        let labels = labels([("module", module), ("kind", kind), ("mode", mode)]);
        self.families.release.drift.get_or_create(&labels).inc();
    }

    /// A drifted object written back.
    pub fn module_drift_restored(&self, module: &str, kind: &str) {
        let labels = labels([("module", module), ("kind", kind)]);
        let family = &self.families.release.drift_restores;
        family.get_or_create(&labels).inc();
    }

    /// The objects of `module`'s release that differ from it now.
    pub fn module_drifted_objects(&self, module: &str, count: usize) {
        let labels = labels([("module", module)]);
        let family = &self.families.release.drifted_objects;
        family.get_or_create(&labels).set(count as f64);
    }

    /// Whether every object of `module`'s release is ready.
    pub fn module_ready(&self, module: &str, ready: bool) {
        let labels = labels([("module", module)]);
        let family = &self.families.release.ready;
        family
            .get_or_create(&labels)
            .set(f64::from(u8::from(ready)));
    }

    /// When a module's release is installed again because its resources went missing.
    pub fn helm_release_redeployed(&self, module: &str) {
        let labels = labels([("module", module)]);
        self.families
            .helm_release_redeployed
            .get_or_create(&labels)
            .inc();
    }

    /// After each module discovery: replaces `mm_module_info` with one series per module.
    pub fn modules_info(&self, modules: &[ModuleInfo]) {
        let family = &self.families.module_info;
        family.clear();
        for m in modules {
            let labels = labels([
                ("module", m.module.as_str()),
                ("enabled", bool_label(m.enabled)),
                ("critical", bool_label(m.critical)),
            ]);
            family.get_or_create(&labels).set(1.0);
        }
    }

    /// After each config change: one `mm_module_maintenance` series (state
    /// `NoResourceReconciliation`) per module in maintenance, none for the others.
    pub fn modules_in_maintenance(&self, modules: &[String]) {
        let family = &self.families.module_maintenance;
        family.clear();
        for module in modules {
            let labels = labels([
                ("module", module.as_str()),
                ("state", "NoResourceReconciliation"),
            ]);
            family.get_or_create(&labels).set(1.0);
        }
    }

    /// When a converge (startup, or one caused by `activation`) finishes.
    pub fn converge(&self, activation: &str, duration: Duration) {
        let labels = labels([("activation", activation)]);
        let seconds = self.families.convergence_seconds.get_or_create(&labels);
        seconds.inc_by(duration.as_secs_f64());
        self.families.convergence.get_or_create(&labels).inc();
    }

    /// When a task starts: how long it waited in its queue. `binding` is the binding name for hook
    /// tasks, else the task type; `module`/`hook` are empty when they do not apply.
    pub fn task_wait_in_queue(&self, task: &BindingLabels<'_>, wait: Duration) {
        let labels = labels([
            ("module", task.module),
            ("hook", task.hook),
            ("binding", task.binding),
            ("queue", task.queue),
        ]);
        let counter = self
            .families
            .task_wait_in_queue_seconds
            .get_or_create(&labels);
        counter.inc_by(wait.as_secs_f64());
    }

    /// Periodically (upstream: every 5 s) for each queue.
    pub fn queue_length(&self, queue: &str, len: usize) {
        let labels = labels([("queue", queue)]);
        self.families
            .queue_length
            .get_or_create(&labels)
            .set(len as f64);
    }

    /// Periodically, with the heads of all non-empty queues; replaces the previous set.
    pub fn queue_heads(&self, heads: &[QueueHead]) {
        let family = &self.families.queue_head_info;
        family.clear();
        for head in heads {
            let labels = labels([
                ("queue", head.queue.as_str()),
                ("module", head.module.as_str()),
                ("task_type", head.task_type.as_str()),
                ("hook", head.hook.as_str()),
            ]);
            family.get_or_create(&labels).set(1.0);
        }
    }

    /// After a queue operation; `action` is upstream's name (`AddLast`, `AddFirst`, `RemoveFirst`,
    /// `DeleteFunc`, ...).
    pub fn queue_action(&self, queue: &str, action: &str, duration: Duration) {
        let labels = labels([("queue_name", queue), ("queue_action", action)]);
        let histogram = self.families.queue_action_seconds.get_or_create(&labels);
        histogram.observe(duration.as_secs_f64());
    }

    /// Whether this replica does the work: it holds the leader lease (`--ha`), or always
    /// without `--ha`. `leader` is 0 until the first call.
    /// What became of one Event for admins (`result`: created, patched, dropped_queue_full,
    /// dropped_spam, failed).
    pub fn admin_event(&self, result: &str) {
        self.families
            .admin_events
            .get_or_create(&labels([("result", result)]))
            .inc();
    }

    pub fn leader(&self, leading: bool) {
        self.health.leader.set(if leading { 1.0 } else { 0.0 });
    }

    /// Periodically with the queue lengths: how long the oldest task of `queue` has waited (a
    /// retried task since its failure), zero for an empty queue.
    pub fn queue_oldest_task_age(&self, queue: &str, age: Duration) {
        let labels = labels([("queue", queue)]);
        let family = &self.health.queue_oldest_task_age;
        family.get_or_create(&labels).set(age.as_secs_f64());
    }

    /// Periodically with the queue lengths: whether the first converge is done, and how long
    /// the converge in progress has run (zero when none runs).
    pub fn converge_state(&self, first_done: bool, running: Duration) {
        let done = if first_done { 1.0 } else { 0.0 };
        self.health.first_converge_done.set(done);
        (self.health.converge_running).set(running.as_secs_f64());
    }

    /// A hook run stopped by the hook timeout.
    pub fn hook_timeout(&self, module: Option<&str>, hook: &str) {
        let labels = health::hook_labels(module, hook);
        self.health.hook_timeouts.get_or_create(&labels).inc();
    }

    /// An admission or conversion review answered: `kind` `admission` or `conversion`,
    /// `result` `allowed`, `denied` or `failed` (no answer: a bad request or a timeout).
    pub fn webhook_request(&self, kind: &str, result: &str, duration: Duration) {
        let counted = labels([("kind", kind), ("result", result)]);
        self.health.webhook_requests.get_or_create(&counted).inc();
        let timed = labels([("kind", kind)]);
        let histogram = self.health.webhook_request_seconds.get_or_create(&timed);
        histogram.observe(duration.as_secs_f64());
    }

    /// Every [`LIVE_TICK_INTERVAL`]; [`spawn_live_ticks`] does it.
    pub fn live_tick(&self) {
        self.families.live_ticks.inc_by(1.0);
    }

    /// After a kubernetes binding's cache changes: objects it holds.
    pub fn kube_snapshot_objects(&self, binding: &BindingLabels<'_>, kind: &str, count: usize) {
        let labels = kube_labels(binding, kind);
        self.families
            .kube_snapshot_objects
            .get_or_create(&labels)
            .set(count as f64);
    }

    /// After applying a binding's jqFilter to an object.
    pub fn kube_jq_filter(&self, binding: &BindingLabels<'_>, kind: &str, duration: Duration) {
        self.kube_jq_filter_each(binding, kind, duration, 1);
    }

    /// After applying a binding's jqFilter to `objects` objects that took `each` on average
    /// (a listing).
    pub fn kube_jq_filter_each(
        &self,
        binding: &BindingLabels<'_>,
        kind: &str,
        each: Duration,
        objects: u32,
    ) {
        let labels = kube_labels(binding, kind);
        let histogram = self.families.kube_jq_filter_seconds.get_or_create(&labels);
        for _ in 0..objects {
            histogram.observe(each.as_secs_f64());
        }
    }

    /// After handling one Kubernetes watch event for a binding.
    pub fn kube_event(&self, binding: &BindingLabels<'_>, kind: &str, duration: Duration) {
        let labels = kube_labels(binding, kind);
        let histogram = self.families.kube_event_seconds.get_or_create(&labels);
        histogram.observe(duration.as_secs_f64());
    }

    /// When a watch fails; upstream `error_type`s: `expired`, `eof`, `unexpected-eof`, `fail`.
    pub fn kube_watch_error(&self, error_type: &str) {
        let labels = labels([("error_type", error_type)]);
        self.families.kube_watch_errors.get_or_create(&labels).inc();
    }

    /// After a hook run, with the operations parsed from its `$METRICS_PATH`
    /// (`addon_core::hook_output::metrics::parse`). All or nothing: on error nothing is applied and
    /// the caller decides (upstream fails the hook run).
    pub fn hook_metric_ops(
        &self,
        hook: &str,
        module: Option<&str>,
        ops: &[MetricOperation],
    ) -> Result<(), HookMetricsError> {
        self.hook_store().apply(hook, module, ops)
    }

    /// Drops every hook metric series of `group` (e.g. when a module is disabled, its hooks' names).
    pub fn expire_hook_metrics(&self, group: &str) {
        self.hook_store().expire(group);
    }

    /// `/metrics`: OpenMetrics text ([`OPENMETRICS_CONTENT_TYPE`]), ending with `# EOF`.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// `/metrics` in `format`: OpenMetrics ([`Self::encode`]) or the classic text format.
    pub fn encode_as(&self, format: Exposition) -> String {
        match format {
            Exposition::OpenMetrics => self.encode(),
            Exposition::ClassicText => exposition::classic_text(&self.encode()),
        }
    }

    /// `/metrics/hooks`: Prometheus text ([`PROMETHEUS_TEXT_CONTENT_TYPE`]), names as hooks wrote them.
    pub fn encode_hooks(&self) -> String {
        self.hook_store().encode()
    }

    fn hook_store(&self) -> std::sync::MutexGuard<'_, HookMetricsStore> {
        // A panic while holding the lock cannot leave the store half-updated in a harmful way.
        self.hooks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;

fn kube_labels(binding: &BindingLabels<'_>, kind: &str) -> Labels {
    labels([
        ("module", binding.module),
        ("hook", binding.hook),
        ("binding", binding.binding),
        ("queue", binding.queue),
        ("kind", kind),
    ])
}

/// Grows `live_ticks` every [`LIVE_TICK_INTERVAL`] until `shutdown`.
pub fn spawn_live_ticks(
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(LIVE_TICK_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = ticks.tick() => metrics.live_tick(),
            }
        }
    })
}
