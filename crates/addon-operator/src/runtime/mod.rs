//! The runtime: builds the operator's state from a discovered tree, fills `main` with the startup
//! tasks, and runs one worker per queue plus the intake of config edits, watch events and
//! schedule ticks until shutdown.

mod admin;
mod config_edit;
pub mod config_writer;
mod decisions;
pub mod edges;
pub mod error;
mod handlers;
pub(crate) mod hooks;
mod intake;
mod kube_metrics;
pub mod metrics;
mod module_hooks;
mod release_guard;
mod reload;
mod resource_monitor;
pub mod schedule;
pub mod startup_config;
pub mod state;
mod status;
pub mod task;
pub mod webhook_objects;
pub mod webhooks;
mod worker;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use addon_core::binding_context::{append_compacted, joins_queued};
use addon_core::discovery::Discovered;
use addon_core::hook_config::HookConfig;
use addon_core::names::{HookName, ModuleName, QueueName};
use addon_core::queue::{Backoff, QueueSet};
use addon_core::setup::build_store;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use edges::{Edges, KubeEvent, MonitorKey};
pub use release_guard::{GuardSettings, ReleaseSummary};
pub use reload::NewTree;
use state::{HookDef, HookList, ModuleState, State};
use task::Task;

use crate::runtime::edges::StatusSource as _;
use crate::runtime::edges::jq::JqRunner;
use crate::runtime::metrics::Metrics;
use crate::runtime::schedule::{Scheduler, SystemClock, WallClock};
use addon_core::error::error_chain;

/// How the runtime behaves; plain data built before any I/O.
#[derive(Debug, Clone)]
pub struct RuntimeSettings {
    pub backoff: Backoff,
    /// Prefix of the operator's metric names.
    pub metrics_prefix: String,
    /// How often releases are checked for drift (missing objects, failed status); `None` = never.
    pub resource_monitor_interval: Option<Duration>,
    /// Field-level drift and health of the modules' releases (`--drift-mode`, ...).
    pub guard: GuardSettings,
    /// Keep the ordered history of task starts and hook runs (tests, debugging).
    pub record_history: bool,
    /// Helm releases never purged (`--helm-ignore-release`, the operator's own release).
    pub kept_releases: Vec<String>,
    /// Labels put on every CRD of the modules' `crds/` (`--crd-extra-labels`; upstream's
    /// default `heritage=addon-operator`).
    pub crd_extra_labels: BTreeMap<String, String>,
    /// File name prefixes left out of the modules' `crds/` (`--crd-filters`).
    pub crd_filters: Vec<String>,
    /// With `--ha`: whether this replica leads; checked before every task start.
    pub leadership: Option<Arc<dyn edges::Leading>>,
    /// The registry to record into when it is shared (with the HTTP server that starts before the
    /// runtime, and the watches); `None`: a new one with `metrics_prefix`.
    pub metrics: Option<Arc<Metrics>>,
    /// Where bindings' jqFilters run (the operator uses its jq sandbox).
    pub jq: JqRunner,
    /// How many modules of one ORDER run at once (`--parallel-module-runs`; 1: one by one).
    pub parallel_module_runs: usize,
    /// With a cluster: the webhook configurations and CRD conversions to keep in step with the
    /// enabled hooks' webhook bindings.
    pub webhook_objects: Option<webhook_objects::WebhookObjects>,
    /// The modules of the tree come without hooks, which [`RuntimeHandle::add_module_hooks`]
    /// adds later: global hooks and `enabled` scripts run meanwhile, and the first discovery
    /// waits for them before it plans any module run.
    pub module_hooks_later: bool,
    /// The cluster's Kubernetes version (its `/version`), checked against the modules'
    /// `requirements.kubernetes`; `None`: no cluster, not checked.
    pub kubernetes_version: Option<addon_core::module_definition::Version>,
}

/// `--parallel-module-runs` by default: see docs/running.md for the measurements behind it.
pub const DEFAULT_PARALLEL_MODULE_RUNS: usize = 8;

