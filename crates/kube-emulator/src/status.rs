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
    /// The object is semantically invalid.
    #[error("{0}")]
    Invalid(String),
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
            Self::AlreadyExists { .. } | Self::Conflict { .. } => 409,
            Self::Invalid(_) => 422,
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
            Self::Conflict { .. } => "Conflict",
            Self::Invalid(_) => "Invalid",
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

/// Splits `deployments.apps` into the `details` group and kind fields.
fn details(resource: &str, name: &str) -> Value {
    let (kind, group) = resource.split_once('.').unwrap_or((resource, ""));
    json!({ "name": name, "group": group, "kind": kind })
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
    }
}
