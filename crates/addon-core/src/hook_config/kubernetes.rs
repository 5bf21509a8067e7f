//! `kubernetes` (v1) and `onKubernetesEvent` (v0) bindings: parsing, defaults and checks into [`KubernetesBinding`].

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::reader::{Obj, Problems, index};
use super::schedule::read_queue;
use super::selector::{
    FieldSelector, LabelSelector, NamespaceSelector, read_field_selector, read_label_selector,
    read_name_selector, read_namespace_selector, read_v0_selector,
};
use crate::jq::{self, JqError, JqFilter};
use crate::names::QueueName;

pub use super::kept::KeptObject;

/// The default binding name of v1 kubernetes bindings.
pub const DEFAULT_KUBERNETES_NAME: &str = "kubernetes";
/// The default binding name of v0 `onKubernetesEvent` bindings.
pub const DEFAULT_V0_KUBERNETES_NAME: &str = "onKubernetesEvent";

/// A watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum WatchEvent {
    Added,
    Modified,
    Deleted,
}

impl WatchEvent {
    pub const ALL: [WatchEvent; 3] = [Self::Added, Self::Modified, Self::Deleted];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "Added",
            Self::Modified => "Modified",
            Self::Deleted => "Deleted",
        }
    }

    /// The v0 spelling used in `resourceEvent` (`add`, `update`, `delete`).
    pub fn v0_str(self) -> &'static str {
        match self {
            Self::Added => "add",
            Self::Modified => "update",
            Self::Deleted => "delete",
        }
    }
}

/// One kubernetes binding with every default applied. v0 bindings have `v0: true`: their contexts
/// use the v0 form and their Synchronization is not executed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesBinding {
    pub name: String,
    pub api_version: Option<String>,
    pub kind: String,
    /// Events that run the hook (`[]` = snapshot only).
    pub execute_hook_on_event: Vec<WatchEvent>,
    pub execute_hook_on_synchronization: bool,
    /// Effective value: `false` is only honoured when the binding has a queue other than `main`.
    pub wait_for_synchronization: bool,
    pub keep_full_objects_in_memory: bool,
    /// `nameSelector.matchNames` (v0: `objectName`).
    pub name_selector: Option<Vec<String>>,
    pub label_selector: Option<LabelSelector>,
    pub field_selector: Option<FieldSelector>,
    /// `None` watches all namespaces.
    pub namespace: Option<NamespaceSelector>,
    pub jq_filter: Option<JqFilter>,
    pub allow_failure: bool,
    pub queue: QueueName,
    pub group: Option<String>,
    /// Names whose snapshots the contexts carry, after adding the group's bindings.
    pub include_snapshots_from: Vec<String>,
    /// Accepted for compatibility, not used.
    pub mode: Option<String>,
    /// Accepted for compatibility, not used.
    pub resynchronization_period: Option<String>,
    pub v0: bool,
}

impl KubernetesBinding {
    fn new(name: String, kind: String, v0: bool) -> Self {
        Self {
            name,
            api_version: None,
            kind,
            execute_hook_on_event: WatchEvent::ALL.to_vec(),
            execute_hook_on_synchronization: true,
            wait_for_synchronization: true,
            keep_full_objects_in_memory: true,
            name_selector: None,
            label_selector: None,
            field_selector: None,
            namespace: None,
            jq_filter: None,
            allow_failure: false,
            queue: QueueName::main(),
            group: None,
            include_snapshots_from: Vec::new(),
            mode: None,
            resynchronization_period: None,
            v0,
        }
    }
}

/// An object as one binding sees it: its filter result and the checksum used to skip unchanged objects.
#[derive(Debug, Clone, PartialEq)]
pub struct FilteredObject {
    /// The filter result as compact JSON text, `Some` when the binding has a jqFilter: made once,
    /// so that the cache, the event's item and bindings with the same jqFilter over the same
    /// object keep one copy.
    pub filter_result: Option<KeptObject>,
    /// Of the filter result, or of the whole object without a filter ([`jq::checksum`]).
    pub checksum: u128,
    /// The object's `metadata.name`, made once with the filter result: the caches of bindings
    /// sharing this result (the same jqFilter over the same watch) key the object by this one
    /// copy instead of a copy each.
    pub name: Arc<str>,
}

impl FilteredObject {
    /// `object` as a binding sees it, given its filter result (computed elsewhere, e.g. in the
    /// operator's jq sandbox; `None` when the binding has no jqFilter).
    pub fn new(object: &Value, filter_result: Option<Value>) -> Self {
        let checksum = jq::checksum(filter_result.as_ref().unwrap_or(object));
        Self {
            filter_result: filter_result.as_ref().map(KeptObject::new),
            checksum,
            name: Arc::from(object["metadata"]["name"].as_str().unwrap_or_default()),
        }
    }
}

