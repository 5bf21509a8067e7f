//! The HTTP entry point: path routing and the create/read/update/patch/delete verbs.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::body;
use crate::discovery;
use crate::meta;
use crate::patch::{self, PatchKind};
use crate::resources::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::App;
use crate::status::{ApiError, json_body, success_status};
use crate::store::DeleteOptions;
use crate::watch;

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
}

/// Answers every request (axum fallback handler).
pub async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let path = uri.path().to_string();
    if let Some(rest) = path.strip_prefix("/emulator/") {
        return admin(&app, rest, &uri);
    }
    if let Some(failure) = app.faults.take_failure() {
        return failure.into_response();
    }
    let params: Params = Query::try_from_uri(&uri).map(|q| q.0).unwrap_or_default();
    let result = route(&app, &method, &path, &params, &headers, &bytes);
    match result {
        Ok(response) => response,
        Err(e) => {
            tracing::debug!(%method, %path, code = e.code(), error = %e, "request failed");
            e.into_response()
        }
    }
}

fn route(
    app: &Arc<App>,
    method: &Method,
    path: &str,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let registry = app.store.registry();
    let found = |doc: Option<Value>| doc.map(|d| json_body(&d)).ok_or_else(not_found_path);
    match segs.as_slice() {
        ["version"] => Ok(json_body(&discovery::version())),
        ["healthz" | "readyz" | "livez", ..] => Ok("ok".into_response()),
        ["api"] => Ok(json_body(&discovery::core_versions(&app.server_address))),
        ["apis"] => Ok(json_body(&discovery::group_list(&registry))),
        ["openapi", "v2"] => Ok(discovery::openapi_v2(headers)),
        ["api", version] => found(discovery::resource_list(&registry, "", version)),
        ["apis", group] => found(discovery::group_doc(&registry, group)),
        ["apis", group, version] => found(discovery::resource_list(&registry, group, version)),
        ["api", version, rest @ ..] => {
            let req = resolve(&registry, "", version, rest)?;
            serve_resource(app, method, req, params, headers, bytes)
        }
        ["apis", group, version, rest @ ..] => {
            let req = resolve(&registry, group, version, rest)?;
            serve_resource(app, method, req, params, headers, bytes)
        }
        _ => Err(not_found_path()),
    }
}

fn not_found_path() -> ApiError {
    ApiError::NoRoute
}

/// Parses `[watch/][namespaces/<ns>/]<plural>[/<name>[/<sub>]]`.
fn resolve(
    registry: &crate::resources::Registry,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<ResourceRequest, ApiError> {
    let (legacy_watch, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    let namespaced_form = match rest {
        ["namespaces", ns, plural, tail @ ..] if tail.len() <= 2 => registry
            .find(group, version, plural)
            .filter(|i| i.namespaced)
            .map(|info| (info.clone(), Some(ns.to_string()), tail)),
        _ => None,
    };
    let (info, namespace, tail) = match namespaced_form {
        Some(found) => found,
        None => match rest {
            [plural, tail @ ..] if tail.len() <= 2 => {
                let info = registry
                    .find(group, version, plural)
                    .ok_or_else(not_found_path)?;
                (info.clone(), None, tail)
            }
            _ => return Err(not_found_path()),
        },
    };
    let name = tail.first().map(|s| s.to_string());
    let sub = tail.get(1).map(|s| s.to_string());
    if sub
        .as_deref()
        .is_some_and(|s| s != "status" && s != "finalize")
    {
        return Err(not_found_path());
    }
    if info.namespaced && namespace.is_none() && name.is_some() {
        return Err(not_found_path());
    }
    Ok(ResourceRequest {
        info,
        version: version.to_string(),
        namespace,
        name,
        sub,
        legacy_watch,
    })
}

fn serve_resource(
    app: &Arc<App>,
    method: &Method,
    req: ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let watching =
        req.legacy_watch || matches!(params.get("watch").map(String::as_str), Some("true" | "1"));
    if req.info.create_only && (method != Method::POST || req.name.is_some()) {
        return Err(ApiError::MethodNotAllowed(format!(
            "{} only supports create",
            req.info.qualified()
        )));
    }
    match (method.as_str(), req.name.is_some()) {
        ("GET", false) if watching => watch::serve(app, req, params),
        ("GET", false) => list(app, &req, params),
        ("GET", true) => get(app, &req),
        ("POST", false) => create(app, &req, params, headers, bytes),
        ("PUT", true) => update(app, &req, params, headers, bytes),
        ("PATCH", true) => patch(app, &req, params, headers, bytes),
        ("DELETE", true) => delete(app, &req, params, headers, bytes),
        ("DELETE", false) => delete_collection(app, &req, params, headers, bytes),
        _ => Err(ApiError::MethodNotAllowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))),
    }
}

