//! In-memory edges for runtime tests: hooks that record their inputs and answer from a script,
//! and a Kubernetes whose objects and events the test controls.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use addon_core::hook_config::{KubernetesBinding, WatchEvent};
use addon_core::hook_output::kube_patch::{KubeOperation, ObjectRef};
use addon_core::names::ModuleName;
use addon_core::values::store::HookValues;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use addon_operator::edges::exec::hook_run::HookOutputs;
use addon_operator::runtime::edges::{
    EnabledAnswer, HookExecutor, HookFailure, HookRequest, HookSuccess, KubeError, KubeEvent,
    KubeEvents, MonitorKey, ObjectChange, ObjectPatches, ObjectsError, SettingsVerdict,
    WatchedKind,
};

/// One recorded hook (or `enabled` script) run.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    /// `<module>/<hook>` for module hooks, `<hook>` for global hooks, `<module>/enabled` for
    /// enabled scripts.
    pub name: String,
    /// The file that ran (the script of an `enabled` call).
    pub path: std::path::PathBuf,
    pub binding_context: Value,
    pub config_values: Value,
    pub values: Value,
}

type Responder = dyn Fn(&HookCall) -> Result<HookOutputs, HookFailure> + Send + Sync;
type Timing = dyn Fn(&HookCall) -> std::time::Duration + Send + Sync;

/// One hook run in (paused) time: when it began and when it answered.
#[derive(Debug, Clone)]
pub struct HookSpan {
    pub name: String,
    pub start: tokio::time::Instant,
    pub end: tokio::time::Instant,
}

/// Hooks that record every call and answer with `responder` (default: succeed, no output, at
/// once; `take_time` makes runs last).
#[derive(Clone)]
pub struct FakeHooks {
    calls: Arc<Mutex<Vec<HookCall>>>,
    responder: Arc<Mutex<Arc<Responder>>>,
    duration: Arc<Mutex<Option<Arc<Timing>>>>,
    spans: Arc<Mutex<Vec<HookSpan>>>,
}

impl Default for FakeHooks {
    fn default() -> Self {
        Self {
            calls: Arc::default(),
            responder: Arc::new(Mutex::new(Arc::new(|_| Ok(HookOutputs::default())))),
            duration: Arc::default(),
            spans: Arc::default(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeHooks {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how hooks answer. For `enabled` scripts the `values_patch` text of the answer is used
    /// as the `$MODULE_ENABLED_RESULT` content, the `config_values_patch` text as
    /// `$MODULE_ENABLED_REASON`.
    pub fn respond(
        &self,
        f: impl Fn(&HookCall) -> Result<HookOutputs, HookFailure> + Send + Sync + 'static,
    ) {
        *lock(&self.responder) = Arc::new(f);
    }

    /// Sets how long each hook run takes (tokio time: tests pause it).
    pub fn take_time(&self, f: impl Fn(&HookCall) -> std::time::Duration + Send + Sync + 'static) {
        *lock(&self.duration) = Some(Arc::new(f));
    }

    /// Every finished hook run with its start and end, in the order they ended.
    pub fn spans(&self) -> Vec<HookSpan> {
        lock(&self.spans).clone()
    }

    pub fn calls(&self) -> Vec<HookCall> {
        lock(&self.calls).clone()
    }

    /// Names of the calls so far, in order.
    pub fn names(&self) -> Vec<String> {
        lock(&self.calls).iter().map(|c| c.name.clone()).collect()
    }

    fn call(&self, call: HookCall) -> Result<HookOutputs, HookFailure> {
        lock(&self.calls).push(call.clone());
        let responder = Arc::clone(&lock(&self.responder));
        responder(&call)
    }
}

impl HookExecutor for FakeHooks {
    fn run_hook<'a>(
        &'a self,
        req: HookRequest<'a>,
    ) -> BoxFuture<'a, Result<HookSuccess, HookFailure>> {
        let name = match req.module {
            Some(m) => format!("{m}/{}", req.hook.name),
            None => req.hook.name.to_string(),
        };
        let call = HookCall {
            name,
            path: req.hook.path.clone(),
            binding_context: req.binding_context.to_value(),
            config_values: req.values.config_values.clone(),
            values: req.values.values.clone(),
        };
        let duration = lock(&self.duration).as_ref().map(|f| f(&call));
        let (name, start) = (call.name.clone(), tokio::time::Instant::now());
        let spans = Arc::clone(&self.spans);
        let result = self.call(call).map(|outputs| HookSuccess {
            outputs,
            ..Default::default()
        });
        Box::pin(async move {
            if let Some(duration) = duration {
                tokio::time::sleep(duration).await;
            }
            let end = tokio::time::Instant::now();
            lock(&spans).push(HookSpan { name, start, end });
            result
        })
    }

    fn run_enabled<'a>(
        &'a self,
        module: &'a ModuleName,
        script: &'a Path,
        values: &'a HookValues,
    ) -> BoxFuture<'a, Result<EnabledAnswer, HookFailure>> {
        let call = HookCall {
            name: format!("{module}/enabled"),
            path: script.to_path_buf(),
            binding_context: Value::Null,
            config_values: values.config_values.clone(),
            values: values.values.clone(),
        };
        let result = self.call(call).map(|out| EnabledAnswer {
            result_file: out.values_patch,
            stdout_last_line: String::new(),
            reason: out.config_values_patch,
            usage: Default::default(),
        });
        Box::pin(async move { result })
    }