impl KubernetesBinding {
    /// Whether `other` is written to select the same objects (the same resource, namespaces and
    /// selectors as configured) and filters them with the same jqFilter: it sees each object as
    /// this binding does.
    pub fn sees_like(&self, other: &KubernetesBinding) -> bool {
        self.api_version == other.api_version
            && self.kind == other.kind
            && self.namespace == other.namespace
            && self.name_selector == other.name_selector
            && self.label_selector == other.label_selector
            && self.field_selector == other.field_selector
            && self.jq_filter == other.jq_filter
    }

    /// Applies the binding's jqFilter (if any, in this process) and computes the checksum. An
    /// `Added` or `Modified` event whose checksum equals the cached one does not run the hook.
    pub fn filter_object(&self, object: &Value) -> Result<FilteredObject, JqError> {
        let result = match &self.jq_filter {
            Some(filter) => Some(filter.apply(object)?),
            None => None,
        };
        Ok(FilteredObject::new(object, result))
    }
}

const V1_FIELDS: &[&str] = &[
    "name",
    "apiVersion",
    "kind",
    "executeHookOnEvent",
    "watchEvent",
    "executeHookOnSynchronization",
    "waitForSynchronization",
    "keepFullObjectsInMemory",
    "resynchronizationPeriod",
    "nameSelector",
    "labelSelector",
    "fieldSelector",
    "namespace",
    "jqFilter",
    "allowFailure",
    "queue",
    "group",
    "includeSnapshotsFrom",
    "mode",
];

/// Reads the v1 `kubernetes` array.
pub(crate) fn read_kubernetes(items: &[Value], p: &mut Problems) -> Vec<KubernetesBinding> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let obj = Obj::new(item, index("kubernetes", i), p)?;
            read_v1(&obj, p)
        })
        .collect()
}

fn read_v1(obj: &Obj<'_>, p: &mut Problems) -> Option<KubernetesBinding> {
    let before = p.len();
    obj.reject_unknown(V1_FIELDS, p);
    let name = obj
        .optional_string("name", p)
        .unwrap_or_else(|| DEFAULT_KUBERNETES_NAME.to_string());
    let kind = obj.required("kind", |o, k, p| o.non_empty_string(k, p), p);
    let mut b = KubernetesBinding::new(name, kind.unwrap_or_default(), false);
    b.api_version = obj.string("apiVersion", p);
    if let Some(api_version) = b.api_version.as_ref().filter(|v| !is_group_version(v)) {
        p.push(
            obj.path_of("apiVersion"),
            format!("apiVersion is invalid: '{api_version}' is not 'version' or 'group/version'"),
        );
    }
    let events_key = if obj.get("executeHookOnEvent").is_some() {
        "executeHookOnEvent"
    } else {
        "watchEvent"
    };
    if let Some(events) = read_v1_events(obj, events_key, p) {
        b.execute_hook_on_event = events;
    }
    b.execute_hook_on_synchronization = obj.bool("executeHookOnSynchronization", p).unwrap_or(true);
    let wait = obj.bool("waitForSynchronization", p).unwrap_or(true);
    b.keep_full_objects_in_memory = obj.bool("keepFullObjectsInMemory", p).unwrap_or(true);
    b.resynchronization_period = obj.string("resynchronizationPeriod", p);
    b.mode = obj.string("mode", p);
    b.name_selector = obj
        .object("nameSelector", p)
        .and_then(|o| read_name_selector(&o, p));
    b.label_selector = obj
        .object("labelSelector", p)
        .and_then(|o| read_label_selector(&o, p));
    b.field_selector = obj
        .object("fieldSelector", p)
        .and_then(|o| read_field_selector(&o, p));
    b.namespace = obj
        .object("namespace", p)
        .and_then(|o| read_namespace_selector(&o, p));
    if b.field_selector
        .as_ref()
        .is_some_and(FieldSelector::mentions_name)
        && b.name_selector.is_some()
    {
        p.push(
            obj.path_of("fieldSelector"),
            "fieldSelector 'metadata.name' and nameSelector.matchNames are mutually exclusive",
        );
    }
    b.jq_filter = read_jq_filter(obj, p);
    b.allow_failure = obj.bool("allowFailure", p).unwrap_or(false);
    b.queue = read_queue(obj, p);
    b.wait_for_synchronization = wait || b.queue.is_main();
    b.group = obj.optional_string("group", p);
    b.include_snapshots_from = obj
        .string_list("includeSnapshotsFrom", 1, p)
        .unwrap_or_default();
    (p.len() == before).then_some(b)
}

fn read_v1_events(obj: &Obj<'_>, key: &str, p: &mut Problems) -> Option<Vec<WatchEvent>> {
    let names = obj.string_list(key, 0, p)?;
    let mut events = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match WatchEvent::ALL.iter().find(|e| e.as_str() == name) {
            Some(e) if !events.contains(e) => events.push(*e),
            Some(_) => {}
            None => p.push(
                index(&obj.path_of(key), i),
                format!("unknown event type '{name}' (allowed: Added, Modified, Deleted)"),
            ),
        }
    }
    Some(events)
}

