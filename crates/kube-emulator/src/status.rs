//! Kubernetes `Status` failures: the error type every API operation returns, with code and reason.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A failed API request, answered to the client as a `Status` object.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    /// The object (or its namespace) does not exist.
    #[error("{resource} \"{name}\" not found")]
    NotFound { resource: String, name: String },
    /// The path names nothing this server serves.
    #[error("the server could not find the requested resource")]
    NoRoute,
    /// A create hit an existing name.
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists { resource: String, name: String },
    /// An update carried a stale `resourceVersion` or failed a precondition.
    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {message}")]
    Conflict {
        resource: String,
        name: String,
        message: String,
    },
    /// A server-side apply would change fields other managers own.
    #[error("Apply failed with {} conflict{}: {}", .0.len(), if .0.len() == 1 { "" } else { "s" }, join_causes(.0))]
    ApplyConflict(Vec<Cause>),
    /// The object is semantically invalid.
    #[error("{0}")]
    Invalid(String),
    /// The object (or the request's options) failed validation, field by field: `422 Invalid`
    /// with the causes in `details`.
    #[error("{}", invalid_message(.group, .kind, .name, .causes))]
    InvalidFields {
        group: String,
        kind: String,
        name: String,
        causes: Vec<Cause>,
    },
    /// The request could not be understood.
    #[error("{0}")]
    BadRequest(String),
    /// The verb is not supported on this path.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The body's media type is not supported.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A watch asked for a version older than the kept history.
    #[error("too old resource version: {requested} ({oldest})")]
    Expired { requested: u64, oldest: u64 },
    /// A list's `continue` token points at a snapshot no longer kept.
    #[error(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
    )]
    ContinueExpired,
    /// The operation is forbidden in the current state (e.g. terminating namespace).
    #[error("{0}")]
    Forbidden(String),
    /// Storage failed or an injected fault fired.
    #[error("{0}")]
    Internal(String),
    /// An injected throttling fault.
    #[error("{0}")]
    TooManyRequests(String),
}

impl ApiError {
    /// HTTP status code of this failure.
    pub fn code(&self) -> u16 {
        match self {
            Self::NotFound { .. } | Self::NoRoute => 404,
            Self::AlreadyExists { .. } | Self::Conflict { .. } | Self::ApplyConflict(_) => 409,
            Self::Invalid(_) | Self::InvalidFields { .. } => 422,
            Self::BadRequest(_) => 400,
            Self::MethodNotAllowed(_) => 405,
            Self::UnsupportedMediaType(_) => 415,
            Self::Expired { .. } | Self::ContinueExpired => 410,
            Self::Forbidden(_) => 403,
            Self::Internal(_) => 500,
            Self::TooManyRequests(_) => 429,
        }
    }

    /// The `reason` field of the `Status`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } | Self::NoRoute => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } | Self::ApplyConflict(_) => "Conflict",
            Self::Invalid(_) | Self::InvalidFields { .. } => "Invalid",
            Self::BadRequest(_) => "BadRequest",
            Self::MethodNotAllowed(_) => "MethodNotAllowed",
            Self::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Self::Expired { .. } | Self::ContinueExpired => "Expired",
            Self::Forbidden(_) => "Forbidden",
            Self::Internal(_) => "InternalError",
            Self::TooManyRequests(_) => "TooManyRequests",
        }
    }

    /// Static label for metrics and logs.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Internal(_) => "internal",
            Self::TooManyRequests(_) => "throttled",
            Self::Expired { .. } | Self::ContinueExpired => "expired",
            _ => "client",
        }
    }

    /// The `Status` object clients decode.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code(),
        });
        let details = match self {
            Self::NotFound { resource, name }
            | Self::AlreadyExists { resource, name }
            | Self::Conflict { resource, name, .. } => Some(details(resource, name)),
            Self::InvalidFields {
                group,
                kind,
                name,
                causes,
            } => Some(invalid_details(group, kind, name, causes)),
            Self::ApplyConflict(causes) => Some(invalid_details("", "", "", causes)),
            _ => None,
        };
        if let (Some(d), Some(map)) = (details, status.as_object_mut()) {
            map.insert("details".into(), d);
        }
        status
    }

    /// Shorthand for a [`ApiError::NotFound`].
    pub fn not_found(resource: impl Into<String>, name: impl Into<String>) -> Self {
        Self::NotFound {
            resource: resource.into(),
            name: name.into(),
        }
    }
}

/// One failed field of an [`ApiError::InvalidFields`] (a `StatusCause`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, ...
    pub reason: &'static str,
    /// The field's path (`metadata.name`, `spec.size`).
    pub field: String,
    /// What is wrong with it (`Invalid value: 20: ...`).
    pub message: String,
}

impl Cause {
    /// A cause from its parts.
    pub fn new(reason: &'static str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason,
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The causes' messages, joined.
fn join_causes(causes: &[Cause]) -> String {
    let each: Vec<&str> = causes.iter().map(|c| c.message.as_str()).collect();
    each.join(", ")
}

/// `Kind.group "name" is invalid: field: message` (causes in brackets when there are several).
fn invalid_message(group: &str, kind: &str, name: &str, causes: &[Cause]) -> String {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let each: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    let all = match each.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    format!("{qualified} \"{name}\" is invalid: {all}")
}

/// The `details` of an invalid object (or an apply's conflicts): empty parts left out, as the API server leaves them out.
fn invalid_details(group: &str, kind: &str, name: &str, causes: &[Cause]) -> Value {
    let mut details = serde_json::Map::new();
    for (key, value) in [("name", name), ("group", group), ("kind", kind)] {
        if !value.is_empty() {
            details.insert(key.into(), json!(value));
        }
    }
    let causes: Vec<Value> = causes
        .iter()
        .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
        .collect();
    details.insert("causes".into(), Value::Array(causes));
    Value::Object(details)
}

/// Splits `deployments.apps` into the `details` group and kind fields (the core group's empty
/// name is left out, as the API server leaves it out).
fn details(resource: &str, name: &str) -> Value {
    match resource.split_once('.') {
        Some((kind, group)) => json!({ "name": name, "group": group, "kind": kind }),
        None => json!({ "name": name, "kind": resource }),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (code, json_body(&self.to_status())).into_response();
        if matches!(self, Self::TooManyRequests(_)) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// A JSON body with the `application/json` content type.
pub fn json_body(value: &Value) -> Response {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

/// A successful `Status` (answer of deletecollection and some deletes).
pub fn success_status() -> Value {
    json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_has_code_reason_and_details() {
        let status = ApiError::not_found("deployments.apps", "web").to_status();
        assert_eq!(status["code"], 404);
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(status["message"], "deployments.apps \"web\" not found");
        let invalid = ApiError::InvalidFields {
            group: String::new(),
            kind: "ConfigMap".into(),
            name: "Bad".into(),
            causes: vec![Cause::new(
                "FieldValueInvalid",
                "metadata.name",
                "Invalid value",
            )],
        };
        assert_eq!(
            invalid.to_string(),
            "ConfigMap \"Bad\" is invalid: metadata.name: Invalid value"
        );
        assert_eq!(
            invalid.to_status()["details"],
            json!({"name": "Bad", "kind": "ConfigMap", "causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value", "field": "metadata.name"}]})
        );
        let core = ApiError::not_found("configmaps", "c").to_status();
        assert_eq!(core["details"], json!({"name": "c", "kind": "configmaps"}));
    }
}
