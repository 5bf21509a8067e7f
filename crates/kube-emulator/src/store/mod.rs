//! The object store: objects per resource, the global resourceVersion, and every write's effects.

mod deletion;
mod lists;
mod objects;
mod update;

pub use lists::{Cursor, Page, PageRequest};
use lists::{Kept, Source, read_page};
use objects::{Objects, Tree};
use update::merge_update;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::clock;
use crate::defaults;
use crate::events::{Event, EventType, History};
use crate::meta;
use crate::persist::{self, PersistError, Snapshot, StoredObject, Wal};
use crate::resources::{Registry, ResKey, ResourceInfo};
use crate::simulate;
use crate::status::ApiError;

/// Namespaces that always exist.
pub const DEFAULT_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];
/// The one Node the emulated cluster has.
pub const NODE_NAME: &str = "kube-emulator";
/// Events kept in the snapshot for watch resumes across restarts.
const PERSISTED_HISTORY: usize = 2000;

/// How the store keeps its data.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Directory for the snapshot and log; `None` keeps everything in memory.
    pub data_dir: Option<PathBuf>,
    /// How many events watches can resume from.
    pub history_limit: usize,
    /// Whether each write is fsync'ed before it is acknowledged.
    pub fsync: bool,
    /// Whether new or changed specs get the status a healthy controller would report.
    pub simulate_status: bool,
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Compute but do not persist.
    pub dry_run: bool,
    /// Leave dependents alone (`propagationPolicy=Orphan`).
    pub orphan: bool,
    /// Required uid.
    pub uid: Option<String>,
    /// Required resourceVersion.
    pub resource_version: Option<String>,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy)]
pub enum WatchFrom {
    /// Synthetic ADDED events for the current objects, then live events.
    Now,
    /// Events after this resourceVersion.
    After(u64),
}

/// The events a watch sends before the live ones.
pub enum Initial {
    /// The objects of a resource at the watch's start, sent as synthetic ADDED events.
    Objects(ResKey, Tree),
    /// Events from the history (oldest first).
    Events(Vec<Arc<Event>>),
}

impl Initial {
    /// The events, made as they are read (outside the store's lock); of the objects of a
    /// snapshot only those `wanted` accepts (a copy is made of those only).
    pub fn events<'a>(
        &'a self,
        wanted: impl Fn(&Value) -> bool + Send + 'a,
    ) -> Box<dyn Iterator<Item = Arc<Event>> + Send + 'a> {
        match self {
            Self::Objects(key, tree) => Box::new(
                (tree.values())
                    .filter(move |o| wanted(o))
                    .map(|o| synthetic_added(key, o)),
            ),
            Self::Events(events) => Box::new(events.iter().cloned()),
        }
    }
}

/// A registered watch: its first events and the live feed.
pub struct WatchStart {
    /// Events to send first.
    pub initial: Initial,
    /// Live events of every resource, from `rv` on.
    pub live: broadcast::Receiver<Arc<Event>>,
    /// The store's resourceVersion when the watch started.
    pub rv: u64,
}

/// All objects and the machinery of writes (log, history, watch feed).
pub struct Store {
    state: Mutex<State>,
    /// Objects lists have looked at so far (what lists cost; tests read it).
    examined: AtomicU64,
}

struct State {
    rv: u64,
    objects: BTreeMap<ResKey, Objects>,
    history: History,
    registry: Arc<Registry>,
    wal: Option<Wal>,
    feed: broadcast::Sender<Arc<Event>>,
    /// Snapshots paged lists started from, for their later pages.
    kept: Kept,
    simulate_status: bool,
    /// Set when another store took over the data directory: writes are refused.
    closed: bool,
}

