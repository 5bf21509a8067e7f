//! Protobuf conversions of RBAC kinds: Role, ClusterRole, RoleBinding, ClusterRoleBinding.

use k8s_pb::api::rbac::v1 as pb;
use serde_json::Value;

use super::meta::object_meta;
use super::{Obj, consumed};
use crate::status::ApiError;

fn rule(r: pb::PolicyRule) -> Value {
    Obj::new()
        .vec("verbs", r.verbs)
        .vec("apiGroups", r.api_groups)
        .vec("resources", r.resources)
        .vec("resourceNames", r.resource_names)
        .vec("nonResourceURLs", r.non_resource_ur_ls)
        .build()
}

fn subject(s: pb::Subject) -> Value {
    Obj::new()
        .text("kind", s.kind)
        .text("apiGroup", s.api_group)
        .text("name", s.name)
        .text("namespace", s.namespace)
        .build()
}

fn role_ref(r: Option<pb::RoleRef>) -> Option<Value> {
    r.map(|r| {
        Obj::new()
            .text("apiGroup", r.api_group)
            .text("kind", r.kind)
            .text("name", r.name)
            .build()
    })
}

/// A Role.
pub fn role(r: pb::Role) -> Result<Value, ApiError> {
    let rules: Vec<Value> = r.rules.into_iter().map(rule).collect();
    Ok(Obj::new()
        .val("metadata", object_meta(r.metadata))
        .vec("rules", rules)
        .build())
}

/// A ClusterRole (aggregation rules are not supported).
pub fn cluster_role(mut r: pb::ClusterRole) -> Result<Value, ApiError> {
    let metadata = object_meta(r.metadata.take());
    let rules: Vec<Value> = std::mem::take(&mut r.rules).into_iter().map(rule).collect();
    consumed("ClusterRole", &r)?;
    Ok(Obj::new()
        .val("metadata", metadata)
        .vec("rules", rules)
        .build())
}

/// A RoleBinding.
pub fn role_binding(b: pb::RoleBinding) -> Result<Value, ApiError> {
    let subjects: Vec<Value> = b.subjects.into_iter().map(subject).collect();
    Ok(Obj::new()
        .val("metadata", object_meta(b.metadata))
        .vec("subjects", subjects)
        .val("roleRef", role_ref(b.role_ref))
        .build())
}

/// A ClusterRoleBinding.
pub fn cluster_role_binding(b: pb::ClusterRoleBinding) -> Result<Value, ApiError> {
    let subjects: Vec<Value> = b.subjects.into_iter().map(subject).collect();
    Ok(Obj::new()
        .val("metadata", object_meta(b.metadata))
        .vec("subjects", subjects)
        .val("roleRef", role_ref(b.role_ref))
        .build())
}
