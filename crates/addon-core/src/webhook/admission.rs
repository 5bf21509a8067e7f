//! AdmissionReview: reading the request the API server sends, the hook's `$VALIDATING_RESPONSE_PATH` file, and the review sent back.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::{MAX_RESPONSE_BYTES, WebhookError};
use crate::hook_config::AdmissionKind;

/// The facts of an AdmissionReview request the operator needs (the review itself goes to the hook).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionRequest {
    /// `apiVersion` of the review (`admission.k8s.io/v1` or `v1beta1`): the reply uses the same.
    pub api_version: String,
    pub uid: String,
    pub operation: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl AdmissionRequest {
    /// Reads an AdmissionReview body.
    pub fn parse(review: &Value) -> Result<Self, WebhookError> {
        let kind = review.get("kind").and_then(Value::as_str);
        if kind != Some("AdmissionReview") {
            return Err(WebhookError::BadReview {
                message: "kind must be AdmissionReview".into(),
            });
        }
        let request =
            review
                .get("request")
                .filter(|r| r.is_object())
                .ok_or(WebhookError::BadReview {
                    message: "missing parameters: request".into(),
                })?;
        let text = |v: &Value, key: &str| {
            v.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let uid = text(request, "uid");
        if uid.is_empty() {
            return Err(WebhookError::BadReview {
                message: "request.uid is empty".into(),
            });
        }
        Ok(Self {
            api_version: review
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("admission.k8s.io/v1")
                .to_string(),
            uid,
            operation: text(request, "operation"),
            kind: request
                .get("kind")
                .map(|k| text(k, "kind"))
                .unwrap_or_default(),
            namespace: text(request, "namespace"),
            name: text(request, "name"),
        })
    }
}

/// What a hook answered in `$VALIDATING_RESPONSE_PATH` (`$ADMISSION_RESPONSE_PATH`).
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionResponse {
    pub allowed: bool,
    pub message: String,
    pub warnings: Vec<String>,
    /// JSON patch operations (mutating hooks): given as base64 of the patch text, as in
    /// shell-operator, or as a JSON array of operations.
    pub patch: Option<Value>,
}

impl AdmissionResponse {
    /// A denial with `message` (a hook that failed, timed out or wrote garbage).
    pub fn deny(message: impl Into<String>) -> Self {
        Self {
            allowed: false,
            message: message.into(),
            warnings: Vec::new(),
            patch: None,
        }
    }

    /// Parses the response file. Unknown fields are ignored (as shell-operator's JSON decoder);
    /// an empty file, a file that is not a JSON object, a wrongly typed field or a patch that is
    /// not a JSON patch is an error the caller turns into a denial.
    pub fn parse(bytes: &[u8]) -> Result<Self, WebhookError> {
        let map = read_object(bytes, "$VALIDATING_RESPONSE_PATH")?;
        let field = |key: &'static str, expected: &'static str| WebhookError::BadResponseField {
            file: "$VALIDATING_RESPONSE_PATH",
            key,
            expected,
        };
        let allowed = match map.get("allowed") {
            None | Some(Value::Null) => false,
            Some(v) => v.as_bool().ok_or(field("allowed", "a boolean"))?,
        };
        let message = match map.get("message") {
            None | Some(Value::Null) => String::new(),
            Some(v) => v.as_str().ok_or(field("message", "a string"))?.to_string(),
        };
        let warnings = match map.get("warnings") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|w| w.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or(field("warnings", "an array of strings"))?,
            Some(_) => return Err(field("warnings", "an array of strings")),
        };
        let patch = match map.get("patch") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(encoded)) => Some(decode_patch(encoded)?),
            Some(ops @ Value::Array(_)) => Some(check_patch(ops.clone())?),
            Some(_) => return Err(field("patch", "a base64 string or an array")),
        };
        Ok(Self {
            allowed,
            message,
            warnings,
            patch,
        })
    }

    /// The AdmissionReview sent back for `request`. A validating webhook never sends a patch;
    /// a denial carries code 403 and the hook's message.
    pub fn to_review(&self, request: &AdmissionRequest, kind: AdmissionKind) -> Value {
        let mut response = Map::new();
        response.insert("uid".into(), json!(request.uid));
        response.insert("allowed".into(), json!(self.allowed));
        if !self.allowed {
            response.insert(
                "status".into(),
                json!({"code": 403, "message": self.message}),
            );
        }
        if !self.warnings.is_empty() {
            response.insert("warnings".into(), json!(self.warnings));
        }
        if let Some(patch) = self
            .patch
            .as_ref()
            .filter(|_| kind == AdmissionKind::Mutating)
        {
            let text = patch.to_string();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            response.insert("patchType".into(), json!("JSONPatch"));
            response.insert("patch".into(), json!(encoded));
        }
        json!({
            "apiVersion": request.api_version,
            "kind": "AdmissionReview",
            "response": response,
        })
    }
}

fn decode_patch(encoded: &str) -> Result<Value, WebhookError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| WebhookError::BadPatch {
            message: format!("not base64: {e}"),
        })?;
    let ops: Value = serde_json::from_slice(&bytes).map_err(|e| WebhookError::BadPatch {
        message: format!("not JSON: {e}"),
    })?;
    check_patch(ops)
}

fn check_patch(ops: Value) -> Result<Value, WebhookError> {
    match serde_json::from_value::<json_patch::Patch>(ops.clone()) {
        Ok(_) => Ok(ops),
        Err(e) => Err(WebhookError::BadPatch {
            message: format!("not a JSON patch: {e}"),
        }),
    }
}

/// The bytes of a response file as a JSON object.
pub(super) fn read_object(
    bytes: &[u8],
    file: &'static str,
) -> Result<Map<String, Value>, WebhookError> {
    if bytes.len() > MAX_RESPONSE_BYTES {
        return Err(WebhookError::ResponseTooLarge {
            file,
            bytes: bytes.len(),
        });
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(WebhookError::EmptyResponse { file });
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(WebhookError::BadResponse {
            file,
            message: format!("must be a JSON object, got {}", type_name(&other)),
        }),
        Err(e) => Err(WebhookError::BadResponse {
            file,
            message: format!("not JSON: {e}"),
        }),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
