//! `$KUBERNETES_PATCH_PATH`: a JSON or YAML stream of object operations (Create, Delete, JQPatch, MergePatch, JSONPatch, ...), validated into [`KubeOperation`]s.

use serde_json::{Map, Value};

use crate::jq::JqFilter;

/// A patch file that could not be read or holds an invalid operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubePatchError {
    #[error("read $KUBERNETES_PATCH_PATH: not a JSON or YAML stream: {message}")]
    ReadDocuments { message: String },
    #[error(
        "$KUBERNETES_PATCH_PATH operation {index}{}: {reason}",
        describe(operation)
    )]
    ValidateOperation {
        /// Position of the operation in the file, from 0.
        index: usize,
        operation: Option<String>,
        reason: InvalidOperation,
    },
}

/// Why one operation of the patch file is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidOperation {
    #[error("must be an object")]
    NotObject,
    #[error("'operation' must be a string")]
    OperationNotString,
    #[error("unknown field '{key}'")]
    UnknownField { key: String },
    #[error("'{key}' must be a string")]
    NotString { key: String },
    #[error("'{key}' must be a boolean")]
    NotBool { key: String },
    #[error("'{key}' is required")]
    Required { key: String },
    #[error("'{key}' holds neither JSON nor YAML: {message}")]
    Embedded { key: String, message: String },
    #[error("'mergePatch' must be an object (or a string holding one)")]
    MergePatchNotObject,
    #[error("'jsonPatch' is not a JSON Patch: {message}")]
    JsonPatch { message: String },
    #[error(transparent)]
    JqFilter(#[from] crate::jq::JqError),
    #[error(
        "unknown operation '{operation}' (allowed: Create, CreateOrUpdate, CreateIfNotExists, Delete, DeleteInBackground, DeleteNonCascading, JQPatch, MergePatch, JSONPatch)"
    )]
    UnknownOperation { operation: String },
    #[error("'object' must be an object (or a string holding one)")]
    ObjectNotObject,
    #[error("'object' needs 'apiVersion' and 'kind'")]
    ObjectNeedsKind,
    #[error("'object' needs 'metadata.name' or 'metadata.generateName'")]
    ObjectNeedsName,
    #[error(transparent)]
    Name(#[from] ObjectNameError),
}

impl InvalidOperation {
    fn required(key: &str) -> Self {
        Self::Required {
            key: key.to_string(),
        }
    }
}

/// A name, namespace or subresource that Kubernetes would reject or that would change a
/// request URL; the value is shortened to 100 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectNameError {
    #[error("'metadata.{field}' must be a string")]
    MetadataNotString { field: String },
    #[error(
        "{field} '{name}' is not a valid Kubernetes name (a DNS subdomain: at most 253 characters of \
         lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
    )]
    DnsSubdomain { field: String, name: String },
    #[error(
        "{field} '{name}' is not a valid Kubernetes namespace (a DNS label: at most 63 characters of \
         lowercase letters, digits and '-', starting and ending with a letter or digit)"
    )]
    DnsLabel { field: String, name: String },
    #[error(
        "{field} '{name}' is not a valid Kubernetes name (not '.' or '..', at most 253 characters, \
         no '/', '%', '?', '#', '\\' or spaces)"
    )]
    PathSegment { field: String, name: String },
    #[error("subresource '{subresource}' is not valid (lowercase letters, e.g. 'status')")]
    Subresource { subresource: String },
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
    documents(text)?
        .iter()
        .enumerate()
        .map(|(index, op)| {
            parse_operation(op).map_err(|(operation, reason)| KubePatchError::ValidateOperation {
                index,
                operation,
                reason,
            })
        })
        .collect()
}