impl Default for RuntimeSettings {
    fn default() -> Self {
        Self {
            backoff: Backoff::default(),
            metrics_prefix: crate::runtime::metrics::DEFAULT_PREFIX.to_string(),
            resource_monitor_interval: None,
            guard: GuardSettings::default(),
            record_history: false,
            kept_releases: Vec::new(),
            crd_extra_labels: BTreeMap::from([(
                "heritage".to_string(),
                "addon-operator".to_string(),
            )]),
            crd_filters: edges::files::DEFAULT_CRD_FILTERS
                .map(str::to_string)
                .to_vec(),
            leadership: None,
            metrics: None,
            jq: JqRunner::default(),
            parallel_module_runs: DEFAULT_PARALLEL_MODULE_RUNS,
            webhook_objects: None,
            module_hooks_later: false,
            kubernetes_version: None,
        }
    }
}

/// A schedule binding: the hook's module (none for global hooks), the hook, the binding index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleId {
    pub module: Option<ModuleName>,
    pub hook: HookName,
    pub index: usize,
}

/// Why the operator could not start: every problem found.
#[derive(Debug, thiserror::Error)]
#[error("the module tree or its config is invalid:\n  {}", .errors.join("\n  "))]
pub struct StartupError {
    pub errors: Vec<String>,
}

impl StartupError {
    pub fn category(&self) -> &'static str {
        "startup"
    }
}

/// State shared by workers, intake and handlers.
pub struct Shared {
    state: Mutex<State>,
    pub(crate) metrics: Arc<Metrics>,
    notify: Notify,
    pub(crate) edges: Edges,
    epoch: tokio::time::Instant,
    scheduler: Scheduler<ScheduleId>,
    config_writer: config_writer::ConfigWriter,
    pub(crate) jq: JqRunner,
    /// Fires at shutdown: a group waiting for its lanes stops waiting.
    stopping: CancellationToken,
    /// Drift and health of the modules' releases.
    pub(crate) guard: release_guard::Guard,
    /// Hook failures waiting for the Event of their task.
    hook_failures: admin::HookFailures,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until the modules' hooks are known; `false` when `stop` fires first.
    pub(crate) async fn module_hooks_known(&self, stop: &CancellationToken) -> bool {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lock().module_hooks_known {
                return true;
            }
            tokio::select! {
                () = &mut notified => {}
                () = stop.cancelled() => return false,
            }
        }
    }

    /// Time since the runtime started, the clock of the queues.
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Queues `task` at the end of `queue` (or `main` if that queue does not exist).
    fn push(&self, st: &mut State, queue: &QueueName, task: Task) {
        let queue = if st.queues.get(queue).is_some() {
            queue.clone()
        } else {
            QueueName::main()
        };
        let started = std::time::Instant::now();
        if let Ok(q) = st.queues.get_mut(&queue)
            && let Some(id) = q.push_back_or_join_back(task, passable_run, join_waiting_run)
        {
            st.queued_at.insert((queue.clone(), id), self.now());
        }
        (self.metrics).queue_action(queue.as_str(), "AddLast", started.elapsed());
        self.notify.notify_waiters();
    }

    /// Starts the schedules of a module's hooks (once per enabling).
    pub(crate) fn start_module_schedules(&self, module: &ModuleName) {
        let mut st = self.lock();
        let Some(m) = st.modules.get_mut(module) else {
            return;
        };
        if m.schedules_on {
            return;
        }
        m.schedules_on = true;
        let hooks = m.hooks.clone();
        drop(st);
        self.start_schedules(Some(module), &hooks);
    }

    pub(crate) fn start_schedules(&self, module: Option<&ModuleName>, hooks: &[HookDef]) {
        for def in hooks {
            for (index, binding) in def.config.schedules.iter().enumerate() {
                let id = ScheduleId {
                    module: module.cloned(),
                    hook: def.name().clone(),
                    index,
                };
                self.scheduler.start(id, binding.crontab.clone());
            }
        }
    }

    /// Forgets a deleted module's watches, schedules, progress and values patches.
    pub(crate) fn stop_module(&self, module: &ModuleName) {
        let mut st = self.lock();
        let keys: Vec<MonitorKey> = st
            .monitors
            .keys()
            .filter(|k| k.module.as_ref() == Some(module))
            .cloned()
            .collect();
        for key in keys {
            self.edges.kube.stop(&key);
            st.monitors.remove(&key);
        }
        let hooks = st
            .modules
            .get(module)
            .map(|m| m.hooks.clone())
            .unwrap_or_default();
        for def in &hooks {
            for index in 0..def.config.schedules.len() {
                self.scheduler.stop(ScheduleId {
                    module: Some(module.clone()),
                    hook: def.name().clone(),
                    index,
                });
            }
        }
        if let Some(m) = st.modules.get_mut(module) {
            m.startup_done = false;
            m.schedules_on = false;
            m.pending = Default::default();
        }
        if let Err(e) = st.store.reset_module_patches(module) {
            tracing::error!(module = %module, error = %error_chain(&e), "values patches not reset");
        }
        if st.modules.get(module).is_some_and(|m| m.removed) {
            reload::forget_module(&mut st, module);
        }
    }
}

