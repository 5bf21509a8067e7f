//! The reporter's background task: sends Events through the [`Correlator`] (create, or patch
//! the count of an identical one) and, once a second, brings the Module status objects in line
//! with the tree and writes the statuses that changed (only while leading).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::correlator::{Correlator, DEFERRED_FLUSH, Decision, Incoming};
use super::objects::{self, MODULE_API_VERSION};
use super::{COMPONENT, Inner, RecorderSettings, STATUS_PERIOD, now_rfc3339, object_name};
use crate::edges::kube::KindResolver;
use crate::runtime::edges::{AdminEvent, Owner, Subject};

/// The longest Event message sent (longer ones keep their start).
const MAX_MESSAGE: usize = 1024;
/// Events of cluster-scoped objects live here (the API server's rule).
const CLUSTER_EVENTS_NAMESPACE: &str = "default";

/// What an Event is attached to.
struct Involved {
    namespace: String,
    object: Value,
    key: String,
}

pub(super) struct Task {
    client: kube::Client,
    resolver: Arc<KindResolver>,
    settings: RecorderSettings,
    inner: Arc<Inner>,
    correlator: Correlator,
    epoch: tokio::time::Instant,
    /// Our Module objects, name → uid.
    uids: BTreeMap<String, String>,
    /// Module objects with names of ours that are not ours: never touched.
    foreign: BTreeSet<String>,
    /// The CRD is served: status objects are on.
    crd_ready: bool,
    /// uids of other involved objects (`None`: not found).
    other_uids: HashMap<String, Option<String>>,
    /// Errors logged once each.
    logged: HashSet<String>,
    seq: u64,
    /// Counts of existing Events the spam filter held back, by correlator key.
    deferred: BTreeMap<String, Deferred>,
    flushed: tokio::time::Instant,
    /// Failed tree syncs in a row, and when the next may be tried.
    tree_backoff: (u32, tokio::time::Instant),
}

/// The wait before the next tree sync after `failures` failed ones in a row: 1 s doubling up
/// to 60 s, so an API that refuses (RBAC) is not asked every second.
fn tree_retry_delay(failures: u32) -> std::time::Duration {
    let secs = 1u64 << failures.min(6);
    std::time::Duration::from_secs(secs.min(60))
}

/// A count to send to an existing Event.
struct Deferred {
    namespace: String,
    name: String,
    count: u32,
    message: String,
    at: String,
}

impl Task {
    pub(super) fn new(
        client: kube::Client,
        resolver: Arc<KindResolver>,
        settings: RecorderSettings,
        inner: Arc<Inner>,
    ) -> Self {
        Self {
            client,
            resolver,
            settings,
            inner,
            correlator: Correlator::default(),
            epoch: tokio::time::Instant::now(),
            uids: BTreeMap::new(),
            foreign: BTreeSet::new(),
            crd_ready: false,
            other_uids: HashMap::new(),
            logged: HashSet::new(),
            seq: 0,
            deferred: BTreeMap::new(),
            flushed: tokio::time::Instant::now(),
            tree_backoff: (0, tokio::time::Instant::now()),
        }
    }

