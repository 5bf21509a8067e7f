//! [`KubeReporter`]: the Kubernetes side of the runtime's [`Reporter`] port: core/v1 Events
//! (correlated as client-go's recorder does) and one Module status object per module, sent by
//! a background task so that no runtime task ever waits for the API.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use addon_core::names::ModuleName;
use tokio::sync::{Notify, mpsc};

use crate::runtime::edges::{AdminEvent, Leading, Owner, Reporter, StatusUpdate};
use crate::runtime::metrics::Metrics;

pub mod correlator;
mod objects;
mod sender;
pub mod status;

pub use objects::{GLOBAL_OBJECT, MODULE_API_VERSION, MODULE_CRD_NAME, OWNER_LABEL};
use status::ModuleStatus;

/// Events waiting for the sender at most; more are dropped (and counted).
pub const EVENT_QUEUE: usize = 1024;
/// How often status objects are written at most (each, when it changed).
pub const STATUS_PERIOD: Duration = Duration::from_secs(1);
/// The Event source component.
pub const COMPONENT: &str = "addon-operator";

/// What the reporter does and where.
#[derive(Debug, Clone)]
pub struct RecorderSettings {
    /// The operator's namespace (the ConfigMap's).
    pub namespace: String,
    /// The config ConfigMap: Events go on it when status objects are off.
    pub config_map: String,
    /// `reportingInstance` and `source.host`: the pod name, else the host name.
    pub instance: String,
    /// Keep a Module object per module (`--module-status-objects`).
    pub status_objects: bool,
    /// Send Events (`--admin-events`).
    pub events: bool,
    /// With `--ha`: nothing is written until [`KubeReporter::lead_with`] gave the leadership,
    /// and then only while leading.
    pub ha: bool,
}

/// The status objects' state, shared by the runtime's calls and the background task.
#[derive(Debug, Default)]
struct Book {
    /// The modules of the tree, until the task has synced the objects with them.
    tree: Option<BTreeSet<String>>,
    states: BTreeMap<String, ModuleStatus>,
    dirty: BTreeSet<String>,
}

#[derive(Debug)]
struct Inner {
    book: Mutex<Book>,
    changed: Notify,
    leadership: OnceLock<Arc<dyn Leading>>,
    ha: bool,
    metrics: Option<Arc<Metrics>>,
}

/// The reporter the runtime holds; cloning shares it.
#[derive(Debug, Clone)]
pub struct KubeReporter {
    events: Option<mpsc::Sender<AdminEvent>>,
    inner: Arc<Inner>,
    status_objects: bool,
}

impl KubeReporter {
    /// Starts the background task that sends what the runtime reports.
    pub fn start(
        client: kube::Client,
        resolver: Arc<super::KindResolver>,
        settings: RecorderSettings,
        metrics: Option<Arc<Metrics>>,
    ) -> Self {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let inner = Arc::new(Inner {
            book: Mutex::new(Book::default()),
            changed: Notify::new(),
            leadership: OnceLock::new(),
            ha: settings.ha,
            metrics,
        });
        let status_objects = settings.status_objects;
        let events = settings.events.then_some(tx);
        let task = sender::Task::new(client, resolver, settings, Arc::clone(&inner));
        tokio::spawn(task.run(rx));
        Self {
            events,
            inner,
            status_objects,
        }
    }

    /// With HA: only while `leading` says so are status objects written.
    pub fn lead_with(&self, leading: Arc<dyn Leading>) {
        let _ = self.inner.leadership.set(leading);
    }
}

impl Inner {
    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn leading(&self) -> bool {
        match self.leadership.get() {
            Some(leadership) => leadership.is_leading(),
            None => !self.ha,
        }
    }

    fn count(&self, result: &str) {
        if let Some(metrics) = &self.metrics {
            metrics.admin_event(result);
        }
    }
}

/// The name of `owner`'s status object.
pub fn object_name(owner: &Owner) -> String {
    match owner {
        Owner::Module(m) => m.as_str().to_string(),
        Owner::Global => GLOBAL_OBJECT.to_string(),
    }
}

impl Reporter for KubeReporter {
    fn event(&self, event: AdminEvent) {
        let Some(tx) = &self.events else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(event) {
            self.inner.count("dropped_queue_full");
        }
    }

    fn tree(&self, modules: &[ModuleName]) {
        if !self.status_objects {
            return;
        }
        let mut names: BTreeSet<String> = modules.iter().map(|m| m.as_str().into()).collect();
        names.insert(GLOBAL_OBJECT.to_string());
        let mut book = self.inner.book();
        book.states.retain(|name, _| names.contains(name));
        for name in &names {
            if !book.states.contains_key(name) {
                book.states.insert(name.clone(), ModuleStatus::default());
                book.dirty.insert(name.clone());
            }
        }
        book.tree = Some(names);
        drop(book);
        self.inner.changed.notify_one();
    }

    fn status(&self, owner: Owner, update: StatusUpdate) {
        if !self.status_objects {
            return;
        }
        let name = object_name(&owner);
        let now = now_rfc3339();
        let mut book = self.inner.book();
        let state = book.states.entry(name.clone()).or_default();
        let before = state.clone();
        state.apply(update, &now);
        if *state != before {
            book.dirty.insert(name);
        }
    }
}

/// The wall-clock time as the API writes it (seconds).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Debug)]
    struct Flag(AtomicBool);

    impl Leading for Flag {
        fn is_leading(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn inner(ha: bool) -> Inner {
        Inner {
            book: Mutex::new(Book::default()),
            changed: Notify::new(),
            leadership: OnceLock::new(),
            ha,
            metrics: None,
        }
    }

    #[test]
    fn with_ha_only_the_leader_writes_and_not_before_the_leadership_is_known() {
        assert!(inner(false).leading(), "one replica always writes");
        let ha = inner(true);
        assert!(!ha.leading(), "no leadership known yet");
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let _ = ha.leadership.set(Arc::clone(&flag) as Arc<dyn Leading>);
        assert!(!ha.leading());
        flag.0.store(true, Ordering::SeqCst);
        assert!(ha.leading());
    }

    #[test]
    fn the_global_hooks_object_cannot_clash_with_a_module() {
        assert_eq!(object_name(&Owner::Global), GLOBAL_OBJECT);
        let web = ModuleName::new("web").unwrap();
        assert_eq!(object_name(&Owner::Module(web)), "web");
    }
}