/// A built runtime, ready to run.
pub struct Runtime {
    shared: Arc<Shared>,
    resource_monitor_interval: Option<Duration>,
    kube_events: mpsc::Receiver<KubeEvent>,
    schedule_events: mpsc::Receiver<ScheduleId>,
    webhook_objects: Option<webhook_objects::WebhookObjects>,
}

/// A cheap handle to look into a running runtime (tests, debug API).
#[derive(Clone)]
pub struct RuntimeHandle {
    shared: Arc<Shared>,
}

impl Runtime {
    /// Builds the state: values store, config from the config edge, validation. Every problem
    /// found is returned at once. `configs` holds each hook's parsed `--config` by path.
    /// `kube_events` is the channel the kubernetes edge sends watch events into.
    pub async fn build(
        found: &Discovered,
        configs: &BTreeMap<PathBuf, HookConfig>,
        edges: Edges,
        kube_events: mpsc::Receiver<KubeEvent>,
        settings: RuntimeSettings,
    ) -> Result<Self, StartupError> {
        Self::build_with_clock(
            found,
            configs,
            edges,
            kube_events,
            settings,
            Arc::new(SystemClock),
        )
        .await
    }

    /// [`Self::build`] with a wall clock for schedules (tests drive it with paused time).
    pub async fn build_with_clock(
        found: &Discovered,
        configs: &BTreeMap<PathBuf, HookConfig>,
        edges: Edges,
        kube_events: mpsc::Receiver<KubeEvent>,
        settings: RuntimeSettings,
        clock: Arc<dyn WallClock>,
    ) -> Result<Self, StartupError> {
        let (mut store, setup_errors) = build_store(found);
        let mut errors: Vec<String> = setup_errors.iter().map(|e| error_chain(e)).collect();
        let config = edges.config.load().await.unwrap_or_else(|e| {
            errors.push(error_chain(&e));
            addon_core::config::Config::empty()
        });
        store.set_config(config.clone());
        let flagged = store.enabled_by_flags();
        if let Err(e) = store.check_config(&config, &flagged) {
            errors.push(error_chain(&e));
        }
        let state = initial_state(found, configs, store, &settings, &mut errors);
        if !errors.is_empty() {
            return Err(StartupError { errors });
        }
        let (schedule_tx, schedule_events) = mpsc::channel(256);
        let scheduler = Scheduler::new(clock, schedule_tx);
        let metrics = (settings.metrics.clone())
            .unwrap_or_else(|| Arc::new(Metrics::new(&settings.metrics_prefix)));
        record_bindings(&metrics, &state);
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            metrics,
            notify: Notify::new(),
            edges,
            epoch: tokio::time::Instant::now(),
            scheduler,
            config_writer: config_writer::ConfigWriter::new(),
            jq: settings.jq.clone(),
            stopping: CancellationToken::new(),
            guard: release_guard::Guard::new(settings.guard.clone()),
            hook_failures: admin::HookFailures::default(),
        });
        {
            let st = shared.lock();
            config_edit::record_maintenance(&shared, &st, &config);
        }
        let modules: Vec<ModuleName> = found.modules.iter().map(|m| m.name.clone()).collect();
        admin::tree(&shared, &modules);
        Ok(Self {
            shared,
            resource_monitor_interval: settings.resource_monitor_interval,
            kube_events,
            schedule_events,
            webhook_objects: settings.webhook_objects.clone(),
        })
    }

    /// The metrics the runtime records (served by the HTTP server).
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.shared.metrics)
    }

    pub fn handle(&self) -> RuntimeHandle {
        RuntimeHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Runs until `shutdown` fires.
    pub async fn run(self, shutdown: CancellationToken) {
        bootstrap(&self.shared);
        let queues: Vec<QueueName> = self
            .shared
            .lock()
            .queues
            .iter()
            .map(|q| q.name().clone())
            .collect();
        let mut tasks = tokio::task::JoinSet::new();
        for queue in queues {
            let shared = Arc::clone(&self.shared);
            let stop = shutdown.clone();
            tasks.spawn(async move { worker::run(shared, queue, stop).await });
        }
        let config_updates = self.shared.edges.config.watch();
        tasks.spawn(intake::config_updates(
            Arc::clone(&self.shared),
            config_updates,
            shutdown.clone(),
        ));
        tasks.spawn(intake::kube_events(
            Arc::clone(&self.shared),
            self.kube_events,
            shutdown.clone(),
        ));
        tasks.spawn(intake::schedule_ticks(
            Arc::clone(&self.shared),
            self.schedule_events,
            shutdown.clone(),
        ));
        if let Some(interval) = self.resource_monitor_interval {
            tasks.spawn(resource_monitor::run(
                Arc::clone(&self.shared),
                RuntimeHandle {
                    shared: Arc::clone(&self.shared),
                },
                interval,
                shutdown.clone(),
            ));
        }
        tasks.spawn(release_guard::run(
            Arc::clone(&self.shared),
            RuntimeHandle {
                shared: Arc::clone(&self.shared),
            },
            shutdown.clone(),
        ));
        if let Some(objects) = self.webhook_objects {
            tasks.spawn(webhook_objects::run_if_used(
                Arc::clone(&self.shared),
                objects,
                shutdown.clone(),
            ));
        }
        tasks.spawn(publish_queue_lengths(
            Arc::clone(&self.shared),
            shutdown.clone(),
        ));
        shutdown.cancelled().await;
        self.shared.stopping.cancel();
        self.shared.scheduler.stop_all();
        let drained = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(SHUTDOWN_TIMEOUT, drained)
            .await
            .is_err()
        {
            tracing::warn!(
                timeout_s = SHUTDOWN_TIMEOUT.as_secs(),
                "tasks still running at shutdown were abandoned"
            );
        }
    }
}

