//! `metadata.managedFields`: the field sets (FieldsV1) that managers own, what a write changed
//! (added, modified and removed fields), and the `Update` entry a create, update or patch leaves.
//! Server-side apply (`apply.rs`) builds on the same sets.

mod fields;

pub use fields::{FieldSet, compare, config_fields, display, item_matches};

use serde_json::{Map, Value, json};

use crate::clock;
use crate::meta;
use crate::resources::ResourceInfo;

/// Who writes: the manager's entry in `managedFields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// `fieldManager`, else the product of the client's `User-Agent`.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: &'static str,
    /// The version the request was sent in.
    pub api_version: String,
    /// `status` for writes to the status subresource.
    pub subresource: Option<String>,
}

/// One `managedFields` entry, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub writer: Writer,
    /// The time as stored (kept while the entry does not change).
    pub time: Option<Value>,
    pub fields: FieldSet,
}

impl Entry {
    /// Whether the entry belongs to `writer` (appliers are one manager whatever the version).
    pub fn is(&self, writer: &Writer) -> bool {
        let w = &self.writer;
        w.manager == writer.manager
            && w.operation == writer.operation
            && w.subresource == writer.subresource
            && (w.operation == "Apply" || w.api_version == writer.api_version)
    }
}

/// The manager of a request: `fieldManager`, or what its `User-Agent` names before the first `/`.
pub fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    match field_manager.filter(|m| !m.is_empty()) {
        Some(manager) => manager.to_string(),
        None => {
            let agent = user_agent.unwrap_or_default();
            let product = agent.split('/').next().unwrap_or_default();
            product.chars().take(128).collect()
        }
    }
}

/// The entries of `obj`'s `managedFields`.
pub fn entries(obj: &Value) -> Vec<Entry> {
    let list = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    list.into_iter().flatten().filter_map(entry).collect()
}

fn entry(value: &Value) -> Option<Entry> {
    let text = |k: &str| value.get(k).and_then(Value::as_str).map(String::from);
    let operation = match value.get("operation")?.as_str()? {
        "Apply" => "Apply",
        "Update" => "Update",
        _ => return None,
    };
    Some(Entry {
        writer: Writer {
            manager: text("manager").unwrap_or_default(),
            operation,
            api_version: text("apiVersion").unwrap_or_default(),
            subresource: text("subresource"),
        },
        time: value.get("time").cloned(),
        fields: fields::decode(value.get("fieldsV1").unwrap_or(&Value::Null)),
    })
}

/// Writes `entries` as `managedFields`, ordered as the API server orders them (operation, time,
/// manager); entries that own nothing are dropped (an empty list is kept, so that the store
/// does not restore the previous one; answers leave it out).
pub fn write_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.fields.is_empty());
    let seconds = |e: &Entry| {
        let time = e.time.as_ref().and_then(Value::as_str).unwrap_or_default();
        time.get(..19).unwrap_or(time).to_string()
    };
    entries.sort_by_cached_key(|e| {
        (
            e.writer.operation,
            seconds(e),
            e.writer.manager.clone(),
            e.writer.api_version.clone(),
        )
    });
    let list: Vec<Value> = entries.iter().map(encode_entry).collect();
    meta::set_meta(obj, "managedFields", Value::Array(list));
}

fn encode_entry(e: &Entry) -> Value {
    let mut map = Map::new();
    map.insert("manager".into(), json!(e.writer.manager));
    map.insert("operation".into(), json!(e.writer.operation));
    map.insert("apiVersion".into(), json!(e.writer.api_version));
    if let Some(time) = &e.time {
        map.insert("time".into(), time.clone());
    }
    map.insert("fieldsType".into(), json!("FieldsV1"));
    map.insert("fieldsV1".into(), fields::encode(&e.fields));
    if let Some(sub) = &e.writer.subresource {
        map.insert("subresource".into(), json!(sub));
    }
    Value::Object(map)
}

/// The part of an object a write through `subresource` may own: the status subresource owns
/// `status`, the main resource of a kind with a status subresource everything else.
pub fn owned_part(info: &ResourceInfo, obj: &Value, subresource: Option<&str>) -> Value {
    let mut part = obj.clone();
    let Some(map) = part.as_object_mut() else {
        return part;
    };
    match subresource {
        Some("status") => map.retain(|k, _| k == "status"),
        _ if info.has_status => {
            map.remove("status");
        }
        _ => {}
    }
    part
}

