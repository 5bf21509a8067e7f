//! The guard's state: per module, the objects of its release with their baselines, statuses and
//! last drift; and what happens on a Helm run, an object change and a health timeout.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use addon_core::drift::{
    Baseline, DriftMode, DriftedField, FightGuard, ObjectSettings, Verdict, is_helm_hook,
};
use addon_core::error::error_chain;
use addon_core::health::{self, ModuleHealth, ObjectHealth};
use addon_core::hook_output::kube_patch::{KubeOperation, ObjectRef};
use addon_core::names::ModuleName;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{GuardSettings, ReleaseSummary, module_mode};
use crate::runtime::edges::report::RELEASE_HEALTHY;
use crate::runtime::edges::{
    AdminEvent, ObjectChange, Owner, Severity, StatusCondition, StatusUpdate, Subject, WatchedKind,
};
use crate::runtime::{RuntimeHandle, Shared};

/// Objects of one release the guard tracks, at most.
const MAX_OBJECTS: usize = 2000;

/// What the guard's steps use.
pub(super) struct Ctx<'a> {
    pub shared: &'a Shared,
    pub handle: &'a RuntimeHandle,
    pub changes: mpsc::Sender<ObjectChange>,
}

impl Ctx<'_> {
    fn report(&self, subject: Subject, severity: Severity, reason: &str, message: String) {
        let event = AdminEvent::new(subject, severity, reason, message);
        self.shared.edges.report.event(event);
    }
}

type Key = (WatchedKind, String);

struct TrackedObject {
    /// `ns/Kind/name` (`Kind/name` without a namespace).
    label: String,
    target: ObjectRef,
    mode: DriftMode,
    baseline: Baseline,
    health: ObjectHealth,
    /// The drift last reported (paths and values), so status updates do not repeat it.
    last_drift: Option<Vec<(String, Option<Value>)>>,
}

struct TrackedModule {
    since: Instant,
    paused: bool,
    objects: BTreeMap<Key, TrackedObject>,
    health: Option<ModuleHealth>,
    fights: FightGuard,
    restores: u64,
}

/// Every tracked release.
pub(super) struct Releases {
    settings: GuardSettings,
    modules: BTreeMap<ModuleName, TrackedModule>,
    index: HashMap<Key, ModuleName>,
    watched: HashSet<WatchedKind>,
}

impl Releases {
    pub fn new(settings: &GuardSettings) -> Self {
        Self {
            settings: settings.clone(),
            modules: BTreeMap::new(),
            index: HashMap::new(),
            watched: HashSet::new(),
        }
    }

    /// Tracked and not paused by a Helm run.
    pub fn is_tracked(&self, module: &ModuleName) -> bool {
        self.modules.get(module).is_some_and(|t| !t.paused)
    }

    pub fn pause(&mut self, module: &ModuleName) {
        if let Some(tracked) = self.modules.get_mut(module) {
            tracked.paused = true;
        }
    }

    pub fn forget(&mut self, ctx: &Ctx<'_>, module: &ModuleName) {
        if let Some(tracked) = self.modules.remove(module) {
            for key in tracked.objects.keys() {
                self.index.remove(key);
            }
        }
        ctx.shared.guard.set_summary(module, None);
    }

