//! The HTTP entry point: path routing to discovery, resource verbs, watches and admin paths.

mod converted;
mod prepare;
mod read;
mod scale;
mod validate;
mod write;

pub(crate) use crate::request::{Params, ResourceRequest, selectors, stamp};

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::app::App;
use crate::discovery;
use crate::status::{ApiError, json_body, success_status};
use crate::table;
use crate::watch;

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
    let (headers, bytes) = match admitted(&app, &method, &path, &params, headers, bytes).await {
        Ok(admitted) => admitted,
        Err(e) => {
            tracing::debug!(%method, %path, code = e.code(), error = %e, "request not admitted");
            return e.into_response();
        }
    };
    let result = match converting(&app, &path, &params) {
        Some(target) => {
            converted::serve(&app, &target, &method, &path, &params, &headers, &bytes).await
        }
        None => route(&app, &method, &path, &params, &headers, &bytes),
    };
    match result {
        Ok(response) => {
            tracing::trace!(%method, %path, code = response.status().as_u16(), "request");
            response
        }
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

/// A request (not a watch: its stream converts each event) in a version its CRD converts by webhook.
fn converting(
    app: &App,
    path: &str,
    params: &Params,
) -> Option<(ResourceRequest, crate::conversion::Conversion)> {
    let req = resource_of(app, path)?;
    let watching =
        req.legacy_watch || matches!(params.get("watch").map(String::as_str), Some("true" | "1"));
    if watching {
        return None;
    }
    let conversion = crate::conversion::for_request(app, &req)?;
    Some((req, conversion))
}

/// The resource a path names, for the admission chain (`None`: not a resource path).
fn resource_of(app: &App, path: &str) -> Option<ResourceRequest> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let registry = app.store.registry();
    match segs.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => {
            resolve(&registry, "", version, rest).ok()
        }
        ["apis", group, version, rest @ ..] if !rest.is_empty() => {
            resolve(&registry, group, version, rest).ok()
        }
        _ => None,
    }
}

/// A create (POST) or update (PUT) after the admission chain: the body as the mutating webhooks
/// left it (JSON), or the request's own when nothing changed.
async fn admitted(
    app: &App,
    method: &Method,
    path: &str,
    params: &Params,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<(HeaderMap, Bytes), ApiError> {
    let operation = match *method {
        Method::POST => "CREATE",
        Method::PUT => "UPDATE",
        _ => return Ok((headers, bytes)),
    };
    let Some(req) = resource_of(app, path) else {
        return Ok((headers, bytes));
    };
    if (operation == "CREATE") == req.name.is_some() || req.sub.is_some() || req.info.create_only {
        return Ok((headers, bytes));
    }
    let Ok(mut object) = crate::body::decode_object(&headers, &bytes) else {
        return Ok((headers, bytes));
    };
    if let (Some(ns), true) = (req.namespace.as_deref(), req.info.namespaced) {
        crate::meta::set_meta(&mut object, "namespace", serde_json::json!(ns));
    }
    let old_object = req
        .name
        .as_deref()
        .and_then(|name| app.store.get(&req.info.key(), ns_of(&req), name));
    let admission = crate::admission::Admission {
        req: &req,
        operation,
        object: object.clone(),
        old_object,
        dry_run: dry_run(params),
    };
    let after = crate::admission::admit(app, admission).await?;
    if after == object {
        return Ok((headers, bytes));
    }
    let body = serde_json::to_vec(&after).map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut headers = headers;
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    Ok((headers, Bytes::from(body)))
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
        .is_some_and(|s| !matches!(s, "status" | "finalize" | "scale" | "log"))
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
        view: table::View::Object,
    })
}

fn serve_resource(
    app: &Arc<App>,
    method: &Method,
    mut req: ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    req.view = table::requested(headers, params.get("includeObject").map(String::as_str));
    let watching =
        req.legacy_watch || matches!(params.get("watch").map(String::as_str), Some("true" | "1"));
    if req.info.create_only && (method != Method::POST || req.name.is_some()) {
        return Err(ApiError::MethodNotAllowed(format!(
            "{} only supports create",
            req.info.qualified()
        )));
    }
    if req.sub.as_deref() == Some("scale") {
        return scale::serve(app, method, &req, params, headers, bytes);
    }
    if req.sub.as_deref() == Some("log") {
        return pod_log(app, method, &req);
    }
    match (method.as_str(), req.name.is_some()) {
        ("GET", false) if watching => watch::serve(app, req, params),
        ("GET", false) => read::list(app, &req, params),
        ("GET", true) if watching => watch_one(app, req, params),
        ("GET", true) => read::get(app, &req),
        ("POST", false) => write::create(app, &req, params, headers, bytes),
        ("PUT", true) => write::update(app, &req, params, headers, bytes),
        ("PATCH", true) => write::patch(app, &req, params, headers, bytes),
        ("DELETE", true) => write::delete(app, &req, params, headers, bytes),
        ("DELETE", false) => write::delete_collection(app, &req, params, headers, bytes),
        _ => Err(ApiError::MethodNotAllowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))),
    }
}

/// `pods/<name>/log`: containers never run here, so every log is empty.
fn pod_log(app: &App, method: &Method, req: &ResourceRequest) -> Result<Response, ApiError> {
    if !req.info.group.is_empty() || req.info.plural != "pods" {
        return Err(ApiError::NoRoute);
    }
    if method != Method::GET {
        return Err(ApiError::MethodNotAllowed(format!(
            "{method} is not allowed on pods/log"
        )));
    }
    let (ns, name) = (ns_of(req), name_of(req));
    app.store
        .get(&req.info.key(), ns, name)
        .ok_or_else(|| ApiError::not_found("pods", name))?;
    Ok(([(axum::http::header::CONTENT_TYPE, "text/plain")], "").into_response())
}

/// The deprecated single-object watch (`.../configmaps/<name>?watch=true`): a collection watch
/// pinned to the name.
fn watch_one(
    app: &Arc<App>,
    mut req: ResourceRequest,
    params: &Params,
) -> Result<Response, ApiError> {
    let mut params = params.clone();
    let pin = format!("metadata.name={}", name_of(&req));
    let fields = match params.get("fieldSelector").filter(|f| !f.is_empty()) {
        Some(existing) => format!("{existing},{pin}"),
        None => pin,
    };
    params.insert("fieldSelector".into(), fields);
    req.name = None;
    watch::serve(app, req, &params)
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

/// `/emulator/...` admin paths: `drop-watches`, `fail?count=N&code=C` and
/// `streaming-lists?refuse=true` or `?ignore=true` (neither: served).
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
        "streaming-lists" => {
            let set = |key: &str| params.get(key).is_some_and(|v| v == "true");
            app.faults.refuse_streaming_lists(set("refuse"));
            app.faults.ignore_streaming_lists(set("ignore"));
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
}
