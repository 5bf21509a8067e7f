//! The `/scale` subresource of Deployments, StatefulSets and ReplicaSets (`kubectl scale`).

use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde_json::{Value, json};

use super::{Params, ResourceRequest, dry_run, name_of, ns_of};
use crate::app::App;
use crate::body;
use crate::meta;
use crate::patch::{self, PatchKind};
use crate::resources::has_scale;
use crate::status::{ApiError, json_body};

/// GET, PUT or PATCH on `<workload>/scale`.
pub(super) fn serve(
    app: &App,
    method: &Method,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    if !has_scale(&req.info) {
        return Err(ApiError::NoRoute);
    }
    let (ns, name) = (ns_of(req), name_of(req));
    if method == Method::GET {
        let obj = app
            .store
            .get(&req.info.key(), ns, name)
            .ok_or_else(|| ApiError::not_found(req.info.qualified(), name))?;
        return Ok(json_body(&scale_of(&obj)));
    }
    let new_scale = |current: &Value| -> Result<Value, ApiError> {
        match *method {
            Method::PUT => body::decode_object(headers, bytes),
            Method::PATCH => {
                let kind = PatchKind::from_content_type(&body::content_type(headers))?;
                patch::apply_patch(kind, &scale_of(current), bytes)
            }
            _ => Err(ApiError::MethodNotAllowed(format!(
                "{method} is not allowed on scale"
            ))),
        }
    };
    let updated = app.store.modify(
        &req.info,
        ns,
        name,
        false,
        dry_run(params),
        false,
        |current| {
            let current = current.ok_or_else(|| ApiError::not_found(req.info.qualified(), name))?;
            let scale = new_scale(current)?;
            let replicas = scale
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .ok_or_else(|| {
                    ApiError::Invalid("Scale is invalid: spec.replicas: Required value".into())
                })?;
            let mut workload = current.clone();
            if let Some(rv) = meta::meta_str(&scale, "resourceVersion") {
                meta::set_meta(&mut workload, "resourceVersion", json!(rv));
            }
            meta::ensure_object(
                meta::ensure_object(&mut workload)
                    .entry("spec")
                    .or_insert_with(|| json!({})),
            )
            .insert("replicas".into(), json!(replicas));
            Ok(workload)
        },
    )?;
    Ok(json_body(&scale_of(&updated)))
}

/// The `autoscaling/v1` Scale view of a workload.
fn scale_of(obj: &Value) -> Value {
    let metadata = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |k: &str| metadata.get(k).cloned().unwrap_or(Value::Null);
    let replicas = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|labels| {
            let pairs: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            pairs.join(",")
        })
        .unwrap_or_default();
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": { "replicas": replicas },
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        },
    })
}
