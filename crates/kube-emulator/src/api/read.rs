//! Read verbs: get and list (selectors, paging with continue tokens).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::{Params, ResourceRequest, name_of, ns_of, respond, stamp};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::App;
use crate::status::{ApiError, json_body};
use crate::table::{self, View};

pub(super) fn get(app: &App, req: &ResourceRequest) -> Result<Response, ApiError> {
    let obj = app
        .store
        .get(&req.info.key(), ns_of(req), name_of(req))
        .ok_or_else(|| ApiError::not_found(req.info.qualified(), name_of(req)))?;
    match req.view {
        View::Table(include) => {
            let rv = json!({ "resourceVersion": meta::meta_str(&obj, "resourceVersion") });
            Ok(table_body(&table::table(
                &req.info,
                &[stamp(req, obj)],
                rv,
                include,
            )))
        }
        View::Metadata => Ok(json_body(&table::partial(&stamp(req, obj)))),
        View::Object => Ok(respond(req, StatusCode::OK, obj)),
    }
}

/// A Table answer with its content type.
fn table_body(table: &Value) -> Response {
    let mut response = json_body(table);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(table::TABLE_CONTENT_TYPE),
    );
    response
}

/// Parsed `labelSelector` and `fieldSelector` (on the fields `info`'s kind can be selected by).
pub fn selectors(
    info: &ResourceInfo,
    params: &Params,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
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
    fields.check_supported(info)?;
    Ok((labels, fields))
}

pub(super) fn list(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(&req.info, params)?;
    let after = params
        .get("continue")
        .filter(|c| !c.is_empty())
        .map(|c| decode_continue(c))
        .transpose()?;
    // resourceVersion=0 (any version) is served whole, as kube-apiserver serves it from its
    // watch cache
    let any_version = params.get("resourceVersion").is_some_and(|rv| rv == "0");
    let limit = params
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0 && !any_version);
    app.faults.count_list(after.is_none(), limit.is_some());
    let (matching, remaining, rv) = app.store.list_page(
        &req.info.key(),
        req.namespace.as_deref(),
        after.as_ref(),
        limit,
        |o| labels.matches(o) && fields.matches(o),
    );
    let mut list_meta = json!({ "resourceVersion": rv.to_string() });
    if remaining > 0
        && let Some(last) = matching.last()
    {
        list_meta["continue"] = json!(encode_continue(&object_id(last)));
        list_meta["remainingItemCount"] = json!(remaining);
    } else if req.info.is_custom() {
        // custom resource lists are unstructured: their empty continue token is kept
        list_meta = json!({ "continue": "", "resourceVersion": rv.to_string() });
    }
    let items: Vec<Value> = matching.into_iter().map(|o| stamp(req, o)).collect();
    match req.view {
        View::Table(include) => {
            return Ok(table_body(&table::table(
                &req.info, &items, list_meta, include,
            )));
        }
        View::Metadata => {
            let partial: Vec<Value> = items.iter().map(table::partial).collect();
            return Ok(json_body(&json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": list_meta,
                "items": partial,
            })));
        }
        View::Object => {}
    }
    // items of built-in lists are typed: the list names their kind, they do not
    let items: Vec<Value> = if req.info.is_custom() {
        items
    } else {
        items.into_iter().map(without_type).collect()
    };
    Ok(json_body(&json!({
        "kind": format!("{}List", req.info.kind),
        "apiVersion": req.info.api_version(&req.version),
        "metadata": list_meta,
        "items": items,
    })))
}

fn without_type(mut obj: Value) -> Value {
    if let Some(map) = obj.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    obj
}

pub(super) fn object_id(obj: &Value) -> (String, String) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let id = ("ns".to_string(), "name".to_string());
        assert_eq!(decode_continue(&encode_continue(&id)).unwrap(), id);
        assert!(decode_continue("!!").is_err());
    }
}
