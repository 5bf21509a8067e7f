//! The structural schemas of custom resources, applied on every write as the API server applies
//! them: unknown fields pruned, defaults filled in, then the object validated.

mod default;
mod prune;
mod validate;

use serde_json::Value;

use crate::meta;
use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// Prunes and defaults `obj`, a custom resource written in `version`, by its CRD's schema for that
/// version; `422 Invalid` naming every field that does not validate. Kinds without a schema pass.
/// `strict` (`fieldValidation=Strict`) refuses unknown fields with `400` instead of pruning them.
pub fn admit(
    info: &ResourceInfo,
    version: &str,
    obj: &mut Value,
    strict: bool,
) -> Result<(), ApiError> {
    let Some(schema) = info.schemas.get(version) else {
        return Ok(());
    };
    let unknown = prune::prune(obj, schema);
    if strict && !unknown.is_empty() {
        let fields: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        return Err(ApiError::BadRequest(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            fields.join(", "),
            kind = info.kind,
        )));
    }
    default::fill(obj, schema);
    let causes = validate::validate(obj, schema);
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::InvalidFields {
        group: info.group.clone(),
        kind: info.kind.clone(),
        name: meta::name(obj).unwrap_or_default().to_string(),
        causes,
    })
}

/// Whether a schema lets unknown fields stay.
fn preserves_unknown(schema: &Value) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

/// The schema of a member of an object: its property, else `additionalProperties`.
fn member_schema<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    if let Some(property) = schema.pointer(&format!("/properties/{}", escape(key))) {
        return Some(property);
    }
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// A JSON-pointer step.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