/// How long running tasks (a Helm upgrade, say) may take to finish after shutdown (upstream: 30 s).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How often queue lengths are published as metrics (upstream: every 5 s).
const QUEUE_METRICS_INTERVAL: Duration = Duration::from_secs(5);

async fn publish_queue_lengths(shared: Arc<Shared>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(QUEUE_METRICS_INTERVAL);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let (lengths, heads) = queue_snapshot(&mut shared.lock());
        let (ages, converge) = {
            let st = shared.lock();
            let converging = st.converge_started.map(|at| at.elapsed());
            let converge = (st.first_converge_done, converging.unwrap_or_default());
            (oldest_task_ages(&st, shared.now()), converge)
        };
        shared.metrics.converge_state(converge.0, converge.1);
        for (queue, len) in lengths {
            shared.metrics.queue_length(&queue, len);
        }
        for (queue, age) in ages {
            shared.metrics.queue_oldest_task_age(&queue, age);
        }
        shared.metrics.queue_heads(&heads);
    }
}

/// How long the oldest task of every queue has waited (since it was queued, or since its last
/// failure for a retried one); zero for an empty queue.
fn oldest_task_ages(st: &State, now: Duration) -> Vec<(String, Duration)> {
    (st.queues.iter())
        .map(|q| {
            let oldest = (q.iter())
                .filter_map(|t| st.queued_at.get(&(q.name().clone(), t.id)))
                .min();
            let age = oldest.map_or(Duration::ZERO, |at| now.saturating_sub(*at));
            (q.name().to_string(), age)
        })
        .collect()
}

/// Length and head of every queue; forgets the queue times of tasks that left the queues
/// without starting (dropped by a config edit, say).
fn queue_snapshot(
    st: &mut State,
) -> (
    Vec<(String, usize)>,
    Vec<crate::runtime::metrics::QueueHead>,
) {
    let queued: BTreeSet<(QueueName, addon_core::queue::TaskId)> = st
        .queues
        .iter()
        .flat_map(|q| q.iter().map(|t| (q.name().clone(), t.id)))
        .collect();
    st.queued_at.retain(|key, _| queued.contains(key));
    let lengths = st
        .queues
        .iter()
        .map(|q| (q.name().to_string(), q.len()))
        .collect();
    let heads = st
        .queues
        .iter()
        .filter_map(|q| {
            let task = &q.peek()?.task;
            Some(crate::runtime::metrics::QueueHead {
                queue: q.name().to_string(),
                task_type: task.kind().to_string(),
                module: task.module().map(ToString::to_string).unwrap_or_default(),
                hook: worker::hook_name(task),
            })
        })
        .collect();
    (lengths, heads)
}

