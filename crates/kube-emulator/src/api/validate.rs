//! What the API server refuses before anything is stored: malformed object names, a create with
//! neither name nor `generateName`, labels that are not strings, new finalizers on an object
//! being deleted, a custom resource replaced without a `resourceVersion`, a strategic merge patch
//! of a custom resource, an apply without a field manager.

use serde_json::Value;

use super::Params;
use crate::meta;
use crate::patch::PatchKind;
use crate::resources::ResourceInfo;
use crate::status::{ApiError, Cause};

/// Where objects embed an object's metadata: the object itself and its pod or job templates.
const EMBEDDED_METADATA: &[&str] = &[
    "",
    "/spec/template",
    "/template",
    "/spec/jobTemplate",
    "/spec/jobTemplate/spec/template",
];

/// `400 BadRequest` when `labels` or `annotations` (of the object or of a template in it) hold
/// anything but strings: the API server cannot decode such an object.
pub fn check_metadata_types(info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let fields = EMBEDDED_METADATA
        .iter()
        .flat_map(|at| ["labels", "annotations"].map(|f| format!("{at}/metadata/{f}")));
    for pointer in fields {
        let Some(map) = obj.pointer(&pointer) else {
            continue;
        };
        let field = pointer.trim_start_matches('/').replace('/', ".");
        let strings = match map {
            Value::Object(m) => m.values().all(Value::is_string),
            other => other.is_null(),
        };
        if !strings {
            return Err(ApiError::BadRequest(format!(
                "{} in version \"{}\" cannot be handled as a {}: json: cannot unmarshal a \
                 non-string into Go struct field ObjectMeta.{field} of type string",
                info.kind,
                info.versions
                    .first()
                    .map(String::as_str)
                    .unwrap_or_default(),
                info.kind
            )));
        }
    }
    Ok(())
}

/// `422 Invalid` for the object `name` of `info`'s kind.
pub fn invalid(info: &ResourceInfo, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::InvalidFields {
        group: info.group.clone(),
        kind: info.kind.clone(),
        name: name.to_string(),
        causes,
    }
}

/// A new object's name (or `generateName`) as its kind requires it.
pub fn check_create(info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let (name, generated) = match (meta::name(obj), meta::meta_str(obj, "generateName")) {
        (Some(name), _) => (name.to_string(), false),
        // the generated suffix is alphanumeric: the prefix decides
        (None, Some(prefix)) => (format!("{prefix}a"), true),
        (None, None) => {
            let cause = Cause::new(
                "FieldValueRequired",
                "metadata.name",
                "Required value: name or generateName is required",
            );
            return Err(invalid(info, "", vec![cause]));
        }
    };
    match name_problem(info, &name) {
        Some(problem) => {
            let (field, shown) = if generated {
                ("metadata.generateName", name.trim_end_matches('a'))
            } else {
                ("metadata.name", name.as_str())
            };
            let message = format!("Invalid value: \"{shown}\": {problem}");
            let cause = Cause::new("FieldValueInvalid", field, message);
            Err(invalid(
                info,
                if generated { "" } else { &name },
                vec![cause],
            ))
        }
        None => Ok(()),
    }
}

/// What is wrong with `name` for `info`'s kind, if anything.
fn name_problem(info: &ResourceInfo, name: &str) -> Option<String> {
    match (info.group.as_str(), info.plural.as_str()) {
        ("rbac.authorization.k8s.io", _) => path_segment_problem(name),
        ("", "namespaces") => label_problem(name, false),
        ("", "services") => label_problem(name, true),
        _ => subdomain_problem(name),
    }
}

fn path_segment_problem(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    name.contains(['/', '%'])
        .then(|| "may not contain '/' or '%'".to_string())
}

fn is_label(part: &str) -> bool {
    let bytes = part.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'-')
}

fn subdomain_problem(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    (!name.split('.').all(is_label)).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
         '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex \
         used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            .into()
    })
}

/// An RFC 1123 label, or (`dns1035`) one that starts with a letter.
fn label_problem(name: &str, dns1035: bool) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    let starts_alpha = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase());
    if !is_label(name) || (dns1035 && !starts_alpha) {
        return Some(if dns1035 {
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with \
             an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or \
             'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .into()
        } else {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
             and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
             regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .into()
        });
    }
    None
}

