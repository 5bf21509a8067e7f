//! Read verbs: get and list (selectors, paging with continue tokens).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Params, ResourceRequest, name_of, ns_of, respond, selectors, stamp};
use crate::app::App;
use crate::meta;
use crate::status::{ApiError, json_body};
use crate::store::{Cursor, Page, PageRequest};
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

pub(super) fn list(
    app: &App,
    req: &ResourceRequest,
    params: &Params,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(&req.info, params)?;
    let from = params
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
    app.faults.count_list(from.is_none(), limit.is_some());
    let page_request = PageRequest {
        ns: req.namespace.as_deref(),
        from: from.as_ref(),
        limit,
        count_rest: labels.is_empty() && fields.is_empty(),
    };
    let page = app.store.list_page(&req.info.key(), &page_request, |o| {
        labels.matches(o) && fields.matches(o)
    })?;
    let list_meta = list_meta(&page, req.info.is_custom());
    let items: Vec<Value> = page.items.into_iter().map(|o| stamp(req, o)).collect();
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

/// A list's `metadata`: its resourceVersion, and the `continue` token and (for a list without
/// selectors) `remainingItemCount` when more objects follow; a custom resource list (its type
/// is unstructured on the server) keeps an empty `continue` on its last page.
fn list_meta(page: &Page, custom: bool) -> Value {
    let mut list_meta = json!({ "resourceVersion": page.rv.to_string() });
    if let Some(next) = &page.next {
        list_meta["continue"] = json!(encode_continue(next));
        if let Some(remaining) = next.remaining {
            list_meta["remainingItemCount"] = json!(remaining);
        }
    } else if custom {
        list_meta["continue"] = json!("");
    }
    list_meta
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

/// A `continue` token as it travels: JSON in URL-safe base64, like kube-apiserver's (which
/// holds `v`, `rv` and `start`); `remaining` is the emulator's, so counting stays O(1) a page.
#[derive(Serialize, Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    start: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remaining: Option<usize>,
}

const CONTINUE_VERSION: &str = "meta.k8s.io/v1";

fn encode_continue(cursor: &Cursor) -> String {
    let token = ContinueToken {
        v: CONTINUE_VERSION.into(),
        rv: cursor.rv,
        start: format!("{}/{}", cursor.after.0, cursor.after.1),
        remaining: cursor.remaining,
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

fn decode_continue(text: &str) -> Result<Cursor, ApiError> {
    let invalid = || ApiError::BadRequest("continue key is not valid".into());
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
    let token: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if token.v != CONTINUE_VERSION {
        return Err(invalid());
    }
    let (ns, name) = token.start.split_once('/').ok_or_else(invalid)?;
    Ok(Cursor {
        rv: token.rv,
        after: (ns.to_string(), name.to_string()),
        remaining: token.remaining,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        for remaining in [Some(3), None] {
            let cursor = Cursor {
                rv: 42,
                after: ("ns".to_string(), "name".to_string()),
                remaining,
            };
            assert_eq!(decode_continue(&encode_continue(&cursor)).unwrap(), cursor);
        }
        assert!(decode_continue("!!").is_err());
        assert!(decode_continue(&URL_SAFE_NO_PAD.encode("ns/name")).is_err());
    }
}