    /// Recorded as `<module>/check` with the settings as config values; the answer's values
    /// patch is the verdict as JSON (empty: valid).
    fn check_settings<'a>(
        &'a self,
        module: &'a ModuleName,
        program: &'a Path,
        settings: &'a Value,
    ) -> BoxFuture<'a, Result<SettingsVerdict, HookFailure>> {
        let call = HookCall {
            name: format!("{module}/check"),
            path: program.to_path_buf(),
            binding_context: Value::Null,
            config_values: settings.clone(),
            values: Value::Null,
        };
        let result = self.call(call).and_then(|out| {
            if out.values_patch.is_empty() {
                return Ok(SettingsVerdict::valid());
            }
            serde_json::from_str(&out.values_patch).map_err(|e| HookFailure::new(e.to_string()))
        });
        Box::pin(async move { result })
    }
}

#[derive(Default)]
struct KubeState {
    /// kind (lowercase) → objects
    objects: BTreeMap<String, Vec<Value>>,
    monitors: BTreeMap<MonitorKey, String>,
    /// operations applied by hooks, in order
    applied: Vec<KubeOperation>,
    /// `kind/name` → the live object `get_object` reads first
    live: BTreeMap<String, Value>,
    /// the release guard's watches, by kind
    watches: Vec<(WatchedKind, mpsc::Sender<ObjectChange>)>,
}

fn live_key(kind: &str, name: &str) -> String {
    format!("{}/{name}", kind.to_lowercase())
}

/// Events a test may emit without yielding (`emit` does not wait; the operator's own channel is
/// far smaller and makes watches wait).
const FAKE_BACKLOG: usize = 1 << 16;

/// A Kubernetes whose objects the test sets; `emit` sends a watch event to every started monitor
/// of the object's kind (selectors are not evaluated).
#[derive(Clone)]
pub struct FakeKube {
    state: Arc<Mutex<KubeState>>,
    events: mpsc::Sender<KubeEvent>,
}

impl FakeKube {
    /// The fake and the receiver to give to the runtime.
    pub fn new() -> (Self, mpsc::Receiver<KubeEvent>) {
        let (events, rx) = mpsc::channel(FAKE_BACKLOG);
        let fake = Self {
            state: Arc::default(),
            events,
        };
        (fake, rx)
    }

    /// Objects that exist before a watch starts.
    pub fn set_objects(&self, kind: &str, objects: Vec<Value>) {
        lock(&self.state)
            .objects
            .insert(kind.to_lowercase(), objects);
    }

    /// The live copy of an object (`get_object` reads it).
    pub fn set_live(&self, object: Value) {
        let key = live_key(
            object["kind"].as_str().unwrap_or_default(),
            object["metadata"]["name"].as_str().unwrap_or_default(),
        );
        lock(&self.state).live.insert(key, object);
    }