    /// Reads `module`'s release after its Helm run: the baselines from the live objects, their
    /// statuses, and watches of their kinds.
    pub async fn track(&mut self, ctx: &Ctx<'_>, module: &ModuleName) {
        self.forget(ctx, module);
        let objects = match ctx.shared.edges.helm.release_objects(module.as_str()).await {
            Ok(Some(objects)) => objects,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(module = %module, error = %error_chain(&error), "cannot read the module's release: its drift and health are not watched");
                return;
            }
        };
        let mode = module_mode(ctx.shared, module);
        let mut tracked = TrackedModule {
            since: Instant::now(),
            paused: false,
            objects: BTreeMap::new(),
            health: None,
            fights: FightGuard::new(
                self.settings.fight_limit,
                self.settings.fight_window,
                self.settings.fight_pause,
            ),
            restores: 0,
        };
        let mut live_copies = Vec::new();
        for desired in objects
            .iter()
            .filter(|o| !is_helm_hook(o))
            .take(MAX_OBJECTS)
        {
            let Some((key, object, live)) = self.record(ctx, module, mode, desired).await else {
                continue;
            };
            if let Some(live) = live {
                live_copies.push((key.clone(), live));
            }
            self.index.insert(key.clone(), module.clone());
            tracked.objects.insert(key, object);
        }
        self.modules.insert(module.clone(), tracked);
        // a field changed before the release was read (while the operator was away)
        for (key, live) in live_copies {
            self.check_drift(ctx, module, &key, &live).await;
        }
        self.report_health(ctx, module);
    }

    /// One object of the release: its baseline and status, and a watch of its kind.
    async fn record(
        &mut self,
        ctx: &Ctx<'_>,
        module: &ModuleName,
        module_mode: DriftMode,
        desired: &Value,
    ) -> Option<(Key, TrackedObject, Option<Value>)> {
        let target = object_ref(desired)?;
        let kind = WatchedKind {
            api_version: target.api_version.clone().unwrap_or_default(),
            kind: target.kind.clone(),
            namespace: target.namespace.clone(),
        };
        let settings = ObjectSettings::of(desired);
        let label = label(&target);
        if !settings.rejected.is_empty() {
            tracing::warn!(module = %module, object = %label, rejected = ?settings.rejected, "drift annotations that cannot be read are left out");
        }
        let mode = settings.mode(module_mode);
        let live = match ctx.shared.edges.objects.get_object(&target).await {
            Ok(live) => live,
            Err(error) => {
                tracing::debug!(module = %module, object = %label, error = %error_chain(&error), "cannot read a release object");
                None
            }
        };
        let baseline = match &live {
            Some(live) if mode != DriftMode::Off => {
                Baseline::record(desired, live, &settings.ignore)
            }
            _ => Baseline::default(),
        };
        let health = live.as_ref().map_or_else(
            || ObjectHealth::InProgress("not found".into()),
            health::assess,
        );
        self.ensure_watch(ctx, &kind).await;
        let object = TrackedObject {
            label,
            target,
            mode,
            baseline,
            health,
            last_drift: None,
        };
        Some(((kind, object.target.name.clone()), object, live))
    }

    async fn ensure_watch(&mut self, ctx: &Ctx<'_>, kind: &WatchedKind) {
        if self.watched.contains(kind) {
            return;
        }
        let objects = &ctx.shared.edges.objects;
        match objects.watch_kind(kind, ctx.changes.clone()).await {
            Ok(()) => {
                self.watched.insert(kind.clone());
            }
            Err(error) => {
                tracing::warn!(kind = %kind.kind, error = %error_chain(&error), "cannot watch release objects of a kind; their drift is not seen")
            }
        }
    }

    /// A watched object changed: its status, and drift unless its module's Helm run is on.
    pub async fn on_change(&mut self, ctx: &Ctx<'_>, change: ObjectChange) {
        let Some(name) = change
            .object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
        else {
            return;
        };
        let key = (change.kind, name.to_string());
        let Some(module) = self.index.get(&key).cloned() else {
            return;
        };
        let Some(tracked) = self.modules.get_mut(&module) else {
            return;
        };
        let Some(object) = tracked.objects.get_mut(&key) else {
            return;
        };
        if tracked.paused {
            return;
        }
        if change.deleted {
            object.health = ObjectHealth::InProgress("deleted".into());
            // the resource monitor's counter and words: the object is absent, found sooner
            let metrics = &ctx.shared.metrics;
            metrics.absent_resources(module.as_str(), &object.label, 1);
            tracing::warn!(module = %module, object = %object.label, "the module's release drifted from its chart: an object of it was deleted; running the module");
            ctx.handle.resources_absent(&module);
        } else {
            object.health = health::assess(&change.object);
            self.check_drift(ctx, &module, &key, &change.object).await;
        }
        self.report_health(ctx, &module);
    }

    /// Compares `live` with the object's baseline and reports or restores what differs.
    async fn check_drift(&mut self, ctx: &Ctx<'_>, module: &ModuleName, key: &Key, live: &Value) {
        let Some(tracked) = self.modules.get_mut(module) else {
            return;
        };
        let Some(object) = tracked.objects.get_mut(key) else {
            return;
        };
        if object.mode == DriftMode::Off {
            return;
        }
        let drifted = object.baseline.diff(live);
        let signature: Vec<_> = drifted
            .iter()
            .map(|d| (d.path.clone(), d.got.clone()))
            .collect();
        if drifted.is_empty() {
            object.last_drift = None;
        } else if object.last_drift.as_ref() != Some(&signature) {
            object.last_drift = Some(signature);
            let metrics = &ctx.shared.metrics;
            metrics.module_drift(module.as_str(), &object.target.kind, object.mode.as_str());
            if object.mode == DriftMode::Enforce {
                let now = Instant::now().into_std();
                let restored =
                    enforce(ctx, module, object, &mut tracked.fights, drifted, live, now).await;
                tracked.restores += u64::from(restored);
            } else {
                warn_drift(ctx, module, object, &drifted);
            }
        }
        let count = tracked
            .objects
            .values()
            .filter(|o| o.last_drift.is_some())
            .count();
        ctx.shared
            .metrics
            .module_drifted_objects(module.as_str(), count);
        let drift = StatusUpdate::Drift {
            count: count as u64,
        };
        (ctx.shared.edges.report).status(Owner::Module(module.clone()), drift);
    }

    /// Modules still in progress fail once the timeout passed.
    pub fn check_timeouts(&mut self, ctx: &Ctx<'_>) {
        let progressing: Vec<ModuleName> = self
            .modules
            .iter()
            .filter(|(_, t)| !matches!(t.health, Some(ModuleHealth::Ready)))
            .map(|(m, _)| m.clone())
            .collect();
        for module in progressing {
            self.report_health(ctx, &module);
        }
    }

    /// Recomputes `module`'s readiness; logs, counts and reports a change.
    fn report_health(&mut self, ctx: &Ctx<'_>, module: &ModuleName) {
        let Some(tracked) = self.modules.get_mut(module) else {
            return;
        };
        let statuses = tracked
            .objects
            .values()
            .map(|o| (o.label.as_str(), &o.health));
        let elapsed: Duration = tracked.since.elapsed();
        let health = health::summarize(statuses, elapsed, self.settings.health_timeout);
        let previous = tracked.health.replace(health.clone());
        let summary = summary(tracked, &health);
        ctx.shared.guard.set_summary(module, Some(summary));
        let changed = previous
            .as_ref()
            .map(|p| (p.as_str(), p.detail().map(|d| d.0)))
            != Some((health.as_str(), health.detail().map(|d| d.0)));
        if !changed || tracked.paused {
            return;
        }
        let was_ready = matches!(previous, Some(ModuleHealth::Ready));
        let condition = StatusUpdate::Condition(health_condition(&health));
        (ctx.shared.edges.report).status(Owner::Module(module.clone()), condition);
        ctx.shared
            .metrics
            .module_ready(module.as_str(), health == ModuleHealth::Ready);
        let subject_of = |label: &str| {
            let object = tracked.objects.values().find(|o| o.label == label);
            object.map_or(Subject::Module(module.clone()), |o| Subject::Object {
                module: module.clone(),
                object: o.target.clone(),
            })
        };
        match &health {
            ModuleHealth::Ready => {
                tracing::info!(module = %module, "the module's release is ready");
                let message = format!("every object of module '{module}' is ready");
                ctx.report(
                    Subject::Module(module.clone()),
                    Severity::Normal,
                    "Ready",
                    message,
                );
            }
            ModuleHealth::Failed { object, reason } => {
                tracing::warn!(module = %module, object = %object, reason = %reason, "the module's release is unhealthy");
                let message = format!("{object} of module '{module}' is unhealthy: {reason}");
                ctx.report(subject_of(object), Severity::Warning, "Unhealthy", message);
            }
            ModuleHealth::Progressing { object, reason } => {
                tracing::info!(module = %module, object = %object, reason = %reason, "the module's release is not ready yet");
                if was_ready {
                    let message = format!("{object} of module '{module}' is not ready: {reason}");
                    ctx.report(subject_of(object), Severity::Warning, "NotReady", message);
                }
            }
        }
    }
}

