//! Write verbs: create, update, patch (all flavours), delete and deletecollection.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::read::object_id;
use super::{
    Params, ResourceRequest, dry_run, name_of, ns_of, prepare, respond, selectors, stamp, validate,
};
use crate::app::App;
use crate::apply;
use crate::body;
use crate::meta;
use crate::patch::{self, PatchKind};
use crate::status::{ApiError, json_body, success_status};
use crate::store::DeleteOptions;

/// Checks the body's namespace against the path's and fills it in.
fn place_in_namespace(req: &ResourceRequest, obj: &mut Value) -> Result<(), ApiError> {
    if !req.info.namespaced {
        return Ok(());
    }
    match (req.namespace.as_deref(), meta::namespace(obj)) {
        (Some(path), Some(body)) if path != body => Err(ApiError::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        )),
        (Some(path), _) => {
            meta::set_meta(obj, "namespace", json!(path));
            Ok(())
        }
        (None, Some(_)) => Ok(()),
        (None, None) => Err(ApiError::BadRequest(
            "a namespace is required to create this object".into(),
        )),
    }
}

pub(super) fn create(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    if req.info.create_only {
        // Reviews may come as protobuf of any kind; only the answer's status matters.
        let review = body::decode_object(headers, bytes).unwrap_or_else(|_| json!({}));
        return Ok(respond(
            req,
            StatusCode::CREATED,
            review_answer(&req.info.kind, review),
        ));
    }
    let mut obj = body::decode_object(headers, bytes)?;
    place_in_namespace(req, &mut obj)?;
    let obj = prepare::Write::new(req, params, headers, "Update").create(stamp(req, obj))?;
    let created = app.store.create(&req.info, obj, dry_run(params))?;
    Ok(respond(req, StatusCode::CREATED, created))
}

/// The approving answer to an access or token review (there is no authorization here).
fn review_answer(kind: &str, mut review: Value) -> Value {
    let status = match kind {
        "SelfSubjectRulesReview" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false
        }),
        "SelfSubjectReview" => {
            json!({"userInfo": {"username": "kube-emulator", "groups": ["system:masters"]}})
        }
        "TokenReview" => json!({"authenticated": true, "user": {"username": "kube-emulator"}}),
        _ => json!({"allowed": true, "reason": "kube-emulator allows everything"}),
    };
    meta::ensure_object(&mut review).insert("status".into(), status);
    review
}

pub(super) fn update(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let mut obj = body::decode_object(headers, bytes)?;
    place_in_namespace(req, &mut obj)?;
    let status_only = req.sub.as_deref() == Some("status");
    let name = name_of(req);
    if status_only {
        let obj = prepare::Write::new(req, params, headers, "Update").status(name, obj)?;
        let updated = app
            .store
            .update(&req.info, ns_of(req), name, obj, true, dry_run(params))?;
        return Ok(respond(req, StatusCode::OK, updated));
    }
    let write = prepare::Write::new(req, params, headers, "Update");
    let updated = app.store.modify(
        &req.info,
        ns_of(req),
        name,
        false,
        dry_run(params),
        false,
        |current| {
            let current = current.ok_or_else(|| ApiError::not_found(req.info.qualified(), name))?;
            write.update(current, obj, true)
        },
    )?;
    Ok(respond(req, StatusCode::OK, updated))
}

pub(super) fn patch(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let kind = PatchKind::from_content_type(&body::content_type(headers))?;
    tracing::trace!(kind = ?kind, body = %String::from_utf8_lossy(bytes), "patch");
    validate::check_patch(&req.info, kind, params)?;
    let apply = kind == PatchKind::Apply;
    let operation = if apply { "Apply" } else { "Update" };
    let write = prepare::Write::new(req, params, headers, operation);
    let force = params.get("force").is_some_and(|f| f == "true");
    let status_only = req.sub.as_deref() == Some("status");
    let mut created = false;
    let (ns, name) = (ns_of(req), name_of(req));
    let change = |current: Option<&Value>| {
        if !apply {
            let current = current.ok_or_else(|| ApiError::not_found(req.info.qualified(), name))?;
            let patched = patch::apply_patch(kind, current, bytes)?;
            return write.update(current, patched, false);
        }
        let mut applied = body::parse_yaml_or_json(bytes)?;
        created = current.is_none();
        if created {
            meta::set_meta(&mut applied, "name", json!(name));
            applied = stamp(req, applied);
        }
        let out = apply::apply(&req.info, current, &applied, &write.writer, force)?;
        write.applied(current, out)
    };
    let result = app.store.modify(
        &req.info,
        ns,
        name,
        status_only,
        dry_run(params),
        apply,
        change,
    )?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(respond(req, code, result))
}