/// The operations of the file as written, one JSON value each, unchecked (see [`parse`]).
pub fn documents(text: &str) -> Result<Vec<Value>, KubePatchError> {
    let mut ops = Vec::new();
    for doc in read_documents(text)? {
        match doc {
            Value::Null => {}
            Value::Array(items) => ops.extend(items),
            other => ops.push(other),
        }
    }
    Ok(ops)
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

type Invalid = (Option<String>, InvalidOperation);

fn parse_operation(value: &Value) -> Result<KubeOperation, Invalid> {
    let Value::Object(map) = value else {
        return Err((None, InvalidOperation::NotObject));
    };
    let op_name = match map.get("operation") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err((None, InvalidOperation::OperationNotString)),
        None => return Err((None, InvalidOperation::required("operation"))),
    };
    let fail = |reason: InvalidOperation| (Some(op_name.clone()), reason);
    if let Some(key) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        let key = key.clone();
        return Err(fail(InvalidOperation::UnknownField { key }));
    }
    let ignore_missing_object = opt_bool(map, "ignoreMissingObject").map_err(fail)?;
    opt_bool(map, "ignoreHookError").map_err(fail)?;
    let op = match op_name.as_str() {
        "Create" | "CreateOrUpdate" | "CreateIfNotExists" => {
            check_subresource(opt_string(map, "subresource").map_err(fail)?.as_deref())
                .map_err(|e| fail(e.into()))?;
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
                .ok_or_else(|| fail(InvalidOperation::required("jqFilter")))?;
            let filter = JqFilter::compile(&source).map_err(|e| fail(e.into()))?;
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
                .ok_or_else(|| fail(InvalidOperation::MergePatchNotObject))?,
            ignore_missing_object,
        },
        "JSONPatch" => {
            let target = read_target(map).map_err(fail)?;
            let raw = read_embedded(map, "jsonPatch")
                .map_err(fail)?
                .ok_or_else(|| fail(InvalidOperation::required("jsonPatch")))?;
            let patch = serde_json::from_value::<json_patch::Patch>(raw).map_err(|e| {
                fail(InvalidOperation::JsonPatch {
                    message: e.to_string(),
                })
            })?;
            KubeOperation::JsonPatch {
                target,
                patch,
                ignore_missing_object,
            }
        }
        other => {
            return Err(fail(InvalidOperation::UnknownOperation {
                operation: other.to_string(),
            }));
        }
    };
    Ok(op)
}

fn opt_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, InvalidOperation> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(InvalidOperation::NotString {
            key: key.to_string(),
        }),
    }
}

fn opt_bool(map: &Map<String, Value>, key: &str) -> Result<bool, InvalidOperation> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(InvalidOperation::NotBool {
            key: key.to_string(),
        }),
    }
}

fn read_target(map: &Map<String, Value>) -> Result<ObjectRef, InvalidOperation> {
    let required = |key: &str| opt_string(map, key)?.ok_or_else(|| InvalidOperation::required(key));
    let kind = required("kind")?;
    let name = required("name")?;
    let target = ObjectRef {
        api_version: opt_string(map, "apiVersion")?,
        kind,
        namespace: opt_string(map, "namespace")?,
        name,
        subresource: opt_string(map, "subresource")?,
    };
    check_target(&target)?;
    Ok(target)
}

/// Checks the parts of `target` that go into a request URL: the name as Kubernetes validates
/// it for the kind, the namespace as a DNS label, the subresource as a lowercase word.
pub fn check_target(target: &ObjectRef) -> Result<(), ObjectNameError> {
    check_name(&target.kind, "name", &target.name)?;
    if let Some(ns) = &target.namespace {
        check_dns_label("namespace", ns)?;
    }
    check_subresource(target.subresource.as_deref())
}

/// Checks the name (or `generateName`) and namespace of an object to create.
pub fn check_object_meta(object: &Value) -> Result<(), ObjectNameError> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let meta = &object["metadata"];
    for field in ["name", "generateName", "namespace"] {
        let value = &meta[field];
        let text = match value {
            Value::Null => continue,
            Value::String(s) if s.is_empty() => continue,
            Value::String(s) => s.as_str(),
            _ => {
                return Err(ObjectNameError::MetadataNotString {
                    field: field.to_string(),
                });
            }
        };
        match field {
            "namespace" => check_dns_label("metadata.namespace", text)?,
            "generateName" => {
                // Kubernetes validates the prefix without its trailing dash
                let prefix = text.strip_suffix('-').unwrap_or(text);
                check_name(kind, "metadata.generateName", prefix)?;
            }
            _ => check_name(kind, "metadata.name", text)?,
        }
    }
    Ok(())
}

