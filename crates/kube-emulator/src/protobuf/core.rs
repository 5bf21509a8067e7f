//! Protobuf conversions of core/v1 kinds: ConfigMap, Secret, Namespace, ServiceAccount, Service
//! and the pod template the workload kinds embed.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_pb::api::core::v1 as pb;
use serde_json::{Value, json};

use super::meta::{int_or_string, object_meta, quantities};
use super::{Obj, consumed};
use crate::status::ApiError;

fn base64_map(data: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, String> {
    data.into_iter()
        .map(|(k, v)| (k, STANDARD.encode(v)))
        .collect()
}

/// A ConfigMap.
pub fn config_map(cm: pb::ConfigMap) -> Result<Value, ApiError> {
    Ok(Obj::new()
        .val("metadata", object_meta(cm.metadata))
        .map("data", cm.data)
        .map("binaryData", base64_map(cm.binary_data))
        .opt("immutable", cm.immutable)
        .build())
}

/// A Secret (`data` as base64 strings).
pub fn secret(s: pb::Secret) -> Result<Value, ApiError> {
    Ok(Obj::new()
        .val("metadata", object_meta(s.metadata))
        .map("data", base64_map(s.data))
        .map("stringData", s.string_data)
        .text("type", s.r#type)
        .opt("immutable", s.immutable)
        .build())
}

/// A Namespace (status is the server's).
pub fn namespace(ns: pb::Namespace) -> Result<Value, ApiError> {
    let finalizers = ns.spec.map(|s| s.finalizers).unwrap_or_default();
    let spec = (!finalizers.is_empty()).then(|| json!({ "finalizers": finalizers }));
    Ok(Obj::new()
        .val("metadata", object_meta(ns.metadata))
        .val("spec", spec)
        .build())
}

/// A ServiceAccount.
pub fn service_account(mut sa: pb::ServiceAccount) -> Result<Value, ApiError> {
    let metadata = object_meta(sa.metadata.take());
    let pull: Vec<Value> = std::mem::take(&mut sa.image_pull_secrets)
        .into_iter()
        .map(|r| json!({ "name": r.name }))
        .collect();
    let automount = sa.automount_service_account_token.take();
    consumed("ServiceAccount", &sa)?;
    Ok(Obj::new()
        .val("metadata", metadata)
        .vec("imagePullSecrets", pull)
        .opt("automountServiceAccountToken", automount)
        .build())
}

/// A Service (status is the server's).
pub fn service(svc: pb::Service) -> Result<Value, ApiError> {
    let spec = svc.spec.map(service_spec).transpose()?;
    Ok(Obj::new()
        .val("metadata", object_meta(svc.metadata))
        .val("spec", spec)
        .build())
}

fn service_spec(mut s: pb::ServiceSpec) -> Result<Value, ApiError> {
    let ports: Vec<Value> = std::mem::take(&mut s.ports)
        .into_iter()
        .map(|p| {
            Obj::new()
                .text("name", p.name)
                .text("protocol", p.protocol)
                .text("appProtocol", p.app_protocol)
                .opt("port", p.port)
                .val("targetPort", int_or_string(p.target_port))
                .count("nodePort", p.node_port)
                .build()
        })
        .collect();
    let out = Obj::new()
        .vec("ports", ports)
        .map("selector", std::mem::take(&mut s.selector))
        .opt("clusterIP", s.cluster_ip.take().filter(|ip| !ip.is_empty()))
        .vec("clusterIPs", std::mem::take(&mut s.cluster_ips))
        .text("type", s.r#type.take())
        .vec("externalIPs", std::mem::take(&mut s.external_ips))
        .text("sessionAffinity", s.session_affinity.take())
        .text("loadBalancerIP", s.load_balancer_ip.take())
        .count("healthCheckNodePort", s.health_check_node_port.take())
        .text("externalName", s.external_name.take())
        .text("externalTrafficPolicy", s.external_traffic_policy.take())
        .flag(
            "publishNotReadyAddresses",
            s.publish_not_ready_addresses.take(),
        )
        .vec("ipFamilies", std::mem::take(&mut s.ip_families))
        .text("ipFamilyPolicy", s.ip_family_policy.take())
        .text("internalTrafficPolicy", s.internal_traffic_policy.take());
    consumed("ServiceSpec", &s)?;
    Ok(out.build())
}

/// A pod template (`metadata` + `spec`).
pub fn pod_template(t: Option<pb::PodTemplateSpec>) -> Result<Option<Value>, ApiError> {
    let Some(t) = t else { return Ok(None) };
    let metadata = object_meta(t.metadata);
    let spec = t.spec.map(pod_spec).transpose()?;
    Ok(Some(
        Obj::new()
            .val("metadata", metadata)
            .val("spec", spec)
            .build(),
    ))
}

fn pod_spec(mut s: pb::PodSpec) -> Result<Value, ApiError> {
    let containers = take_containers(&mut s.containers)?;
    let init = take_containers(&mut s.init_containers)?;
    let pull: Vec<Value> = std::mem::take(&mut s.image_pull_secrets)
        .into_iter()
        .map(|r| json!({ "name": r.name }))
        .collect();
    let out = Obj::new()
        .vec("initContainers", init)
        .vec("containers", containers)
        .text("restartPolicy", s.restart_policy.take())
        .opt(
            "terminationGracePeriodSeconds",
            s.termination_grace_period_seconds.take(),
        )
        .opt("activeDeadlineSeconds", s.active_deadline_seconds.take())
        .text("dnsPolicy", s.dns_policy.take())
        .map("nodeSelector", std::mem::take(&mut s.node_selector))
        .text("serviceAccountName", s.service_account_name.take())
        .opt(
            "automountServiceAccountToken",
            s.automount_service_account_token.take(),
        )
        .vec("imagePullSecrets", pull)
        .text("hostname", s.hostname.take())
        .text("subdomain", s.subdomain.take())
        .text("schedulerName", s.scheduler_name.take())
        .text("serviceAccount", s.service_account.take())
        .text("nodeName", s.node_name.take())
        .flag("hostNetwork", s.host_network.take())
        .flag("hostPID", s.host_pid.take())
        .flag("hostIPC", s.host_ipc.take())
        .text("priorityClassName", s.priority_class_name.take())
        .opt("enableServiceLinks", s.enable_service_links.take());
    consumed("PodSpec", &s)?;
    Ok(out.build())
}

fn take_containers(list: &mut Vec<pb::Container>) -> Result<Vec<Value>, ApiError> {
    std::mem::take(list).into_iter().map(container).collect()
}

fn container(mut c: pb::Container) -> Result<Value, ApiError> {
    let ports: Vec<Value> = std::mem::take(&mut c.ports)
        .into_iter()
        .map(|p| {
            Obj::new()
                .text("name", p.name)
                .opt("containerPort", p.container_port)
                .count("hostPort", p.host_port)
                .text("protocol", p.protocol)
                .text("hostIP", p.host_ip)
                .build()
        })
        .collect();
    let mut env = Vec::new();
    for mut var in std::mem::take(&mut c.env) {
        let item = Obj::new()
            .text("name", var.name.take())
            .text("value", var.value.take())
            .build();
        consumed("EnvVar", &var)?;
        env.push(item);
    }
    let resources = c.resources.take().map(resources).transpose()?;
    let out = Obj::new()
        .text("name", c.name.take())
        .opt("image", c.image.take())
        .vec("command", std::mem::take(&mut c.command))
        .vec("args", std::mem::take(&mut c.args))
        .text("workingDir", c.working_dir.take())
        .vec("ports", ports)
        .vec("env", env)
        .val("resources", resources)
        .text("terminationMessagePath", c.termination_message_path.take())
        .text(
            "terminationMessagePolicy",
            c.termination_message_policy.take(),
        )
        .text("imagePullPolicy", c.image_pull_policy.take())
        .flag("stdin", c.stdin.take())
        .flag("stdinOnce", c.stdin_once.take())
        .flag("tty", c.tty.take());
    consumed("Container", &c)?;
    Ok(out.build())
}

fn resources(mut r: pb::ResourceRequirements) -> Result<Value, ApiError> {
    let out = Obj::new()
        .map("limits", quantities(std::mem::take(&mut r.limits)))
        .map("requests", quantities(std::mem::take(&mut r.requests)));
    consumed("ResourceRequirements", &r)?;
    Ok(out.build())
}

/// A ResourceQuota (status is the server's).
pub fn resource_quota(q: pb::ResourceQuota) -> Result<Value, ApiError> {
    let spec = match q.spec {
        Some(mut spec) => {
            let out = Obj::new()
                .map("hard", quantities(std::mem::take(&mut spec.hard)))
                .vec("scopes", std::mem::take(&mut spec.scopes));
            consumed("ResourceQuotaSpec", &spec)?;
            Some(out.build())
        }
        None => None,
    };
    Ok(Obj::new()
        .val("metadata", object_meta(q.metadata))
        .val("spec", spec)
        .build())
}