fn delete_options(params: &Params, headers: &HeaderMap, bytes: &[u8]) -> DeleteOptions {
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        body::decode_object(headers, bytes).unwrap_or_default()
    };
    let text = |key: &str| {
        params
            .get(key)
            .cloned()
            .or_else(|| body.get(key).and_then(Value::as_str).map(String::from))
    };
    let policy = text("propagationPolicy");
    let body_dry = body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    DeleteOptions {
        dry_run: dry_run(params) || body_dry,
        orphan: policy.as_deref() == Some("Orphan")
            || body.get("orphanDependents").and_then(Value::as_bool) == Some(true),
        uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(String::from),
        resource_version: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(String::from),
    }
}

pub(super) fn delete(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let opts = delete_options(params, headers, bytes);
    let (ns, name) = (ns_of(req), name_of(req));
    let deleted = app
        .store
        .delete(&req.info, ns, name, &opts)
        .map_err(|e| precondition_by_kind(req, e))?;
    let held = if opts.dry_run {
        !meta::finalizers(&deleted).is_empty()
    } else {
        app.store.get(&req.info.key(), ns, name).is_some()
    };
    if held || returns_deleted_object(&req.info) {
        return Ok(respond(req, StatusCode::OK, deleted));
    }
    let mut details = serde_json::Map::new();
    details.insert("name".into(), json!(name));
    if !req.info.group.is_empty() {
        details.insert("group".into(), json!(req.info.group));
    }
    details.insert("kind".into(), json!(req.info.plural));
    details.insert("uid".into(), json!(meta::uid(&deleted)));
    let mut status = success_status();
    status["details"] = Value::Object(details);
    Ok(json_body(&status))
}

/// Kinds whose delete answers the deleted object rather than a `Status` (the API server's
/// `ReturnDeletedObject`).
fn returns_deleted_object(info: &crate::resources::ResourceInfo) -> bool {
    matches!(
        (info.group.as_str(), info.plural.as_str()),
        ("", "pods" | "podtemplates" | "serviceaccounts" | "services")
            | ("storage.k8s.io", "storageclasses")
    )
}

/// A failed precondition names the kind, not the resource, in its details (as the API server's
/// does); other errors pass.
fn precondition_by_kind(req: &ResourceRequest, error: ApiError) -> ApiError {
    match error {
        ApiError::Conflict { name, message, .. } if message.starts_with("Precondition failed") => {
            ApiError::Conflict {
                resource: if req.info.group.is_empty() {
                    req.info.kind.clone()
                } else {
                    format!("{}.{}", req.info.kind, req.info.group)
                },
                name,
                message,
            }
        }
        other => other,
    }
}

pub(super) fn delete_collection(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let opts = delete_options(params, headers, bytes);
    let (labels, fields) = selectors(&req.info, params)?;
    let (items, _) = app.store.list(&req.info.key(), req.namespace.as_deref());
    let mut deleted = Vec::new();
    for obj in items
        .iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
    {
        let (ns, name) = object_id(obj);
        match app.store.delete(&req.info, &ns, &name, &opts) {
            Ok(gone) => deleted.push(stamp(req, gone)),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": format!("{}List", req.info.kind),
        "apiVersion": req.info.api_version(&req.version),
        "metadata": { "resourceVersion": app.store.current_rv().to_string() },
        "items": deleted,
    });
    Ok(json_body(&list))
}