    pub(super) async fn run(mut self, mut events: mpsc::Receiver<AdminEvent>) {
        if self.settings.status_objects {
            match objects::ensure_crd(&self.client).await {
                Ok(()) => self.crd_ready = true,
                Err(error) => {
                    tracing::warn!(%error, "no module status objects (kubectl get modules); Events go on the config ConfigMap")
                }
            }
        }
        let mut tick = tokio::time::interval(STATUS_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut open = true;
        loop {
            tokio::select! {
                event = events.recv(), if open => match event {
                    Some(event) => self.send(event).await,
                    None => open = false,
                },
                _ = tick.tick() => {
                    self.flush_deferred().await;
                    self.sync().await;
                }
                () = self.inner.changed.notified() => self.sync().await,
            }
        }
    }

    /// Creates and deletes our objects as the tree says, then writes the changed statuses.
    async fn sync(&mut self) {
        if !self.crd_ready || !self.inner.leading() {
            return;
        }
        // while backing off, the statuses of the objects already known are still written
        let backing_off = tokio::time::Instant::now() < self.tree_backoff.1;
        let tree = if backing_off {
            None
        } else {
            self.inner.book().tree.take()
        };
        if let Some(tree) = tree {
            let synced = self.sync_tree(&tree).await;
            if synced == Some(true) {
                self.tree_backoff.0 = 0;
            } else {
                // tried again after the back-off
                let failures = self.tree_backoff.0 + 1;
                let retry_at = tokio::time::Instant::now() + tree_retry_delay(failures);
                self.tree_backoff = (failures, retry_at);
                self.inner.book().tree.get_or_insert(tree);
            }
            if synced.is_none() {
                return;
            }
        }
        let now = now_rfc3339();
        let dirty: Vec<(String, Value)> = {
            let mut book = self.inner.book();
            let names = std::mem::take(&mut book.dirty);
            (names.into_iter())
                .filter_map(|n| Some((n.clone(), book.states.get(&n)?.render(&now))))
                .collect()
        };
        for (name, status) in dirty {
            if !self.uids.contains_key(&name) {
                if !self.foreign.contains(&name) {
                    // written once its object exists
                    self.inner.book().dirty.insert(name);
                }
                continue;
            }
            if let Err(e) = objects::write_status(&self.client, &name, status).await {
                self.failed("write a module status", &e);
                self.inner.book().dirty.insert(name);
            }
        }
    }

    /// `None` when the objects could not be listed, `Some(false)` when one could not be created
    /// or deleted.
    async fn sync_tree(&mut self, tree: &BTreeSet<String>) -> Option<bool> {
        let owner = self.settings.namespace.clone();
        let existing = match objects::list(&self.client, &owner).await {
            Ok(existing) => existing,
            Err(e) => {
                self.failed("list module status objects", &e);
                return None;
            }
        };
        let mut complete = true;
        for name in existing.foreign.difference(&self.foreign) {
            if tree.contains(name) {
                tracing::warn!(object = %name, "a Module object of that name is not this operator's (no {} label of its namespace); its status is not written", objects::OWNER_LABEL);
            }
        }
        self.foreign = existing.foreign;
        self.uids.clear();
        for (name, uid) in existing.ours {
            if tree.contains(&name) {
                self.uids.insert(name, uid);
            } else if let Err(e) = objects::delete(&self.client, &name).await {
                self.failed("delete a module status object", &e);
                complete = false;
            }
        }
        let missing: Vec<&String> = (tree.iter())
            .filter(|n| !self.uids.contains_key(*n) && !self.foreign.contains(*n))
            .collect();
        for name in missing {
            match objects::create(&self.client, &owner, name).await {
                Ok(Some(uid)) => {
                    self.uids.insert(name.clone(), uid);
                    self.inner.book().dirty.insert(name.clone());
                }
                Ok(None) => {
                    tracing::warn!(object = %name, "a Module object of that name is not this operator's; its status is not written");
                    self.foreign.insert(name.clone());
                }
                Err(e) => {
                    self.failed("create a module status object", &e);
                    complete = false;
                }
            }
        }
        Some(complete)
    }

    async fn send(&mut self, event: AdminEvent) {
        let involved = self.involved(&event.subject).await;
        let incoming = Incoming {
            object: involved.key.clone(),
            kind: event.severity.as_str().to_string(),
            reason: event.reason.clone(),
            message: bounded(&with_owner(&event, self.crd_ready)),
        };
        let now = self.epoch.elapsed();
        match self.correlator.observe(&incoming, now) {
            Decision::Drop => self.inner.count("dropped_spam"),
            Decision::Create { key, message } => {
                self.create(&key, &incoming, &involved, message).await
            }
            Decision::Defer {
                key,
                name,
                count,
                message,
            } => {
                let full = self.deferred.len() >= super::correlator::MAX_ENTRIES;
                if full && !self.deferred.contains_key(&key) {
                    self.inner.count("dropped_spam");
                    return;
                }
                let patch = Deferred {
                    namespace: involved.namespace,
                    name,
                    count,
                    message,
                    at: now_rfc3339(),
                };
                self.deferred.insert(key, patch);
            }
            Decision::Patch {
                key,
                name,
                count,
                message,
            } => {
                self.deferred.remove(&key);
                let at = now_rfc3339();
                let patched = self.patch(&involved.namespace, &name, count, &message, &at);
                if let Err(kube::Error::Api(e)) = patched.await
                    && e.code == 404
                {
                    self.correlator.forget(&key);
                    self.create(&key, &incoming, &involved, message).await;
                }
            }
        }
    }

    /// Raises the count of Event `name` (a merge PATCH); errors other than 404 are counted here.
    async fn patch(
        &mut self,
        namespace: &str,
        name: &str,
        count: u32,
        message: &str,
        at: &str,
    ) -> Result<(), kube::Error> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let patch = json!({ "count": count, "lastTimestamp": at, "message": message });
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                self.inner.count("patched");
                Ok(())
            }
            Err(kube::Error::Api(e)) if e.code == 404 => Err(kube::Error::Api(e)),
            Err(e) => {
                self.failed("patch an Event", &e);
                Err(e)
            }
        }
    }

    /// Sends the counts the spam filter held back, once per [`DEFERRED_FLUSH`].
    async fn flush_deferred(&mut self) {
        if self.deferred.is_empty() || self.flushed.elapsed() < DEFERRED_FLUSH {
            return;
        }
        self.flushed = tokio::time::Instant::now();
        for (key, d) in std::mem::take(&mut self.deferred) {
            let patched = self.patch(&d.namespace, &d.name, d.count, &d.message, &d.at);
            if let Err(kube::Error::Api(e)) = patched.await
                && e.code == 404
            {
                self.correlator.forget(&key);
            }
        }
    }

    async fn create(
        &mut self,
        key: &str,
        incoming: &Incoming,
        involved: &Involved,
        message: String,
    ) {
        self.seq = self.seq.wrapping_add(1);
        let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
        let base = involved.object["name"].as_str().unwrap_or("addon-operator");
        let name = format!("{base}.{:x}", (nanos as u64).wrapping_add(self.seq));
        let now = now_rfc3339();
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": { "name": name, "namespace": involved.namespace },
            "involvedObject": involved.object,
            "reason": incoming.reason,
            "message": message,
            "type": incoming.kind,
            "source": { "component": COMPONENT, "host": self.settings.instance },
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": COMPONENT,
            "reportingInstance": self.settings.instance,
        });
        let event: Event = match serde_json::from_value(event) {
            Ok(event) => event,
            Err(e) => return self.failed("build an Event", &kube::Error::SerdeError(e)),
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &involved.namespace);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                self.correlator.created(key, name);
                self.inner.count("created");
            }
            Err(e) => self.failed("create an Event", &e),
        }
    }

    /// The object an Event about `subject` goes on, with its uid when it can be had (kubectl
    /// describe matches Events by uid).
    async fn involved(&mut self, subject: &Subject) -> Involved {
        match subject {
            Subject::Module(m) => self.on_status_object(Owner::Module(m.clone())).await,
            Subject::Global => self.on_status_object(Owner::Global).await,
            Subject::Object { object, .. } => {
                let resolved = self
                    .resolver
                    .resolve(object.api_version.as_deref(), &object.kind)
                    .await;
                let (api_version, namespaced) = match &resolved {
                    Ok(r) => (r.resource.api_version.clone(), r.namespaced),
                    Err(_) => (
                        object.api_version.clone().unwrap_or_default(),
                        object.namespace.is_some(),
                    ),
                };
                let namespace = match namespaced {
                    true => object
                        .namespace
                        .clone()
                        .unwrap_or(self.settings.namespace.clone()),
                    false => String::new(),
                };
                let key = format!("{api_version}/{}/{namespace}/{}", object.kind, object.name);
                let uid = match resolved {
                    Ok(r) => {
                        self.uid_of(&key, r.resource, &namespace, &object.name)
                            .await
                    }
                    Err(_) => None,
                };
                let event_namespace = match namespace.is_empty() {
                    true => CLUSTER_EVENTS_NAMESPACE.to_string(),
                    false => namespace.clone(),
                };
                Involved {
                    namespace: event_namespace,
                    object: reference(&api_version, &object.kind, &namespace, &object.name, uid),
                    key,
                }
            }
        }
    }

    async fn on_status_object(&mut self, owner: Owner) -> Involved {
        if !self.crd_ready {
            return self.on_config_map().await;
        }
        let name = object_name(&owner);
        if !self.uids.contains_key(&name) {
            // a module's first Event may come before the object: make it now
            self.sync().await;
        }
        let uid = self.uids.get(&name).cloned();
        Involved {
            namespace: CLUSTER_EVENTS_NAMESPACE.to_string(),
            key: format!("Module//{name}"),
            object: reference(MODULE_API_VERSION, "Module", "", &name, uid),
        }
    }

    /// With status objects off, Events go on the config ConfigMap.
    async fn on_config_map(&mut self) -> Involved {
        let (namespace, name) = (
            self.settings.namespace.clone(),
            self.settings.config_map.clone(),
        );
        let key = format!("ConfigMap/{namespace}/{name}");
        if !self.other_uids.contains_key(&key) {
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &namespace);
            let uid = match api.get_opt(&name).await {
                Ok(found) => found.and_then(|c| c.metadata.uid),
                Err(e) => {
                    self.failed("read the config ConfigMap", &e);
                    None
                }
            };
            self.other_uids.insert(key.clone(), uid);
        }
        let uid = self.other_uids.get(&key).cloned().flatten();
        Involved {
            namespace: namespace.clone(),
            object: reference("v1", "ConfigMap", &namespace, &name, uid),
            key,
        }
    }

    async fn uid_of(
        &mut self,
        key: &str,
        resource: kube::api::ApiResource,
        namespace: &str,
        name: &str,
    ) -> Option<String> {
        if let Some(uid) = self.other_uids.get(key) {
            return uid.clone();
        }
        let api: Api<DynamicObject> = match namespace.is_empty() {
            true => Api::all_with(self.client.clone(), &resource),
            false => Api::namespaced_with(self.client.clone(), namespace, &resource),
        };
        let uid = match api.get_opt(name).await {
            Ok(found) => found.and_then(|o| o.metadata.uid),
            Err(e) => {
                self.failed("read an object an Event is about", &e);
                None
            }
        };
        if self.other_uids.len() >= super::correlator::MAX_ENTRIES {
            self.other_uids.clear();
        }
        self.other_uids.insert(key.to_string(), uid.clone());
        uid
    }

    /// Counts a failed call and logs it at debug, once per operation and reason.
    fn failed(&mut self, what: &str, error: &kube::Error) {
        self.inner.count("failed");
        let reason = match error {
            kube::Error::Api(e) => e.reason.clone(),
            other => other.to_string(),
        };
        if self.logged.len() < 256 && self.logged.insert(format!("{what}: {reason}")) {
            tracing::debug!(error = %error, "cannot {what} (logged once per reason)");
        }
    }
}

