//! Protobuf conversions of apimachinery types: ObjectMeta, selectors, IntOrString, quantities.

use std::collections::BTreeMap;

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use super::{Obj, consumed};
use crate::clock;
use crate::status::ApiError;

/// `metadata`; server-owned fields (managedFields, generation, selfLink) are dropped.
pub fn object_meta(m: Option<pb::ObjectMeta>) -> Option<Value> {
    let m = m?;
    let time = |t: Option<pb::Time>| {
        t.and_then(|t| t.seconds)
            .filter(|s| *s > 0)
            .map(|s| clock::format_rfc3339(s.unsigned_abs()))
    };
    let owners: Vec<Value> = m
        .owner_references
        .into_iter()
        .map(owner_reference)
        .collect();
    Some(
        Obj::new()
            .text("name", m.name)
            .text("generateName", m.generate_name)
            .text("namespace", m.namespace)
            .text("uid", m.uid)
            .text("resourceVersion", m.resource_version)
            .opt("creationTimestamp", time(m.creation_timestamp))
            .opt("deletionTimestamp", time(m.deletion_timestamp))
            .map("labels", m.labels)
            .map("annotations", m.annotations)
            .vec("finalizers", m.finalizers)
            .vec("ownerReferences", owners)
            .build(),
    )
}

fn owner_reference(r: pb::OwnerReference) -> Value {
    Obj::new()
        .text("apiVersion", r.api_version)
        .text("kind", r.kind)
        .text("name", r.name)
        .opt("uid", r.uid)
        .opt("controller", r.controller)
        .opt("blockOwnerDeletion", r.block_owner_deletion)
        .build()
}

/// A label selector.
pub fn label_selector(s: Option<pb::LabelSelector>) -> Result<Option<Value>, ApiError> {
    let Some(mut s) = s else { return Ok(None) };
    let expressions: Vec<Value> = std::mem::take(&mut s.match_expressions)
        .into_iter()
        .map(|e| {
            Obj::new()
                .text("key", e.key)
                .text("operator", e.operator)
                .vec("values", e.values)
                .build()
        })
        .collect();
    let out = Obj::new()
        .map("matchLabels", std::mem::take(&mut s.match_labels))
        .vec("matchExpressions", expressions);
    consumed("LabelSelector", &s)?;
    Ok(Some(out.build()))
}

/// An int-or-string (`type` 0 is an int, 1 a string).
pub fn int_or_string(v: Option<IntOrString>) -> Option<Value> {
    let v = v?;
    Some(match v.r#type {
        Some(1) => json!(v.str_val.unwrap_or_default()),
        _ => json!(v.int_val.unwrap_or_default()),
    })
}

/// A map of resource quantities (`cpu: 100m`).
pub fn quantities(map: BTreeMap<String, Quantity>) -> BTreeMap<String, String> {
    map.into_iter()
        .map(|(k, q)| (k, q.string.unwrap_or_default()))
        .collect()
}

/// DeleteOptions (propagation, dry run, preconditions).
pub fn delete_options(opts: pb::DeleteOptions) -> Result<Value, ApiError> {
    let pre = opts.preconditions.map(|p| {
        Obj::new()
            .opt("uid", p.uid)
            .opt("resourceVersion", p.resource_version)
            .build()
    });
    Ok(Obj::new()
        .opt("propagationPolicy", opts.propagation_policy)
        .opt("orphanDependents", opts.orphan_dependents)
        .opt("gracePeriodSeconds", opts.grace_period_seconds)
        .vec("dryRun", opts.dry_run)
        .val("preconditions", pre)
        .build())
}