/// The `ReleaseHealthy` condition of the module's status object for `health`.
fn health_condition(health: &ModuleHealth) -> StatusCondition {
    let (status, reason, message) = match health {
        ModuleHealth::Ready => (true, "Ready", "every object of the release is ready".into()),
        ModuleHealth::Progressing { object, reason } => {
            (false, "Progressing", format!("{object}: {reason}"))
        }
        ModuleHealth::Failed { object, reason } => (false, "Failed", format!("{object}: {reason}")),
    };
    StatusCondition {
        kind: RELEASE_HEALTHY.into(),
        status,
        reason: reason.into(),
        message,
    }
}

fn summary(tracked: &TrackedModule, health: &ModuleHealth) -> ReleaseSummary {
    let detail = health.detail();
    ReleaseSummary {
        health: health.as_str().to_string(),
        object: detail.map(|d| d.0.to_string()),
        reason: detail.map(|d| d.1.to_string()),
        drifted_objects: tracked
            .objects
            .values()
            .filter(|o| o.last_drift.is_some())
            .count(),
        restores: tracked.restores,
    }
}

/// `path (want → got)`, comma-separated.
fn describe(fields: &[DriftedField]) -> String {
    fields
        .iter()
        .map(|f| {
            let got = f
                .got
                .as_ref()
                .map_or("absent".to_string(), Value::to_string);
            format!("{} ({} → {got})", f.path, f.want)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn warn_drift(ctx: &Ctx<'_>, module: &ModuleName, object: &TrackedObject, fields: &[DriftedField]) {
    let fields = describe(fields);
    tracing::warn!(module = %module, object = %object.label, fields = %fields, mode = %object.mode, "drift: fields of a release object changed outside the release");
    let message = format!("{fields} changed outside the release of module '{module}'");
    let subject = Subject::Object {
        module: module.clone(),
        object: object.target.clone(),
    };
    ctx.report(subject, Severity::Warning, "DriftDetected", message);
}

/// Writes the drifted fields back in one JSON patch guarded by the object's resourceVersion,
/// leaving out fields the fight guard holds back; whether a write was made.
async fn enforce(
    ctx: &Ctx<'_>,
    module: &ModuleName,
    object: &mut TrackedObject,
    fights: &mut FightGuard,
    drifted: Vec<DriftedField>,
    live: &Value,
    now: std::time::Instant,
) -> bool {
    let subject = Subject::Object {
        module: module.clone(),
        object: object.target.clone(),
    };
    let mut restore = Vec::new();
    let mut held = Vec::new();
    for field in drifted {
        match fights.check(&format!("{}{}", object.label, field.path), now) {
            Verdict::Restore => restore.push(field),
            Verdict::BackOff { until } => {
                let pause = until.saturating_duration_since(now).as_secs();
                tracing::warn!(module = %module, object = %object.label, field = %field.path, pause_s = pause, "another writer keeps changing a field: not enforcing it for a while");
                let message = format!(
                    "{} of {} was restored too often (another controller writes it?): not enforced for {pause}s",
                    field.path, object.label
                );
                ctx.report(
                    subject.clone(),
                    Severity::Warning,
                    "DriftEnforcementPaused",
                    message,
                );
                held.push(field);
            }
            Verdict::Paused => held.push(field),
        }
    }
    if restore.is_empty() {
        return false;
    }
    let version = live
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    let Ok(patch) = Baseline::restore_patch(&restore, version) else {
        return false;
    };
    let op = KubeOperation::JsonPatch {
        target: object.target.clone(),
        patch,
        ignore_missing_object: true,
    };
    let fields = describe(&restore);
    match ctx
        .shared
        .edges
        .objects
        .apply(std::slice::from_ref(&op))
        .await
    {
        Ok(()) => {
            tracing::info!(module = %module, object = %object.label, fields = %fields, "drift restored");
            ctx.shared
                .metrics
                .module_drift_restored(module.as_str(), &object.target.kind);
            let message = format!("restored {fields} to the release of module '{module}'");
            ctx.report(subject, Severity::Normal, "DriftRestored", message);
            // a held field stays reported; restored ones are compared afresh
            object.last_drift = (!held.is_empty()).then(|| {
                held.iter()
                    .map(|d| (d.path.clone(), d.got.clone()))
                    .collect()
            });
            true
        }
        Err(error) => {
            // a newer write came first (the resourceVersion test): its watch event retries
            tracing::info!(module = %module, object = %object.label, error = %error_chain(&error), "drift not restored yet");
            object.last_drift = None;
            false
        }
    }
}

/// The target of a manifest object (`apiVersion`, `kind`, namespace, name).
fn object_ref(object: &Value) -> Option<ObjectRef> {
    let text = |pointer| object.pointer(pointer).and_then(Value::as_str);
    Some(ObjectRef {
        api_version: text("/apiVersion").map(str::to_string),
        kind: text("/kind")?.to_string(),
        namespace: text("/metadata/namespace").map(str::to_string),
        name: text("/metadata/name")?.to_string(),
        subresource: None,
    })
}

fn label(target: &ObjectRef) -> String {
    match &target.namespace {
        Some(ns) => format!("{ns}/{}/{}", target.kind, target.name),
        None => format!("{}/{}", target.kind, target.name),
    }
}
