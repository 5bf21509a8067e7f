//! Requests in a version other than their CRD's storage version: the body goes to the storage version through the conversion webhook, the request is served in the storage version, and the answer comes back in the version asked for.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::{Params, ResourceRequest, name_of, ns_of, route};
use crate::app::App;
use crate::body;
use crate::conversion::Conversion;
use crate::patch::{self, PatchKind};
use crate::status::{ApiError, json_body};

/// Largest answer converted back.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// Serves the request (named by `path`) through its conversion.
pub(super) async fn serve(
    app: &Arc<App>,
    (req, conversion): &(ResourceRequest, Conversion),
    method: &Method,
    path: &str,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let storage_path = storage_path(req, path, &conversion.storage_version)?;
    let mut headers = headers.clone();
    let mut method = method.clone();
    let body = match method.as_str() {
        "POST" | "PUT" => {
            let object = body::decode_object(&headers, bytes)?;
            let object = versioned(object, &conversion.requested);
            json_bytes(&conversion.one_to_storage(app, object).await?)?
        }
        "PATCH" => {
            let kind = PatchKind::from_content_type(&body::content_type(&headers))?;
            if kind == PatchKind::Apply {
                // an applied configuration is a partial object: converted as one
                let applied = versioned(body::parse_yaml_or_json(bytes)?, &conversion.requested);
                json_bytes(&conversion.one_to_storage(app, applied).await?)?
            } else {
                // the patch is meant for the object in the version asked for; the result is
                // written back with the read resourceVersion, so a concurrent write conflicts
                method = Method::PUT;
                json_bytes(&patched(app, conversion, req, kind, bytes).await?)?
            }
        }
        _ => bytes.to_vec(),
    };
    if method == Method::PUT || method == Method::POST {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    let response = route(app, &method, &storage_path, params, &headers, &body)?;
    back(app, conversion, response).await
}

/// The same path with the storage version in place of the requested one.
fn storage_path(req: &ResourceRequest, path: &str, storage: &str) -> Result<String, ApiError> {
    let prefix = format!("/apis/{}/{}/", req.info.group, req.version);
    let rest = path.strip_prefix(&prefix).ok_or(ApiError::NoRoute)?;
    Ok(format!("/apis/{}/{storage}/{rest}", req.info.group))
}

/// The object with `apiVersion` set when the client left it out.
fn versioned(mut object: Value, api_version: &str) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| json!(api_version));
    }
    object
}

fn json_bytes(value: &Value) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(value).map_err(|e| ApiError::Internal(e.to_string()))
}

/// The stored object, converted, patched and converted back to the storage version.
async fn patched(
    app: &App,
    conversion: &Conversion,
    req: &ResourceRequest,
    kind: PatchKind,
    bytes: &[u8],
) -> Result<Value, ApiError> {
    let current = app
        .store
        .get(&req.info.key(), ns_of(req), name_of(req))
        .ok_or_else(|| ApiError::not_found(req.info.qualified(), name_of(req)))?;
    let current = versioned(current, &conversion.storage);
    let shown = conversion.one_to_requested(app, current).await?;
    let changed = patch::apply_patch(kind, &shown, bytes)?;
    conversion.one_to_storage(app, changed).await
}

/// The answer with its objects in the version asked for (Tables and metadata-only answers, which
/// carry no convertible object, are left as they are).
async fn back(
    app: &App,
    conversion: &Conversion,
    response: Response,
) -> Result<Response, ApiError> {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !response.status().is_success() || !is_json {
        return Ok(response);
    }
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut doc: Value =
        serde_json::from_slice(&bytes).map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) {
        let converted = conversion.to_requested(app, std::mem::take(items)).await?;
        doc["items"] = Value::Array(converted);
        if doc["apiVersion"] == conversion.storage.as_str() {
            doc["apiVersion"] = json!(conversion.requested);
        }
    } else if doc["apiVersion"] == conversion.storage.as_str() {
        doc = conversion.one_to_requested(app, doc).await?;
    }
    let mut out = json_body(&doc);
    *out.status_mut() = status;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn the_storage_path_swaps_only_the_version() {
        let crd = json!({"spec": {"group": "g.io", "names": {"plural": "things", "kind": "Thing"},
            "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true},
            {"name": "v1alpha1", "served": true}]}});
        let reg = Registry::new(std::iter::once(&crd));
        let req = super::super::resolve(&reg, "g.io", "v1alpha1", &["namespaces", "a", "things"])
            .unwrap();
        assert_eq!(
            storage_path(&req, "/apis/g.io/v1alpha1/namespaces/a/things", "v1").unwrap(),
            "/apis/g.io/v1/namespaces/a/things"
        );
    }
}
