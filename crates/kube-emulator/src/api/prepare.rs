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

/// One write request: what it writes, who writes it, how strictly it is decoded.
pub struct Write<'a> {
    pub req: &'a ResourceRequest,
    /// The manager it writes as (`Apply` or `Update`).
    pub writer: Writer,
    /// `fieldValidation=Strict`: unknown fields are refused rather than pruned.
    pub strict: bool,
}

impl<'a> Write<'a> {
    /// The write `req` makes with `params` and `headers`, as an `Apply` or `Update` operation.
    pub fn new(
        req: &'a ResourceRequest,
        params: &Params,
        headers: &HeaderMap,
        operation: &'static str,
    ) -> Self {
        let agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        let field_manager = params.get("fieldManager").map(String::as_str);
        let writer = Writer {
            manager: managed::manager_name(field_manager, agent),
            operation,
            api_version: req.info.api_version(&req.version),
            subresource: req.sub.clone().filter(|s| s == "status"),
        };
        let strict = params.get("fieldValidation").map(String::as_str) == Some("Strict");
        Self {
            req,
            writer,
            strict,
        }
    }

    /// Defaults, the schema and the metadata's types, common to every write.
    fn decode(&self, obj: &mut Value) -> Result<(), ApiError> {
        let info = &self.req.info;
        validate::check_metadata_types(info, obj)?;
        defaults::on_decode(info, obj);
        schema::admit(info, &self.req.version, obj, self.strict)
    }

    /// A new object as it will be stored.
    pub fn create(&self, mut obj: Value) -> Result<Value, ApiError> {
        validate::check_create(&self.req.info, &obj)?;
        self.decode(&mut obj)?;
        managed::record_update(&self.req.info, None, &mut obj, &self.writer);
        Ok(obj)
    }

    /// `current` replaced (`replace`: a PUT) or patched into `new`, as it will be stored.
    pub fn update(
        &self,
        current: &Value,
        mut new: Value,
        replace: bool,
    ) -> Result<Value, ApiError> {
        let info = &self.req.info;
        self.decode(&mut new)?;
        validate::check_finalizers(info, current, &new)?;
        if replace {
            validate::check_version(info, meta::name(current).unwrap_or_default(), &new)?;
        }
        managed::record_update(info, Some(current), &mut new, &self.writer);
        Ok(new)
    }

    /// A replacement of an object's status (the store keeps all else, `managedFields` included).
    pub fn status(&self, name: &str, mut new: Value) -> Result<Value, ApiError> {
        self.decode(&mut new)?;
        validate::check_version(&self.req.info, name, &new)?;
        Ok(new)
    }

    /// The result of a server-side apply (its `managedFields` already recorded) as it will be
    /// stored.
    pub fn applied(&self, current: Option<&Value>, mut new: Value) -> Result<Value, ApiError> {
        if current.is_none() {
            validate::check_create(&self.req.info, &new)?;
        }
        self.decode(&mut new)?;
        if let Some(current) = current {
            validate::check_finalizers(&self.req.info, current, &new)?;
        }
        Ok(new)
    }
}
