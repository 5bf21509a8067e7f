//! [`RawObject`]: an object of any kind as a watch receives it, parsed once into JSON.
//!
//! kube-rs's `DynamicObject` parses `metadata` into typed fields (timestamps, managedFields) and
//! the rest through a flattened map, and a hook wants JSON back: at 100,000 objects the two
//! conversions were a tenth of the operator's start. Here the text is parsed straight into a
//! [`Value`] and only what the watcher itself reads (name, namespace, uid, resourceVersion) is
//! copied out of it.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{DynamicResourceScope, Resource};
use kube::discovery::ApiResource;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A listed or watched object: its JSON as the server sent it, and the metadata the watcher
/// reads.
#[derive(Debug, Clone)]
pub(crate) struct RawObject {
    meta: ObjectMeta,
    value: Value,
}

impl RawObject {
    pub(crate) fn name(&self) -> Option<&str> {
        self.meta.name.as_deref()
    }

    /// The object as hooks see it: `apiVersion` and `kind` first (taken from `ar` when a list
    /// left them out of its items), then the object's own fields in the order the server sent
    /// them. The fields are moved, not copied.
    pub(crate) fn into_json(self, ar: &ApiResource) -> Value {
        let Value::Object(mut fields) = self.value else {
            return Value::Null;
        };
        let mut map = Map::new();
        let mut take = |key: &str, default: &str| {
            let value = (fields.remove(key)).unwrap_or_else(|| Value::String(default.to_string()));
            map.insert(key.to_string(), value);
        };
        take("apiVersion", &ar.api_version);
        take("kind", &ar.kind);
        map.extend(fields);
        Value::Object(map)
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if !value.is_object() {
            return Err(serde::de::Error::custom("an object is not a JSON object"));
        }
        let field = |key: &str| {
            value
                .get("metadata")
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let meta = ObjectMeta {
            name: field("name"),
            namespace: field("namespace"),
            uid: field("uid"),
            resource_version: field("resourceVersion"),
            ..ObjectMeta::default()
        };
        Ok(Self { meta, value })
    }
}

impl Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn a_listed_item_gets_its_type_first_and_keeps_its_fields_in_order() {
        let ar = ApiResource::erase::<ConfigMap>(&());
        let text = r#"{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","labels":{"x":"1"}},"data":{"k":"v"},"immutable":true}"#;
        let object: RawObject = serde_json::from_str(text).unwrap();
        assert_eq!(
            (object.name(), object.meta.namespace.as_deref()),
            (Some("a"), Some("ns"))
        );
        assert_eq!(object.meta.uid.as_deref(), Some("u1"));
        assert_eq!(object.meta.resource_version.as_deref(), Some("7"));
        assert_eq!(
            object.into_json(&ar).to_string(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","labels":{"x":"1"}},"data":{"k":"v"},"immutable":true}"#
        );
    }

    #[test]
    fn a_watched_object_keeps_its_own_type() {
        let ar = ApiResource::erase::<ConfigMap>(&());
        let text = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{}}"#;
        let object: RawObject = serde_json::from_str(text).unwrap();
        assert_eq!(
            object.into_json(&ar),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {}})
        );
    }

    #[test]
    fn what_is_not_an_object_does_not_parse() {
        assert!(serde_json::from_str::<RawObject>("[1]").is_err());
        assert!(serde_json::from_str::<RawObject>(r#""text""#).is_err());
        let nameless: RawObject = serde_json::from_str(r#"{"metadata":{"name":5}}"#).unwrap();
        assert_eq!(nameless.name(), None);
    }
}
