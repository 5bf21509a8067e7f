//! `$KUBERNETES_PATCH_PATH`: a JSON or YAML stream of object operations (Create, Delete, JQPatch, MergePatch, JSONPatch, ...), validated into [`KubeOperation`]s.

use serde_json::{Map, Value};

use crate::jq::JqFilter;

/// A patch file that could not be read or holds an invalid operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubePatchError {
    #[error("read $KUBERNETES_PATCH_PATH: not a JSON or YAML stream: {message}")]
    ReadDocuments { message: String },
    #[error(
        "$KUBERNETES_PATCH_PATH operation {index}{}: {message}",
        describe(operation)
    )]
    ValidateOperation {
        /// Position of the operation in the file, from 0.
        index: usize,
        operation: Option<String>,
        message: String,
    },
}

fn describe(operation: &Option<String>) -> String {
    operation
        .as_ref()
        .map(|o| format!(" ({o})"))
        .unwrap_or_default()
}

impl KubePatchError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadDocuments { .. } => "kube_patch_read",
            Self::ValidateOperation { .. } => "kube_patch_invalid",
        }
    }
}

/// How a create behaves when the object exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Fail if it exists.
    Create,
    /// Replace it (the whole object) if it exists.
    CreateOrUpdate,
    /// Leave it alone if it exists.
    CreateIfNotExists,
}

/// The deletion propagation policy (and whether to wait for the object to disappear).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletePropagation {
    /// `Delete`: foreground, waits until the object is gone.
    Foreground,
    /// `DeleteInBackground`.
    Background,
    /// `DeleteNonCascading`: dependents are orphaned.
    Orphan,
}

/// The object an operation targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// Empty: the preferred version of `kind`.
    pub api_version: Option<String>,
    pub kind: String,
    /// Empty: cluster-scoped.
    pub namespace: Option<String>,
    pub name: String,
    /// e.g. `status`.
    pub subresource: Option<String>,
}

/// One operation of the patch file.
#[derive(Debug, Clone, PartialEq)]
pub enum KubeOperation {
    Create {
        mode: CreateMode,
        object: Value,
        subresource: Option<String>,
    },
    Delete {
        target: ObjectRef,
        propagation: DeletePropagation,
    },
    JqPatch {
        target: ObjectRef,
        filter: JqFilter,
        ignore_missing_object: bool,
    },
    MergePatch {
        target: ObjectRef,
        patch: Value,
        ignore_missing_object: bool,
    },
    JsonPatch {
        target: ObjectRef,
        patch: json_patch::Patch,
        ignore_missing_object: bool,
    },
}

const FIELDS: &[&str] = &[
    "operation",
    "namespace",
    "subresource",
    "apiVersion",
    "kind",
    "name",
    "object",
    "jsonPatch",
    "jqFilter",
    "mergePatch",
    "ignoreMissingObject",
    "ignoreHookError",
];

/// Parses the file: a stream of JSON documents, else a YAML multi-document stream. A document
/// that is an array holds several operations. Empty and `null` documents are skipped.
pub fn parse(text: &str) -> Result<Vec<KubeOperation>, KubePatchError> {
    let documents = read_documents(text)?;
    let mut ops = Vec::new();
    for doc in documents {
        match doc {
            Value::Null => {}
            Value::Array(items) => ops.extend(items),
            other => ops.push(other),
        }
    }
    ops.iter()
        .enumerate()
        .map(|(index, op)| {
            parse_operation(op).map_err(|(operation, message)| KubePatchError::ValidateOperation {
                index,
                operation,
                message,
            })
        })
        .collect()
}

fn read_documents(text: &str) -> Result<Vec<Value>, KubePatchError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let json: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect();
    match json {
        Ok(docs) => Ok(docs),
        Err(_) => serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text).map_err(|e| {
            KubePatchError::ReadDocuments {
                message: e.to_string(),
            }
        }),
    }
}

type Invalid = (Option<String>, String);