impl Store {
    /// Opens the store, loading and checkpointing the data directory if there is one.
    pub fn open(config: &StoreConfig) -> Result<Self, PersistError> {
        let (feed, _) = broadcast::channel(16 * 1024);
        let mut state = State {
            rv: 0,
            objects: BTreeMap::new(),
            history: History::new(config.history_limit, 0),
            registry: Arc::new(Registry::new(std::iter::empty())),
            wal: None,
            feed,
            kept: Kept::default(),
            simulate_status: config.simulate_status,
            closed: false,
        };
        if let Some(dir) = &config.data_dir {
            let loaded = persist::load(dir)?;
            state.restore(loaded, config.history_limit);
            state.wal = Some(persist::checkpoint(dir, &state.snapshot(), config.fsync)?);
        }
        for ns in DEFAULT_NAMESPACES {
            let namespace =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            state.ensure(&ResKey::namespaces(), namespace);
        }
        state.ensure(&ResKey::new("", "nodes"), defaults::node(NODE_NAME));
        Ok(Self {
            state: Mutex::new(state),
            examined: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The resources served right now.
    pub fn registry(&self) -> Arc<Registry> {
        self.lock().registry.clone()
    }

    /// The last resourceVersion handed out.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// One object.
    pub fn get(&self, key: &ResKey, ns: &str, name: &str) -> Option<Value> {
        self.lock().object(key, ns, name).cloned()
    }

    /// Objects of a resource (in one namespace, or all), sorted by namespace and name, read
    /// outside the lock from a snapshot.
    pub fn list(&self, key: &ResKey, ns: Option<&str>) -> (Vec<Value>, u64) {
        let source = self.lock().source(key, ns);
        let whole = PageRequest {
            ns,
            ..Default::default()
        };
        let (page, _) = read_page(&source, &whole, |_| true);
        (page.items, page.rv)
    }

    /// One page of a list. The first page takes a snapshot of the resource (a pointer copy) and
    /// later pages (`req.from`) read the same one, so a paged list shows the state at its first
    /// page's resourceVersion. Pages are read outside the lock, each resuming after the previous
    /// page's last object, so a paged list of N objects looks at about N objects (plus one per
    /// page) and never stops writers or watches. Expired when the snapshot is no longer kept.
    pub fn list_page(
        &self,
        key: &ResKey,
        req: &PageRequest<'_>,
        matches: impl Fn(&Value) -> bool,
    ) -> Result<Page, ApiError> {
        let source = match req.from {
            None => self.lock().source(key, req.ns),
            Some(cursor) => self.kept_source(key, cursor)?,
        };
        let (page, examined) = read_page(&source, req, matches);
        self.examined.fetch_add(examined as u64, Ordering::Relaxed);
        if req.from.is_none() && page.next.is_some() {
            self.lock()
                .kept
                .keep(key, source.rv, source.tree, Instant::now());
        }
        Ok(page)
    }

    fn kept_source(&self, key: &ResKey, cursor: &Cursor) -> Result<Source, ApiError> {
        let tree = self
            .lock()
            .kept
            .find(key, cursor.rv, Instant::now())
            .ok_or(ApiError::ContinueExpired)?;
        Ok(Source {
            tree,
            rv: cursor.rv,
            total: 0,
        })
    }

    /// Objects lists have looked at so far: a paged list of N objects adds about N.
    pub fn objects_examined(&self) -> u64 {
        self.examined.load(Ordering::Relaxed)
    }

    /// Creates an object (namespace already resolved into `obj`'s metadata by the caller).
    pub fn create(
        &self,
        info: &ResourceInfo,
        obj: Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        self.lock().create(info, obj, dry_run)
    }

    /// Replaces an object (or only its status).
    pub fn update(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: Value,
        status_only: bool,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        self.lock()
            .update(info, ns, name, obj, status_only, dry_run)
    }

    /// Read-modify-write under the lock: `change` gets the current object (`None` if absent, which
    /// creates when `create_missing`), and its result is written like an update.
    #[allow(clippy::too_many_arguments)]
    pub fn modify(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        status_only: bool,
        dry_run: bool,
        create_missing: bool,
        change: impl FnOnce(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        let mut state = self.lock();
        match state.object(&info.key(), ns, name).cloned() {
            Some(current) => {
                let new = change(Some(&current))?;
                state.update(info, ns, name, new, status_only, dry_run)
            }
            None if create_missing => {
                let mut new = change(None)?;
                meta::set_meta(&mut new, "name", json!(name));
                if info.namespaced {
                    meta::set_meta(&mut new, "namespace", json!(ns));
                }
                state.create(info, new, dry_run)
            }
            None => Err(ApiError::not_found(info.qualified(), name)),
        }
    }

    /// Deletes an object (finalizers and namespace contents honoured).
    pub fn delete(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        self.lock().delete(info, ns, name, opts)
    }

    /// Refuses all further writes and releases the log, so a new store can own the data
    /// directory even if an old connection still holds this one.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.wal = None;
    }

    /// Forgets the event history and the snapshots of paged lists: resuming a watch from any
    /// version handed out so far (the current one included), or a list from any `continue`
    /// token, gets `410 Gone`.
    pub fn compact_history(&self) {
        let mut state = self.lock();
        let rv = state.rv + 1;
        state.history.compact_to(rv);
        state.kept.clear();
    }

    /// Registers a watch on every resource; the caller filters. Starting from now takes a
    /// snapshot of the resource; its events are made as the watch sends them, outside the lock.
    pub fn watch(&self, key: &ResKey, from: WatchFrom) -> Result<WatchStart, ApiError> {
        let state = self.lock();
        let live = state.feed.subscribe();
        let initial = match from {
            WatchFrom::Now => Initial::Objects(key.clone(), state.snapshot_of(key)),
            // A version from the future was handed out by another (in-memory) instance: make the
            // client relist rather than wait for versions that mean something else here.
            WatchFrom::After(rv) if rv > state.rv => {
                return Err(ApiError::Expired {
                    requested: rv,
                    oldest: state.rv,
                });
            }
            WatchFrom::After(rv) => Initial::Events(
                state
                    .history
                    .since(rv)
                    .map_err(|oldest| ApiError::Expired {
                        requested: rv,
                        oldest,
                    })?
                    .into_iter()
                    .filter(|e| e.key == *key)
                    .collect(),
            ),
        };
        Ok(WatchStart {
            initial,
            live,
            rv: state.rv,
        })
    }
}

fn synthetic_added(key: &ResKey, obj: &Value) -> Arc<Event> {
    Arc::new(Event {
        rv: meta::resource_version(obj).unwrap_or(0),
        kind: EventType::Added,
        key: key.clone(),
        object: obj.clone(),
        previous: None,
    })
}

/// The API server's path-segment rules: a name must be usable in a URL path.
fn validate_name(info: &ResourceInfo, name: &str) -> Result<(), ApiError> {
    let problem = if name.len() > 253 {
        Some("must be no more than 253 characters")
    } else if name == "." || name == ".." {
        Some("may not be '.' or '..'")
    } else if name.contains(['/', '%']) {
        Some("may not contain '/' or '%'")
    } else {
        None
    };
    match problem {
        Some(p) => Err(ApiError::Invalid(format!(
            "{} \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": {p}",
            info.kind
        ))),
        None => Ok(()),
    }
}

fn conflict(info: &ResourceInfo, name: &str, message: &str) -> ApiError {
    ApiError::Conflict {
        resource: info.qualified(),
        name: name.to_string(),
        message: message.into(),
    }
}

impl State {
    fn object(&self, key: &ResKey, ns: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(key)?
            .get(&(ns.to_string(), name.to_string()))
    }

    /// The objects of a resource now (O(1)).
    fn snapshot_of(&self, key: &ResKey) -> Tree {
        self.objects
            .get(key)
            .map(Objects::snapshot)
            .unwrap_or_default()
    }

    /// What a list starting now reads: a snapshot, its version and its size.
    fn source(&self, key: &ResKey, ns: Option<&str>) -> Source {
        Source {
            tree: self.snapshot_of(key),
            rv: self.rv,
            total: self.objects.get(key).map_or(0, |m| m.count(ns)),
        }
    }

    fn restore(&mut self, loaded: persist::Loaded, history_limit: usize) {
        let snap = loaded.snapshot;
        self.rv = snap.rv;
        self.history = History::new(history_limit, snap.compacted_rv);
        for stored in snap.objects {
            self.place(&stored.key, stored.object, EventType::Added);
        }
        for event in snap.history {
            self.history.push(Arc::new(event));
        }
        for event in loaded.events {
            self.rv = event.rv;
            self.place(&event.key, event.object.clone(), event.kind);
            self.history.push(Arc::new(event));
        }
        self.refresh_registry();
    }

    fn snapshot(&self) -> Snapshot {
        let objects = self
            .objects
            .iter()
            .flat_map(|(key, m)| {
                m.values().map(|o| StoredObject {
                    key: key.clone(),
                    object: o.clone(),
                })
            })
            .collect();
        let all: Vec<&Arc<Event>> = self.history.events().collect();
        let kept = &all[all.len().saturating_sub(PERSISTED_HISTORY)..];
        let compacted_rv = match kept.first() {
            Some(first) if kept.len() < all.len() => first.rv - 1,
            Some(_) => self.history.compacted_rv(),
            None => self.rv,
        };
        let history = kept.iter().map(|e| e.as_ref().clone()).collect();
        Snapshot {
            rv: self.rv,
            compacted_rv,
            objects,
            history,
        }
    }

    /// Puts or removes an object in the maps, without any event.
    fn place(&mut self, key: &ResKey, obj: Value, kind: EventType) {
        let id = (
            meta::namespace(&obj).unwrap_or_default().to_string(),
            meta::name(&obj).unwrap_or_default().to_string(),
        );
        let map = self.objects.entry(key.clone()).or_default();
        match kind {
            EventType::Deleted => map.remove(&id),
            _ => map.insert(id, obj),
        }
    }

    fn refresh_registry(&mut self) {
        let crds = self.objects.get(&ResKey::crds());
        self.registry = Arc::new(Registry::new(crds.into_iter().flat_map(|m| m.values())));
    }

    /// Stamps a new resourceVersion, logs, applies and publishes one change.
    fn commit(
        &mut self,
        key: &ResKey,
        kind: EventType,
        mut obj: Value,
        previous: Option<Value>,
    ) -> Result<Value, ApiError> {
        if self.closed {
            return Err(ApiError::Internal("the emulator is restarting".into()));
        }
        let rv = self.rv + 1;
        meta::set_meta(&mut obj, "resourceVersion", json!(rv.to_string()));
        let event = Event {
            rv,
            kind,
            key: key.clone(),
            object: obj.clone(),
            previous,
        };
        if let Some(wal) = self.wal.as_mut() {
            wal.append(&event)
                .map_err(|e| ApiError::Internal(format!("storage write failed: {e}")))?;
        }
        self.rv = rv;
        self.place(key, obj.clone(), kind);
        let event = Arc::new(event);
        self.history.push(event.clone());
        // No receivers is fine: nobody watches.
        let _ = self.feed.send(event);
        if *key == ResKey::crds() {
            self.refresh_registry();
        }
        self.maybe_checkpoint();
        Ok(obj)
    }

    fn maybe_checkpoint(&mut self) {
        let Some(wal) = self.wal.as_ref().filter(|w| w.wants_checkpoint()) else {
            return;
        };
        let (dir, fsync) = (wal.dir().to_path_buf(), wal.fsync());
        match persist::checkpoint(&dir, &self.snapshot(), fsync) {
            Ok(new_wal) => self.wal = Some(new_wal),
            Err(e) => tracing::error!(error = %e, "checkpoint failed; the log keeps growing"),
        }
    }

    /// Creates a cluster-scoped default object unless it exists.
    fn ensure(&mut self, key: &ResKey, obj: Value) {
        let name = meta::name(&obj).unwrap_or_default().to_string();
        if self.object(key, "", &name).is_some() {
            return;
        }
        let Some(info) = self.registry.by_key(key).cloned() else {
            return;
        };
        if let Err(e) = self.create(&info, obj, false) {
            tracing::error!(error = %e, resource = %key.resource, %name, "cannot create a default object");
        }
    }

    fn create(
        &mut self,
        info: &ResourceInfo,
        mut obj: Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let key = info.key();
        let name = match (meta::name(&obj), meta::meta_str(&obj, "generateName")) {
            (Some(n), _) => n.to_string(),
            (None, Some(prefix)) => self.generated_name(&key, &obj, prefix),
            (None, None) => {
                return Err(ApiError::Invalid(format!(
                    "{} is invalid: metadata.name: Required value: name or generateName is required",
                    info.kind
                )));
            }
        };
        let ns = if info.namespaced {
            let ns = meta::namespace(&obj).unwrap_or("default").to_string();
            self.check_namespace_open(&ns)?;
            ns
        } else {
            meta::remove_meta(&mut obj, "namespace");
            String::new()
        };
        validate_name(info, &name)?;
        if self.object(&key, &ns, &name).is_some() {
            return Err(ApiError::AlreadyExists {
                resource: info.qualified(),
                name,
            });
        }
        let m = meta::metadata_mut(&mut obj);
        m.insert("name".into(), json!(name));
        if info.namespaced {
            m.insert("namespace".into(), json!(ns));
        }
        m.insert("uid".into(), json!(clock::new_uid()));
        m.insert("creationTimestamp".into(), json!(clock::now_rfc3339()));
        m.insert("generation".into(), json!(1));
        for field in ["resourceVersion", "deletionTimestamp", "selfLink"] {
            m.remove(field);
        }
        defaults::on_create(info, &mut obj);
        if self.simulate_status {
            simulate::settle(info, &mut obj);
        }
        if dry_run {
            return Ok(obj);
        }
        self.commit(&key, EventType::Added, obj, None)
    }

    fn generated_name(&self, key: &ResKey, obj: &Value, prefix: &str) -> String {
        let ns = meta::namespace(obj).unwrap_or("default");
        loop {
            let candidate = format!("{prefix}{}", clock::name_suffix());
            if self.object(key, ns, &candidate).is_none() {
                return candidate;
            }
        }
    }

    fn check_namespace_open(&self, ns: &str) -> Result<(), ApiError> {
        match self.object(&ResKey::namespaces(), "", ns) {
            None => Err(ApiError::not_found("namespaces", ns)),
            Some(n) if meta::is_deleting(n) => Err(ApiError::Forbidden(format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ))),
            Some(_) => Ok(()),
        }
    }

    fn update(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        new: Value,
        status_only: bool,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let key = info.key();
        let current = self
            .object(&key, ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(info.qualified(), name))?;
        if meta::name(&new).is_some_and(|n| n != name) {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta::name(&new).unwrap_or_default()
            )));
        }
        if let Some(rv) = meta::meta_str(&new, "resourceVersion")
            && Some(rv) != meta::meta_str(&current, "resourceVersion")
        {
            return Err(conflict(
                info,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        let mut result = merge_update(info, &current, new, status_only);
        let generation = |o: &Value| o.pointer("/metadata/generation").cloned();
        if self.simulate_status && !status_only && generation(&result) != generation(&current) {
            simulate::settle(info, &mut result);
        }
        if result == current {
            return Ok(current);
        }
        if meta::is_deleting(&result)
            && meta::finalizers(&result).is_empty()
            && key != ResKey::namespaces()
        {
            if dry_run {
                return Ok(result);
            }
            meta::set_meta(&mut result, "resourceVersion", json!(self.rv.to_string()));
            self.objects
                .entry(key.clone())
                .or_default()
                .insert((ns.into(), name.into()), result);
            return self.remove(&key, ns, name, false);
        }
        if dry_run {
            return Ok(result);
        }
        self.commit(&key, EventType::Modified, result, Some(current))
    }
}
