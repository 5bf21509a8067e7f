//! A request aimed at a resource, as routing parsed it, and what every verb does with it: its
//! selectors and the object as clients see it. Used by the verbs (`api/`), watches, admission
//! and conversion, below all of them.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::meta;
use crate::resources::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::table;

/// Query parameters of a request.
pub type Params = HashMap<String, String>;

/// A request aimed at a resource.
pub struct ResourceRequest {
    /// The resource.
    pub info: ResourceInfo,
    /// The version in the path.
    pub version: String,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// Subresource (`status`).
    pub sub: Option<String>,
    /// Legacy `/watch/` path prefix.
    pub legacy_watch: bool,
    /// How to present the objects (as they are, a Table, or metadata only).
    pub view: table::View,
}

/// The object as clients see it: `apiVersion` and `kind` of the version asked for, no
/// `generation` where the kind has none, no empty `managedFields`.
pub fn stamp(req: &ResourceRequest, mut obj: Value) -> Value {
    let map = meta::ensure_object(&mut obj);
    map.insert(
        "apiVersion".into(),
        json!(req.info.api_version(&req.version)),
    );
    map.insert("kind".into(), json!(req.info.kind));
    if !req.info.keeps_generation() {
        meta::remove_meta(&mut obj, "generation");
    }
    let no_managers = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty);
    if no_managers {
        meta::remove_meta(&mut obj, "managedFields");
    }
    obj
}

/// Parsed `labelSelector` and `fieldSelector` (on the fields `info`'s kind can be selected by).
pub fn selectors(
    info: &ResourceInfo,
    params: &Params,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(
        params
            .get("labelSelector")
            .map(String::as_str)
            .unwrap_or(""),
    )?;
    let fields = FieldSelector::parse(
        params
            .get("fieldSelector")
            .map(String::as_str)
            .unwrap_or(""),
    )?;
    fields.check_supported(info)?;
    Ok((labels, fields))
}