/// `binding_count` of every hook with its config.
/// `binding_count` of every hook in the tree (a reload's gone hooks and removed modules, whose
/// bindings stopped, leave the family).
fn record_bindings(metrics: &Metrics, st: &State) {
    let global = st.global_hooks.iter().map(|h| (None, h));
    let modules = (st.modules.iter())
        .filter(|(_, s)| !s.removed)
        .flat_map(|(m, s)| s.hooks.iter().map(move |h| (Some(m.as_str()), h)));
    let counts = global.chain(modules).map(|(module, def)| {
        let count = def.config.binding_types().len();
        (module, def.name().as_str(), count)
    });
    metrics.binding_counts(counts);
}

/// The hooks of `files` with their configs; a hook without one is a problem in `errors`.
pub(crate) fn hook_defs(
    files: &[addon_core::discovery::HookFile],
    configs: &BTreeMap<PathBuf, HookConfig>,
    errors: &mut Vec<String>,
) -> Vec<HookDef> {
    files
        .iter()
        .filter_map(|file| match configs.get(&file.config_key()) {
            Some(config) => Some(HookDef {
                file: std::sync::Arc::new(file.clone()),
                config: std::sync::Arc::new(config.clone()),
            }),
            None => {
                errors.push(format!("hook '{}' has no valid config", file.name));
                None
            }
        })
        .collect()
}

/// The queues a hook's schedule and kubernetes bindings name.
pub(crate) fn binding_queues(def: &HookDef) -> impl Iterator<Item = QueueName> + '_ {
    let schedules = def.config.schedules.iter().map(|s| s.queue.clone());
    schedules.chain(def.config.kubernetes.iter().map(|k| k.queue.clone()))
}

/// The state before the first task: hooks, modules, queues.
fn initial_state(
    found: &Discovered,
    configs: &BTreeMap<PathBuf, HookConfig>,
    store: addon_core::values::store::ValuesStore,
    settings: &RuntimeSettings,
    errors: &mut Vec<String>,
) -> State {
    let mut defs = |files: &[addon_core::discovery::HookFile]| hook_defs(files, configs, errors);
    let global_hooks = HookList::from(defs(&found.global.hooks));
    let mut modules = BTreeMap::new();
    for source in &found.modules {
        let hooks = HookList::from(defs(&source.hooks));
        modules.insert(source.name.clone(), ModuleState::new(source.clone(), hooks));
    }
    let mut queue_names = BTreeSet::new();
    let all_hooks = global_hooks
        .iter()
        .chain(modules.values().flat_map(|m| &m.hooks));
    for def in all_hooks {
        queue_names.extend(binding_queues(def));
    }
    let lanes = addon_core::lifecycle::lanes(settings.parallel_module_runs);
    let mut queues = QueueSet::new(settings.backoff);
    for name in queue_names.into_iter().chain(lanes.iter().cloned()) {
        queues.ensure(name);
    }
    State {
        store,
        global_hooks,
        module_order: found.modules.iter().map(|m| m.name.clone()).collect(),
        modules,
        enabled: Vec::new(),
        monitors: BTreeMap::new(),
        queues,
        first_converge_done: false,
        converge_started: None,
        queued_at: std::collections::HashMap::new(),
        history: settings.record_history.then(Vec::new),
        rate_limits: BTreeMap::new(),
        kept_releases: settings.kept_releases.clone(),
        crd_extra_labels: settings.crd_extra_labels.clone(),
        crd_filters: settings.crd_filters.clone(),
        leadership: settings.leadership.clone(),
        crds_applied: BTreeMap::new(),
        startup_purge_done: false,
        parallel_module_runs: settings.parallel_module_runs.max(1),
        lanes,
        group_pending: None,
        module_hooks_known: !settings.module_hooks_later,
        kubernetes_version: settings.kubernetes_version.clone(),
        not_running: BTreeMap::new(),
        disabled_reasons: BTreeMap::new(),
        maintenance_labelled: BTreeSet::new(),
    }
}

/// Fills `main`: global onStartup hooks by ORDER, the start of global kubernetes bindings (hooks
/// by name), then the first converge. Global schedules start (their ticks are dropped until the
/// first converge is done).
fn bootstrap(shared: &Shared) {
    let st = shared.lock();
    let decision = addon_core::lifecycle::startup(&st.global_hooks);
    decisions::enqueue(shared, st, decision);
}