/// An `involvedObject`.
fn reference(
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    uid: Option<String>,
) -> Value {
    let mut object = json!({ "apiVersion": api_version, "kind": kind, "name": name });
    if !namespace.is_empty() {
        object["namespace"] = json!(namespace);
    }
    if let Some(uid) = uid.filter(|u| !u.is_empty()) {
        object["uid"] = json!(uid);
    }
    object
}

/// The message, naming the module when the Event cannot go on the module's own object.
fn with_owner(event: &AdminEvent, on_status_objects: bool) -> String {
    match (&event.subject, on_status_objects) {
        (Subject::Module(m), false) => format!("module {m}: {}", event.message),
        (Subject::Global, false) => format!("global hooks: {}", event.message),
        (Subject::Object { module, .. }, _) => format!("module {module}: {}", event.message),
        _ => event.message.clone(),
    }
}

/// At most [`MAX_MESSAGE`] bytes of `message`, cut at a character boundary.
fn bounded(message: &str) -> String {
    if message.len() <= MAX_MESSAGE {
        return message.to_string();
    }
    let mut cut = MAX_MESSAGE - 3;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &message[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_tree_sync_is_tried_again_later_and_later_up_to_a_minute() {
        let delays: Vec<u64> = (1..=8).map(|n| tree_retry_delay(n).as_secs()).collect();
        assert_eq!(delays, [2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(tree_retry_delay(0).as_secs(), 1);
    }

    #[test]
    fn long_messages_are_cut_and_references_leave_out_what_is_unknown() {
        let long = "é".repeat(1000);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_MESSAGE && cut.ends_with("..."));
        let r = reference("v1", "ConfigMap", "", "x", Some(String::new()));
        assert_eq!(
            r,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "x"})
        );
    }
}