/// Sets `apiVersion` and `kind` for the version the client asked for.
pub fn stamp(req: &ResourceRequest, mut obj: Value) -> Value {
    let map = meta::ensure_object(&mut obj);
    map.insert(
        "apiVersion".into(),
        json!(req.info.api_version(&req.version)),
    );
    map.insert("kind".into(), json!(req.info.kind));
    obj
}

fn respond(req: &ResourceRequest, code: StatusCode, obj: Value) -> Response {
    let mut response = json_body(&stamp(req, obj));
    *response.status_mut() = code;
    response
}

fn ns_of(req: &ResourceRequest) -> &str {
    req.namespace.as_deref().unwrap_or("")
}

fn name_of(req: &ResourceRequest) -> &str {
    req.name.as_deref().unwrap_or("")
}

fn dry_run(params: &Params) -> bool {
    params.get("dryRun").is_some_and(|v| !v.is_empty())
}

fn get(app: &App, req: &ResourceRequest) -> Result<Response, ApiError> {
    let obj = app
        .store
        .get(&req.info.key(), ns_of(req), name_of(req))
        .ok_or_else(|| ApiError::not_found(req.info.qualified(), name_of(req)))?;
    Ok(respond(req, StatusCode::OK, obj))
}

/// Parsed `labelSelector` and `fieldSelector`.
pub fn selectors(params: &Params) -> Result<(LabelSelector, FieldSelector), ApiError> {
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
    Ok((labels, fields))
}

fn list(app: &App, req: &ResourceRequest, params: &Params) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(params)?;
    let (items, rv) = app.store.list(&req.info.key(), req.namespace.as_deref());
    let after = params
        .get("continue")
        .filter(|c| !c.is_empty())
        .map(|c| decode_continue(c))
        .transpose()?;
    let mut matching: Vec<Value> = items
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
        .filter(|o| after.as_ref().is_none_or(|a| object_id(o) > *a))
        .collect();
    let limit = params
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let mut list_meta = json!({ "resourceVersion": rv.to_string() });
    if let Some(limit) = limit
        && matching.len() > limit
    {
        let remaining = matching.len() - limit;
        matching.truncate(limit);
        if let Some(last) = matching.last() {
            list_meta["continue"] = json!(encode_continue(&object_id(last)));
            list_meta["remainingItemCount"] = json!(remaining);
        }
    }
    let items: Vec<Value> = matching.into_iter().map(|o| stamp(req, o)).collect();
    Ok(json_body(&json!({
        "kind": format!("{}List", req.info.kind),
        "apiVersion": req.info.api_version(&req.version),
        "metadata": list_meta,
        "items": items,
    })))
}

fn object_id(obj: &Value) -> (String, String) {
    (
        meta::namespace(obj).unwrap_or("").to_string(),
        meta::name(obj).unwrap_or("").to_string(),
    )
}

fn encode_continue(id: &(String, String)) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}/{}", id.0, id.1))
}

fn decode_continue(token: &str) -> Result<(String, String), ApiError> {
    let invalid = || ApiError::BadRequest("continue key is not valid".into());
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (ns, name) = text.split_once('/').ok_or_else(invalid)?;
    Ok((ns.to_string(), name.to_string()))
}

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

