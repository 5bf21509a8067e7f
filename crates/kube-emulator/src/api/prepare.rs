//! The last steps of a write before the store, in the API server's order: decode-time defaults,
//! the CRD's structural schema (prune, default, validate), the checks of `validate.rs`, and the
//! writer's entry in `managedFields`.

use axum::http::{HeaderMap, header};
use serde_json::Value;

use super::{Params, ResourceRequest, validate};
use crate::defaults;
use crate::managed::{self, Writer};
use crate::meta;
use crate::schema;
use crate::status::ApiError;

/// The manager a request writes as (`Apply` or `Update`).
pub fn writer(
    req: &ResourceRequest,
    params: &Params,
    headers: &HeaderMap,
    operation: &'static str,
) -> Writer {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let field_manager = params.get("fieldManager").map(String::as_str);
    Writer {
        manager: managed::manager_name(field_manager, agent),
        operation,
        api_version: req.info.api_version(&req.version),
        subresource: req.sub.clone().filter(|s| s == "status"),
    }
}

/// A new object as it will be stored.
pub fn create(req: &ResourceRequest, writer: &Writer, mut obj: Value) -> Result<Value, ApiError> {
    validate::check_metadata_types(&req.info, &obj)?;
    validate::check_create(&req.info, &obj)?;
    defaults::on_decode(&req.info, &mut obj);
    schema::admit(&req.info, &req.version, &mut obj)?;
    managed::record_update(&req.info, None, &mut obj, writer);
    Ok(obj)
}

/// `current` replaced (`replace`: a PUT) or patched into `new`, as it will be stored.
pub fn update(
    req: &ResourceRequest,
    writer: &Writer,
    current: &Value,
    mut new: Value,
    replace: bool,
) -> Result<Value, ApiError> {
    validate::check_metadata_types(&req.info, &new)?;
    defaults::on_decode(&req.info, &mut new);
    schema::admit(&req.info, &req.version, &mut new)?;
    validate::check_finalizers(&req.info, current, &new)?;
    if replace {
        validate::check_version(&req.info, meta::name(current).unwrap_or_default(), &new)?;
    }
    managed::record_update(&req.info, Some(current), &mut new, writer);
    Ok(new)
}

/// A replacement of an object's status (the store keeps all else, `managedFields` included).
pub fn status(req: &ResourceRequest, name: &str, mut new: Value) -> Result<Value, ApiError> {
    schema::admit(&req.info, &req.version, &mut new)?;
    validate::check_version(&req.info, name, &new)?;
    Ok(new)
}

/// The result of a server-side apply (its `managedFields` already recorded) as it will be stored.
pub fn applied(
    req: &ResourceRequest,
    current: Option<&Value>,
    mut new: Value,
) -> Result<Value, ApiError> {
    validate::check_metadata_types(&req.info, &new)?;
    if current.is_none() {
        validate::check_create(&req.info, &new)?;
    }
    defaults::on_decode(&req.info, &mut new);
    schema::admit(&req.info, &req.version, &mut new)?;
    if let Some(current) = current {
        validate::check_finalizers(&req.info, current, &new)?;
    }
    Ok(new)
}