/// A write turning `current` into `new`: no finalizer may be added once deletion started.
pub fn check_finalizers(info: &ResourceInfo, current: &Value, new: &Value) -> Result<(), ApiError> {
    if !meta::is_deleting(current) {
        return Ok(());
    }
    let old = meta::finalizers(current);
    let added: Vec<String> = meta::finalizers(new)
        .into_iter()
        .filter(|f| !old.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let message = format!(
        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
    );
    let cause = Cause::new("FieldValueForbidden", "metadata.finalizers", message);
    Err(invalid(
        info,
        meta::name(current).unwrap_or_default(),
        vec![cause],
    ))
}

/// A replacement (PUT) of a custom resource must name the version it replaces.
pub fn check_version(info: &ResourceInfo, name: &str, new: &Value) -> Result<(), ApiError> {
    if !info.is_custom() || meta::meta_str(new, "resourceVersion").is_some() {
        return Ok(());
    }
    let message = "Invalid value: 0x0: must be specified for an update";
    let cause = Cause::new("FieldValueInvalid", "metadata.resourceVersion", message);
    Err(invalid(info, name, vec![cause]))
}

/// A patch the API server accepts for `info`'s kind: no strategic merge patch of a custom
/// resource (`415`), no apply without a `fieldManager` (`422`).
pub fn check_patch(info: &ResourceInfo, kind: PatchKind, params: &Params) -> Result<(), ApiError> {
    if kind == PatchKind::Strategic && info.is_custom() {
        return Err(ApiError::UnsupportedMediaType(
            "strategic merge patch is not supported for custom resources; use \
             application/merge-patch+json, application/json-patch+json or \
             application/apply-patch+yaml"
                .into(),
        ));
    }
    let has_manager = params.get("fieldManager").is_some_and(|m| !m.is_empty());
    if kind != PatchKind::Apply || has_manager {
        return Ok(());
    }
    Err(ApiError::InvalidFields {
        group: "meta.k8s.io".into(),
        kind: "PatchOptions".into(),
        name: String::new(),
        causes: vec![Cause::new(
            "FieldValueRequired",
            "fieldManager",
            "Required value: is required for apply patch",
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    fn info(group: &str, plural: &str) -> ResourceInfo {
        let reg = Registry::new(std::iter::empty());
        reg.find(group, "v1", plural).unwrap().clone()
    }

    #[test]
    fn names_follow_the_rules_of_their_kind() {
        let cm = info("", "configmaps");
        assert!(check_create(&cm, &json!({"metadata": {"name": "a.b-c"}})).is_ok());
        let err = check_create(&cm, &json!({"metadata": {"name": "Not_A_Name"}})).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.to_status()["details"]["causes"][0]["field"],
            "metadata.name"
        );
        assert!(
            check_create(
                &info("", "namespaces"),
                &json!({"metadata": {"name": "a.b"}})
            )
            .is_err()
        );
        assert!(
            check_create(
                &info("", "services"),
                &json!({"metadata": {"name": "1abc"}})
            )
            .is_err()
        );
        let role = info("rbac.authorization.k8s.io", "clusterroles");
        assert!(check_create(&role, &json!({"metadata": {"name": "system:x"}})).is_ok());
        assert!(check_create(&cm, &json!({"metadata": {"generateName": "gen-"}})).is_ok());
        let deploy = info("apps", "deployments");
        let bool_label = json!({"spec": {"template": {"metadata": {"labels": {"app": true}}}}});
        assert_eq!(
            check_metadata_types(&deploy, &bool_label)
                .unwrap_err()
                .code(),
            400
        );
        let missing = check_create(&cm, &json!({"metadata": {}})).unwrap_err();
        assert_eq!(
            missing.to_status()["details"]["causes"][0]["reason"],
            "FieldValueRequired"
        );
    }

    #[test]
    fn no_finalizer_is_added_to_an_object_being_deleted() {
        let cm = info("", "configmaps");
        let current =
            json!({"metadata": {"name": "c", "deletionTimestamp": "t", "finalizers": ["a"]}});
        let same = json!({"metadata": {"name": "c", "finalizers": ["a"]}});
        let more = json!({"metadata": {"name": "c", "finalizers": ["a", "b"]}});
        assert!(check_finalizers(&cm, &current, &same).is_ok());
        assert!(check_finalizers(&cm, &current, &more).is_err());
    }
}