fn read_jq_filter(obj: &Obj<'_>, p: &mut Problems) -> Option<JqFilter> {
    let source = obj.string("jqFilter", p)?;
    match JqFilter::compile(&source) {
        Ok(f) => Some(f),
        Err(e) => {
            p.push(obj.path_of("jqFilter"), e.to_string());
            None
        }
    }
}

/// `v1` or `group/v1beta1`: one or two non-empty segments.
fn is_group_version(text: &str) -> bool {
    let ok = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
    match text.split_once('/') {
        None => ok(text),
        Some((group, version)) => ok(group) && ok(version) && !version.contains('/'),
    }
}

/// Reads the v0 `onKubernetesEvent` array. Unknown keys are ignored, as upstream did.
pub(crate) fn read_on_kubernetes_event(
    items: &[Value],
    p: &mut Problems,
) -> Vec<KubernetesBinding> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let obj = Obj::new(item, index("onKubernetesEvent", i), p)?;
            read_v0(&obj, p)
        })
        .collect()
}

fn read_v0(obj: &Obj<'_>, p: &mut Problems) -> Option<KubernetesBinding> {
    let before = p.len();
    let name = obj
        .optional_string("name", p)
        .unwrap_or_else(|| DEFAULT_V0_KUBERNETES_NAME.to_string());
    let kind = obj.required("kind", |o, k, p| o.non_empty_string(k, p), p);
    let mut b = KubernetesBinding::new(name, kind.unwrap_or_default(), true);
    if let Some(names) = obj.string_list("event", 0, p) {
        let mut events = Vec::new();
        for (i, n) in names.iter().enumerate() {
            match WatchEvent::ALL.iter().find(|e| e.v0_str() == n) {
                Some(e) if !events.contains(e) => events.push(*e),
                Some(_) => {}
                None => p.push(
                    index(&obj.path_of("event"), i),
                    format!("event '{n}' is unsupported (allowed: add, update, delete)"),
                ),
            }
        }
        b.execute_hook_on_event = events;
    }
    if let Some(selector) = obj.get("selector") {
        b.label_selector = read_v0_selector(selector, obj.path_of("selector"), p)
            .filter(|s| *s != LabelSelector::default());
    }
    if let Some(object_name) = obj.optional_string("objectName", p) {
        b.name_selector = Some(vec![object_name]);
    }
    if let Some(ns) = obj.object("namespaceSelector", p) {
        let any = ns.bool("any", p).unwrap_or(false);
        let names = ns.string_list("matchNames", 0, p).unwrap_or_default();
        if !any && !names.is_empty() {
            b.namespace = Some(NamespaceSelector {
                name_selector: Some(names),
                label_selector: None,
            });
        }
    }
    b.jq_filter = read_jq_filter(obj, p);
    b.allow_failure = obj.bool("allowFailure", p).unwrap_or(false);
    let _ = obj.bool("disableDebug", p);
    (p.len() == before).then_some(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checksum_follows_the_filter_result_only() {
        let mut b = KubernetesBinding::new("pods".into(), "Pod".into(), false);
        let a = json!({"metadata": {"labels": {"app": "x"}, "resourceVersion": "1"}});
        let changed_version = json!({"metadata": {"labels": {"app": "x"}, "resourceVersion": "2"}});
        let unfiltered = (
            b.filter_object(&a).unwrap(),
            b.filter_object(&changed_version).unwrap(),
        );
        assert_ne!(unfiltered.0.checksum, unfiltered.1.checksum);
        assert!(unfiltered.0.filter_result.is_none());
        b.jq_filter = Some(JqFilter::compile(".metadata.labels").unwrap());
        let filtered = (
            b.filter_object(&a).unwrap(),
            b.filter_object(&changed_version).unwrap(),
        );
        assert_eq!(filtered.0.checksum, filtered.1.checksum);
        assert_eq!(
            filtered.0.filter_result.map(|f| f.to_value()),
            Some(json!({"app": "x"}))
        );
    }

    #[test]
    fn bindings_see_objects_alike_when_they_select_and_filter_alike() {
        let mut a = KubernetesBinding::new("a".into(), "Pod".into(), false);
        a.jq_filter = Some(JqFilter::compile(".metadata.name").unwrap());
        let mut b = a.clone();
        b.name = "b".into();
        b.keep_full_objects_in_memory = !a.keep_full_objects_in_memory;
        b.allow_failure = true;
        assert!(a.sees_like(&b), "name and run settings do not matter");
        let mut other_filter = a.clone();
        other_filter.jq_filter = Some(JqFilter::compile(".metadata").unwrap());
        assert!(!a.sees_like(&other_filter));
        let mut no_filter = a.clone();
        no_filter.jq_filter = None;
        assert!(!a.sees_like(&no_filter));
        let mut other_kind = a.clone();
        other_kind.kind = "ConfigMap".into();
        assert!(!a.sees_like(&other_kind));
        let mut other_names = a.clone();
        other_names.name_selector = Some(vec!["x".into()]);
        assert!(!a.sees_like(&other_names));
    }
}