/// The fields of an empty object of the kind, as the API server's typed objects start: structs
/// that are always present, so that writing into them does not add them.
pub fn empty_object(info: &ResourceInfo) -> Value {
    if info.is_custom() {
        return json!({});
    }
    // `containers` is not optional in a pod spec: new containers do not add the list
    let template = json!({"metadata": {}, "spec": {"containers": []}});
    match (info.group.as_str(), info.plural.as_str()) {
        ("apps", "deployments") => json!({"spec": {"template": template, "strategy": {}}}),
        ("apps", "statefulsets" | "daemonsets") => {
            json!({"spec": {"template": template, "updateStrategy": {}}})
        }
        ("apps", "replicasets") | ("batch", "jobs") => json!({"spec": {"template": template}}),
        ("batch", "cronjobs") => {
            json!({"spec": {"jobTemplate": {"metadata": {}, "spec": {"template": template}}}})
        }
        ("", "podtemplates") => json!({ "template": template }),
        ("", "pods") => json!({"spec": {"containers": []}}),
        ("", "services" | "namespaces" | "persistentvolumeclaims" | "nodes")
        | ("coordination.k8s.io", "leases")
        | ("networking.k8s.io", _)
        | ("policy", _)
        | ("autoscaling", _)
        | ("apiextensions.k8s.io", _) => json!({"spec": {}}),
        ("events.k8s.io", "events") => json!({"deprecatedSource": {}}),
        ("", "events") => json!({"source": {}}),
        _ => json!({}),
    }
}

/// Records `writer`'s `Update` of `current` (`None`: a create) into `new`: the fields it added or
/// changed become its own (taken from any other manager), removed fields leave every manager.
pub fn record_update(
    info: &ResourceInfo,
    current: Option<&Value>,
    new: &mut Value,
    writer: &Writer,
) {
    let sub = writer.subresource.as_deref();
    let old = current.map_or_else(|| empty_object(info), |c| owned_part(info, c, sub));
    let changed = compare(&old, &owned_part(info, new, sub), info.is_custom());
    let sent = entries(new);
    let mut list = if sent.is_empty() {
        current.map(entries).unwrap_or_default()
    } else {
        sent
    };
    let taken: FieldSet = changed.added.union(&changed.modified).cloned().collect();
    for entry in list.iter_mut().filter(|e| !e.is(writer)) {
        entry
            .fields
            .retain(|p| !taken.contains(p) && !changed.removed.contains(p));
    }
    if !taken.is_empty() || !changed.removed.is_empty() {
        let position = list.iter().position(|e| e.is(writer));
        let mut fields = position.map(|i| list.remove(i).fields).unwrap_or_default();
        fields.retain(|p| !changed.removed.contains(p));
        fields.extend(taken);
        list.push(Entry {
            writer: writer.clone(),
            time: Some(json!(clock::now_rfc3339())),
            fields,
        });
    }
    write_entries(new, list);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    fn configmaps() -> ResourceInfo {
        let reg = Registry::new(std::iter::empty());
        reg.find("", "v1", "configmaps").unwrap().clone()
    }

    fn writer(manager: &str) -> Writer {
        Writer {
            manager: manager.into(),
            operation: "Update",
            api_version: "v1".into(),
            subresource: None,
        }
    }

    #[test]
    fn a_create_owns_every_field_it_set_with_dots_on_new_maps() {
        let mut cm = json!({"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"x": "1"}});
        record_update(&configmaps(), None, &mut cm, &writer("kubectl"));
        let entry = &cm["metadata"]["managedFields"][0];
        assert_eq!(entry["manager"], "kubectl");
        assert_eq!(
            entry["fieldsV1"],
            json!({"f:data": {".": {}, "f:x": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
        );
    }

    #[test]
    fn an_update_takes_changed_fields_from_other_managers() {
        let info = configmaps();
        let mut cm = json!({"metadata": {"name": "c"}, "data": {"x": "1", "y": "2"}});
        record_update(&info, None, &mut cm, &writer("first"));
        let mut next = cm.clone();
        next["data"]["x"] = json!("changed");
        next["data"].as_object_mut().unwrap().remove("y");
        record_update(&info, Some(&cm), &mut next, &writer("second"));
        let list = entries(&next);
        assert_eq!(list.len(), 2);
        let first = list.iter().find(|e| e.writer.manager == "first").unwrap();
        assert_eq!(fields::encode(&first.fields), json!({"f:data": {}}));
        let second = list.iter().find(|e| e.writer.manager == "second").unwrap();
        assert_eq!(
            fields::encode(&second.fields),
            json!({"f:data": {"f:x": {}}})
        );
    }

    #[test]
    fn the_manager_is_the_user_agent_product_without_a_field_manager() {
        assert_eq!(
            manager_name(None, Some("kubectl/v1.35.2 (linux)")),
            "kubectl"
        );
        assert_eq!(manager_name(Some("helm"), Some("Helm/3")), "helm");
    }
}
