//! Request bodies: JSON, YAML and Kubernetes protobuf, all decoded into JSON values.

use axum::http::{HeaderMap, header};
use serde_json::Value;

use crate::protobuf;
use crate::status::ApiError;

/// The media type (without parameters) of the request body.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Decodes a create or update body by its content type.
pub fn decode_object(headers: &HeaderMap, bytes: &[u8]) -> Result<Value, ApiError> {
    let media = content_type(headers);
    let value = match media.as_str() {
        "application/vnd.kubernetes.protobuf" => protobuf::decode(bytes)?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => parse_yaml_or_json(bytes)?,
        _ => serde_json::from_slice(bytes).map_err(|e| {
            ApiError::BadRequest(format!("the request body is not valid JSON: {e}"))
        })?,
    };
    if value.is_object() {
        Ok(value)
    } else {
        Err(ApiError::BadRequest(
            "the request body must be an object".into(),
        ))
    }
}

/// Parses JSON, or YAML when it is not JSON.
pub fn parse_yaml_or_json(bytes: &[u8]) -> Result<Value, ApiError> {
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::BadRequest("the request body is not UTF-8 text".into()))?;
    serde_saphyr::from_str(text)
        .map_err(|e| ApiError::BadRequest(format!("the request body is not valid YAML: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_bodies_parse_into_json_values() {
        let v =
            parse_yaml_or_json(b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1\"\n").unwrap();
        assert_eq!(v["data"]["a"], "1");
    }
}