fn parse_operation(value: &Value) -> Result<KubeOperation, Invalid> {
    let Value::Object(map) = value else {
        return Err((None, "must be an object".to_string()));
    };
    let op_name = match map.get("operation") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err((None, "'operation' must be a string".to_string())),
        None => return Err((None, "'operation' is required".to_string())),
    };
    let fail = |message: String| (Some(op_name.clone()), message);
    if let Some(key) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(fail(format!("unknown field '{key}'")));
    }
    let ignore_missing_object = opt_bool(map, "ignoreMissingObject").map_err(fail)?;
    opt_bool(map, "ignoreHookError").map_err(fail)?;
    let op = match op_name.as_str() {
        "Create" | "CreateOrUpdate" | "CreateIfNotExists" => {
            let mode = match op_name.as_str() {
                "Create" => CreateMode::Create,
                "CreateOrUpdate" => CreateMode::CreateOrUpdate,
                _ => CreateMode::CreateIfNotExists,
            };
            KubeOperation::Create {
                mode,
                object: read_object(map).map_err(fail)?,
                subresource: opt_string(map, "subresource").map_err(fail)?,
            }
        }
        "Delete" | "DeleteInBackground" | "DeleteNonCascading" => KubeOperation::Delete {
            target: read_target(map).map_err(fail)?,
            propagation: match op_name.as_str() {
                "Delete" => DeletePropagation::Foreground,
                "DeleteInBackground" => DeletePropagation::Background,
                _ => DeletePropagation::Orphan,
            },
        },
        "JQPatch" => {
            let target = read_target(map).map_err(fail)?;
            let source = opt_string(map, "jqFilter")
                .map_err(fail)?
                .ok_or_else(|| fail("'jqFilter' is required".to_string()))?;
            let filter = JqFilter::compile(&source).map_err(|e| fail(e.to_string()))?;
            KubeOperation::JqPatch {
                target,
                filter,
                ignore_missing_object,
            }
        }
        "MergePatch" => KubeOperation::MergePatch {
            target: read_target(map).map_err(fail)?,
            patch: read_embedded(map, "mergePatch")
                .map_err(fail)?
                .filter(Value::is_object)
                .ok_or_else(|| {
                    fail("'mergePatch' must be an object (or a string holding one)".to_string())
                })?,
            ignore_missing_object,
        },
        "JSONPatch" => {
            let target = read_target(map).map_err(fail)?;
            let raw = read_embedded(map, "jsonPatch")
                .map_err(fail)?
                .ok_or_else(|| fail("'jsonPatch' is required".to_string()))?;
            let patch = serde_json::from_value::<json_patch::Patch>(raw)
                .map_err(|e| fail(format!("'jsonPatch' is not a JSON Patch: {e}")))?;
            KubeOperation::JsonPatch {
                target,
                patch,
                ignore_missing_object,
            }
        }
        other => {
            return Err(fail(format!(
                "unknown operation '{other}' (allowed: Create, CreateOrUpdate, CreateIfNotExists, Delete, DeleteInBackground, DeleteNonCascading, JQPatch, MergePatch, JSONPatch)"
            )));
        }
    };
    Ok(op)
}

fn opt_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("'{key}' must be a string")),
    }
}

fn opt_bool(map: &Map<String, Value>, key: &str) -> Result<bool, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("'{key}' must be a boolean")),
    }
}

fn read_target(map: &Map<String, Value>) -> Result<ObjectRef, String> {
    let kind = opt_string(map, "kind")?.ok_or("'kind' is required")?;
    let name = opt_string(map, "name")?.ok_or("'name' is required")?;
    Ok(ObjectRef {
        api_version: opt_string(map, "apiVersion")?,
        kind,
        namespace: opt_string(map, "namespace")?,
        name,
        subresource: opt_string(map, "subresource")?,
    })
}

/// A field given as a value or as a string holding JSON or YAML.
fn read_embedded(map: &Map<String, Value>, key: &str) -> Result<Option<Value>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => crate::yaml::parse(text)
            .map(Some)
            .map_err(|e| format!("'{key}' holds neither JSON nor YAML: {e}")),
        Some(v) => Ok(Some(v.clone())),
    }
}

fn read_object(map: &Map<String, Value>) -> Result<Value, String> {
    let object = read_embedded(map, "object")?.ok_or("'object' is required")?;
    let has = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty());
    if !object.is_object() {
        return Err("'object' must be an object (or a string holding one)".into());
    }
    if !has(&object["apiVersion"]) || !has(&object["kind"]) {
        return Err("'object' needs 'apiVersion' and 'kind'".into());
    }
    if !has(&object["metadata"]["name"]) && !has(&object["metadata"]["generateName"]) {
        return Err("'object' needs 'metadata.name' or 'metadata.generateName'".into());
    }
    Ok(object)
}

#[cfg(test)]
mod tests;