impl RuntimeHandle {
    /// 'Helm resources absent': resources of a module's release are missing from the cluster;
    /// the module runs again (its Helm step reinstalls them). Called by the resource monitor.
    pub fn resources_absent(&self, module: &ModuleName) {
        let st = self.shared.lock();
        let decision = addon_core::lifecycle::resources_absent(decisions::view(&st), module);
        decisions::enqueue(&self.shared, st, decision);
    }

    /// Drift and health of every tracked module's release.
    pub fn release_summaries(&self) -> BTreeMap<ModuleName, ReleaseSummary> {
        self.shared.guard.summaries()
    }

    /// The metrics the runtime records.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.shared.metrics)
    }

    /// The recorded history (empty unless `record_history`).
    pub fn history(&self) -> Vec<String> {
        self.shared.lock().history.clone().unwrap_or_default()
    }

    /// No task waits or runs in any queue.
    pub fn is_idle(&self) -> bool {
        self.shared.lock().queues.total_len() == 0
    }

    /// The first task that failed and waits for its retry, with its error, if any.
    pub fn first_failure(&self) -> Option<String> {
        let st = self.shared.lock();
        st.queues
            .iter()
            .flat_map(|q| q.iter())
            .find(|t| t.failures > 0)
            .map(|t| t.description())
    }

    /// The last failure (kind and message) of the first task that waits for its retry, if any.
    pub fn first_failure_record(&self) -> Option<addon_core::error::Failure> {
        let st = self.shared.lock();
        st.queues
            .iter()
            .flat_map(|q| q.iter())
            .find(|t| t.failures > 0)
            .and_then(|t| t.last_failure.clone())
    }

    /// Whether the first 'reload all modules' finished.
    pub fn first_converge_done(&self) -> bool {
        self.shared.lock().first_converge_done
    }

    /// Enabled modules in order.
    pub fn enabled_modules(&self) -> Vec<ModuleName> {
        self.shared.lock().enabled.clone()
    }

    /// What the `enabled` scripts that disabled their module wrote to `$MODULE_ENABLED_REASON`.
    pub fn disabled_reasons(&self) -> BTreeMap<String, String> {
        let st = self.shared.lock();
        (st.disabled_reasons.iter())
            .map(|(m, reason)| (m.to_string(), reason.clone()))
            .collect()
    }

    /// The queues as text (upstream dump format).
    pub fn queues_text(&self) -> String {
        self.queue_list(true).to_text()
    }

    /// The queues as JSON.
    pub fn queues_json(&self) -> serde_json::Value {
        self.queue_list(true).to_json()
    }

    /// Which webhook servers the tree's hooks need.
    pub fn webhook_use(&self) -> webhooks::WebhookUse {
        webhooks::webhook_use(&self.shared.lock())
    }

    /// Answers AdmissionReviews with the hooks of enabled modules and global hooks.
    pub fn admission_answers(&self) -> Arc<dyn edges::Answerer> {
        Arc::new(webhooks::AdmissionAnswers {
            shared: Arc::clone(&self.shared),
        })
    }

    /// Answers ConversionReviews with the hooks of enabled modules and global hooks.
    pub fn conversion_answers(&self) -> Arc<dyn edges::Answerer> {
        Arc::new(webhooks::ConversionAnswers {
            shared: Arc::clone(&self.shared),
        })
    }

    /// Merged values of `global` and every module.
    pub fn values(&self) -> serde_json::Value {
        serde_json::Value::Object(self.shared.lock().store.all_values())
    }
}

/// Whether a new hook run may pass a waiting task to join an earlier run of its hook: only
/// runs of other hooks (never a module run, a converge or any other task), as the Go
/// operator's queue compaction merges a hook's queued runs into its first one.
fn passable_run(queued: &Task, new: &Task) -> bool {
    matches!((queued, new), (Task::Hook(q), Task::Hook(n)) if !q.same_hook_as(n))
}

/// Merges a hook run into a waiting run of the same hook that it would be combined with when
/// that run starts (see [`joins_queued`]); gives it back otherwise.
fn join_waiting_run(tail: &mut Task, new: Task) -> Option<Task> {
    let (Task::Hook(t), Task::Hook(n)) = (&mut *tail, &new) else {
        return Some(new);
    };
    if !t.same_hook_as(n) || !joins_queued(&t.contexts, &n.contexts) {
        return Some(new);
    }
    if let Task::Hook(n) = new {
        append_compacted(&mut t.contexts, n.contexts);
    }
    None
}
