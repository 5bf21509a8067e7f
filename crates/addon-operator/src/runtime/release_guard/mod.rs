//! The release guard: after each Helm run of a module, records the baseline and the health of
//! its release's objects, watches their kinds, and reports (`warn`) or writes back (`enforce`)
//! field-level drift, and reports when the module turns ready or unhealthy.

mod tracked;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use addon_core::drift::DriftMode;
use addon_core::names::ModuleName;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{RuntimeHandle, Shared};
use tracked::Releases;

/// How the guard behaves (`--drift-mode`, `--release-health-timeout`).
#[derive(Debug, Clone)]
pub struct GuardSettings {
    /// The mode of objects whose annotation sets none.
    pub mode: DriftMode,
    /// How long a module's release may stay in progress before it counts as failed.
    pub health_timeout: Duration,
    /// Restores of one field within `fight_window`, at most, before the guard backs off.
    pub fight_limit: usize,
    pub fight_window: Duration,
    /// How long a field restored too often is left alone.
    pub fight_pause: Duration,
}

impl Default for GuardSettings {
    fn default() -> Self {
        Self {
            mode: DriftMode::Warn,
            health_timeout: Duration::from_secs(300),
            fight_limit: 5,
            fight_window: Duration::from_secs(60),
            fight_pause: Duration::from_secs(600),
        }
    }
}

/// What the module handlers tell the guard.
#[derive(Debug)]
enum Request {
    /// A Helm run of the module starts: its objects change on purpose.
    Pause(ModuleName),
    /// The module's Helm run succeeded: (re-)read its release.
    Track(ModuleName),
    /// The module's run found nothing to install: read its release unless it is tracked.
    Ensure(ModuleName),
    /// The module is being deleted.
    Forget(ModuleName),
}

/// A module's release as the guard sees it (the debug API's module list; the lead's status
/// object reads the same).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReleaseSummary {
    /// `ready`, `progressing` or `failed`.
    pub health: String,
    /// The object that is not ready, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Objects whose fields differ from the release now.
    pub drifted_objects: usize,
    /// Drifted objects written back since the release was tracked.
    pub restores: u64,
}

/// The guard's handle in the runtime's shared state.
pub(crate) struct Guard {
    settings: GuardSettings,
    requests: mpsc::UnboundedSender<Request>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Request>>>,
    summaries: Mutex<BTreeMap<ModuleName, ReleaseSummary>>,
}

impl Guard {
    pub fn new(settings: GuardSettings) -> Self {
        let (requests, receiver) = mpsc::unbounded_channel();
        Self {
            settings,
            requests,
            receiver: Mutex::new(Some(receiver)),
            summaries: Mutex::default(),
        }
    }

    pub fn pause(&self, module: &ModuleName) {
        let _ = self.requests.send(Request::Pause(module.clone()));
    }

    pub fn track(&self, module: &ModuleName) {
        let _ = self.requests.send(Request::Track(module.clone()));
    }

    pub fn ensure(&self, module: &ModuleName) {
        let _ = self.requests.send(Request::Ensure(module.clone()));
    }

    pub fn forget(&self, module: &ModuleName) {
        let _ = self.requests.send(Request::Forget(module.clone()));
    }

    /// Every tracked module's release summary.
    pub fn summaries(&self) -> BTreeMap<ModuleName, ReleaseSummary> {
        self.summaries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_summary(&self, module: &ModuleName, summary: Option<ReleaseSummary>) {
        let mut summaries = self
            .summaries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match summary {
            Some(summary) => summaries.insert(module.clone(), summary),
            None => summaries.remove(module),
        };
    }
}

/// The drift mode of `module`'s objects before their own annotations: `--drift-mode`, at most
/// [`DriftMode::Warn`] while the module is in `NoResourceReconciliation` maintenance (its objects
/// are left to the admin, as its releases are).
pub(crate) fn module_mode(shared: &Shared, module: &ModuleName) -> DriftMode {
    let mode = shared.guard.settings.mode;
    if mode == DriftMode::Enforce && shared.lock().store.config().module_in_maintenance(module) {
        return DriftMode::Warn;
    }
    mode
}

/// How often modules still in progress are checked against the health timeout.
const HEALTH_TICK: Duration = Duration::from_secs(5);
/// Object changes waiting for the guard, at most (the watches wait meanwhile).
const CHANGE_BACKLOG: usize = 256;

/// Runs the guard until `stop` fires.
pub(crate) async fn run(shared: Arc<Shared>, handle: RuntimeHandle, stop: CancellationToken) {
    let Some(mut requests) = shared
        .guard
        .receiver
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    else {
        return;
    };
    let (changes_tx, mut changes) = mpsc::channel(CHANGE_BACKLOG);
    let ctx = tracked::Ctx {
        shared: &shared,
        handle: &handle,
        changes: changes_tx,
    };
    let mut releases = Releases::new(&shared.guard.settings);
    let mut tick = tokio::time::interval(HEALTH_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            Some(request) = requests.recv() => match request {
                Request::Pause(module) => releases.pause(&module),
                Request::Track(module) => releases.track(&ctx, &module).await,
                Request::Ensure(module) => {
                    if !releases.is_tracked(&module) {
                        releases.track(&ctx, &module).await;
                    }
                }
                Request::Forget(module) => releases.forget(&ctx, &module),
            },
            Some(change) = changes.recv() => releases.on_change(&ctx, change).await,
            _ = tick.tick() => releases.check_timeouts(&ctx),
        }
    }
}