    /// Changes an object as someone else would: sets its live copy and reports it to every
    /// release watch of its kind; waits until they took it.
    pub async fn change(&self, object: Value, deleted: bool) {
        self.set_live(object.clone());
        let watches: Vec<_> = lock(&self.state)
            .watches
            .iter()
            .filter(|(kind, _)| Some(kind.kind.as_str()) == object["kind"].as_str())
            .cloned()
            .collect();
        for (kind, sender) in watches {
            let change = ObjectChange {
                kind,
                deleted,
                object: object.clone(),
            };
            let _ = sender.send(change).await;
        }
    }

    /// The kinds the release guard watches.
    pub fn watched_kinds(&self) -> Vec<WatchedKind> {
        lock(&self.state)
            .watches
            .iter()
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The `$KUBERNETES_PATCH_PATH` operations hooks applied, in order.
    pub fn applied(&self) -> Vec<KubeOperation> {
        lock(&self.state).applied.clone()
    }

    /// Keys of the monitors started and not stopped.
    pub fn monitors(&self) -> Vec<MonitorKey> {
        lock(&self.state).monitors.keys().cloned().collect()
    }

    /// Sends an event for `object` (its `kind` decides which monitors get it).
    pub fn emit(&self, event: WatchEvent, object: Value) {
        let object = Arc::new(object);
        let kind = object["kind"].as_str().unwrap_or_default().to_lowercase();
        let state = lock(&self.state);
        for (key, monitor_kind) in &state.monitors {
            if *monitor_kind == kind {
                let _ = self.events.try_send(KubeEvent {
                    key: key.clone(),
                    event,
                    object: Arc::clone(&object),
                    kept: None,
                });
            }
        }
    }
}

impl ObjectPatches for FakeKube {
    fn apply<'a>(&'a self, ops: &'a [KubeOperation]) -> BoxFuture<'a, Result<(), ObjectsError>> {
        lock(&self.state).applied.extend(ops.iter().cloned());
        Box::pin(async { Ok(()) })
    }

    /// The object the last `Create` of the applied operations wrote, unless a later `Delete`
    /// removed it.
    fn get_object<'a>(
        &'a self,
        target: &'a ObjectRef,
    ) -> BoxFuture<'a, Result<Option<Value>, ObjectsError>> {
        let state = lock(&self.state);
        if let Some(live) = state.live.get(&live_key(&target.kind, &target.name)) {
            let live = live.clone();
            return Box::pin(async move { Ok(Some(live)) });
        }
        let mut found = None;
        for op in &state.applied {
            match op {
                KubeOperation::Create { object, .. }
                    if object["kind"] == target.kind.as_str()
                        && object["metadata"]["name"] == target.name.as_str() =>
                {
                    found = Some(object.clone());
                }
                KubeOperation::Delete { target: t, .. }
                    if t.kind == target.kind && t.name == target.name =>
                {
                    found = None;
                }
                _ => {}
            }
        }
        Box::pin(async move { Ok(found) })
    }

    fn watch_kind<'a>(
        &'a self,
        kind: &'a WatchedKind,
        changes: mpsc::Sender<ObjectChange>,
    ) -> BoxFuture<'a, Result<(), ObjectsError>> {
        lock(&self.state).watches.push((kind.clone(), changes));
        Box::pin(async { Ok(()) })
    }
}

impl KubeEvents for FakeKube {
    fn start<'a>(
        &'a self,
        key: &'a MonitorKey,
        binding: &'a KubernetesBinding,
    ) -> BoxFuture<'a, Result<Vec<Value>, KubeError>> {
        let kind = binding.kind.to_lowercase();
        let mut state = lock(&self.state);
        state.monitors.insert(key.clone(), kind.clone());
        let objects = state.objects.get(&kind).cloned().unwrap_or_default();
        Box::pin(async move { Ok(objects) })
    }

    fn stop(&self, key: &MonitorKey) {
        lock(&self.state).monitors.remove(key);
    }
}