fn create(
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
    let obj = stamp(req, obj);
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

fn update(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let mut obj = body::decode_object(headers, bytes)?;
    place_in_namespace(req, &mut obj)?;
    let status_only = req.sub.as_deref() == Some("status");
    let updated = app.store.update(
        &req.info,
        ns_of(req),
        name_of(req),
        obj,
        status_only,
        dry_run(params),
    )?;
    Ok(respond(req, StatusCode::OK, updated))
}

fn patch(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let kind = PatchKind::from_content_type(&body::content_type(headers))?;
    let apply = kind == PatchKind::Apply;
    let status_only = req.sub.as_deref() == Some("status");
    let mut created = false;
    let result = app.store.modify(
        &req.info,
        ns_of(req),
        name_of(req),
        status_only,
        dry_run(params),
        apply,
        |current| match current {
            Some(current) => {
                let mut out = patch::apply_patch(kind, current, bytes)?;
                if apply {
                    meta::remove_meta(&mut out, "managedFields");
                }
                Ok(out)
            }
            None => {
                created = true;
                let mut obj = body::parse_yaml_or_json(bytes)?;
                meta::remove_meta(&mut obj, "managedFields");
                Ok(stamp(req, obj))
            }
        },
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

fn delete(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let opts = delete_options(params, headers, bytes);
    let (ns, name) = (ns_of(req), name_of(req));
    let deleted = app.store.delete(&req.info, ns, name, &opts)?;
    let still_there = app.store.get(&req.info.key(), ns, name).is_some();
    if still_there || opts.dry_run {
        return Ok(respond(req, StatusCode::OK, deleted));
    }
    let mut status = success_status();
    status["details"] = json!({
        "name": name,
        "group": req.info.group,
        "kind": req.info.plural,
        "uid": meta::uid(&deleted),
    });
    Ok(json_body(&status))
}

fn delete_collection(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let opts = delete_options(params, headers, bytes);
    let (labels, fields) = selectors(params)?;
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

/// `/emulator/...` admin paths: `drop-watches` and `fail?count=N&code=C`.
fn admin(app: &App, rest: &str, uri: &Uri) -> Response {
    let params: Params = Query::try_from_uri(uri).map(|q| q.0).unwrap_or_default();
    match rest {
        "drop-watches" => {
            app.faults.drop_watches();
            json_body(&success_status())
        }
        "fail" => {
            let count = params
                .get("count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let code = params
                .get("code")
                .and_then(|c| c.parse().ok())
                .unwrap_or(500);
            app.faults.fail_next(count, code);
            json_body(&success_status())
        }
        _ => not_found_path().into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn paths_resolve_namespaced_cluster_and_status_forms() {
        let reg = Registry::new(std::iter::empty());
        let r = resolve(&reg, "", "v1", &["namespaces", "ns1", "configmaps", "cm"]).unwrap();
        assert_eq!(
            (r.namespace.as_deref(), r.name.as_deref()),
            (Some("ns1"), Some("cm"))
        );
        let r = resolve(&reg, "", "v1", &["namespaces", "ns1", "status"]).unwrap();
        assert_eq!(
            (r.info.plural.as_str(), r.name.as_deref(), r.sub.as_deref()),
            ("namespaces", Some("ns1"), Some("status"))
        );
        let r = resolve(&reg, "", "v1", &["watch", "pods"]).unwrap();
        assert!(r.legacy_watch && r.namespace.is_none());
        assert!(resolve(&reg, "", "v1", &["configmaps", "x"]).is_err());
        assert!(resolve(&reg, "", "v1", &["nothing"]).is_err());
    }

    #[test]
    fn continue_tokens_round_trip() {
        let id = ("ns".to_string(), "name".to_string());
        assert_eq!(decode_continue(&encode_continue(&id)).unwrap(), id);
        assert!(decode_continue("!!").is_err());
    }
}