/// Kinds whose names are path segments (`system:controller:x`) rather than DNS subdomains.
const PATH_SEGMENT_NAMED: &[&str] = &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"];

fn check_name(kind: &str, field: &str, name: &str) -> Result<(), ObjectNameError> {
    if PATH_SEGMENT_NAMED.contains(&kind) {
        check_path_segment(field, name)
    } else {
        check_dns_subdomain(field, name)
    }
}

/// RFC 1123 subdomain: at most 253 characters of `a-z`, `0-9`, `-`, `.`, starting and ending
/// with a letter or digit.
fn check_dns_subdomain(field: &str, name: &str) -> Result<(), ObjectNameError> {
    let ok = name.len() <= 253
        && name.split('.').all(is_dns_label)
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if ok {
        return Ok(());
    }
    Err(ObjectNameError::DnsSubdomain {
        field: field.to_string(),
        name: shorten(name),
    })
}

fn check_dns_label(field: &str, name: &str) -> Result<(), ObjectNameError> {
    if is_dns_label(name) {
        return Ok(());
    }
    Err(ObjectNameError::DnsLabel {
        field: field.to_string(),
        name: shorten(name),
    })
}

fn is_dns_label(label: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !label.is_empty()
        && label.len() <= 63
        && label.chars().all(|c| alnum(c) || c == '-')
        && label.starts_with(alnum)
        && label.ends_with(alnum)
}

/// What Kubernetes accepts for RBAC names (not `.` or `..`, no `/` or `%`), without the
/// characters that would change a request URL or cannot appear in one unescaped.
fn check_path_segment(field: &str, name: &str) -> Result<(), ObjectNameError> {
    let bad =
        |c: char| matches!(c, '/' | '%' | '?' | '#' | '\\') || c.is_whitespace() || c.is_control();
    if !name.is_empty() && name.len() <= 253 && name != "." && name != ".." && !name.contains(bad) {
        return Ok(());
    }
    Err(ObjectNameError::PathSegment {
        field: field.to_string(),
        name: shorten(name),
    })
}

fn check_subresource(subresource: Option<&str>) -> Result<(), ObjectNameError> {
    match subresource {
        Some(s) if !(1..=63).contains(&s.len()) || !s.chars().all(|c| c.is_ascii_lowercase()) => {
            Err(ObjectNameError::Subresource {
                subresource: shorten(s),
            })
        }
        _ => Ok(()),
    }
}

/// At most 100 characters of untrusted text, for messages.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A field given as a value or as a string holding JSON or YAML.
fn read_embedded(map: &Map<String, Value>, key: &str) -> Result<Option<Value>, InvalidOperation> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            crate::yaml::parse(text)
                .map(Some)
                .map_err(|e| InvalidOperation::Embedded {
                    key: key.to_string(),
                    message: e.to_string(),
                })
        }
        Some(v) => Ok(Some(v.clone())),
    }
}

fn read_object(map: &Map<String, Value>) -> Result<Value, InvalidOperation> {
    let object =
        read_embedded(map, "object")?.ok_or_else(|| InvalidOperation::required("object"))?;
    let has = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty());
    if !object.is_object() {
        return Err(InvalidOperation::ObjectNotObject);
    }
    if !has(&object["apiVersion"]) || !has(&object["kind"]) {
        return Err(InvalidOperation::ObjectNeedsKind);
    }
    if !has(&object["metadata"]["name"]) && !has(&object["metadata"]["generateName"]) {
        return Err(InvalidOperation::ObjectNeedsName);
    }
    check_object_meta(&object)?;
    Ok(object)
}

#[cfg(test)]
mod tests;
