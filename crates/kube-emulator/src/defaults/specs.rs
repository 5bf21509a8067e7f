//! Decode-time defaults of built-in specs, as the API server's `SetDefaults_*` fill them: pod
//! specs (in pods and every pod template), Deployments, StatefulSets, DaemonSets, ReplicaSets,
//! Jobs, CronJobs and Services.

use serde_json::{Map, Value, json};

use crate::meta;
use crate::resources::ResourceInfo;

/// Fills the defaults of `info`'s kind into `obj`.
pub fn on_decode(info: &ResourceInfo, obj: &mut Value) {
    let kind = (info.group.as_str(), info.plural.as_str());
    let template = match kind {
        ("", "pods") => Some("/spec"),
        ("", "podtemplates") => Some("/template/spec"),
        ("apps", _) | ("batch", "jobs") => Some("/spec/template/spec"),
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    };
    if let Some(spec) = template.and_then(|p| obj.pointer_mut(p)) {
        pod_spec(spec);
    }
    if let Some(template) = template
        .and_then(|p| p.strip_suffix("/spec"))
        .filter(|p| !p.is_empty())
        .and_then(|p| obj.pointer_mut(p))
        .and_then(Value::as_object_mut)
    {
        set(template, "metadata", json!({}));
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match kind {
        ("apps", "deployments") => deployment(spec),
        ("apps", "statefulsets") => stateful_set(spec),
        ("apps", "daemonsets") => daemon_set(spec),
        ("apps", "replicasets") => set(spec, "replicas", json!(1)),
        ("batch", "jobs") => job(spec),
        ("batch", "cronjobs") => cron_job(spec),
        ("", "services") => service(spec),
        _ => return,
    }
    let status = match kind.0 {
        "apps" | "batch" => json!({}),
        _ => json!({"loadBalancer": {}}),
    };
    meta::ensure_object(obj).entry("status").or_insert(status);
}

fn set(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.entry(key).or_insert(value);
}

fn child<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    meta::ensure_object(map.entry(key).or_insert_with(|| json!({})))
}

fn pod_spec(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    set(spec, "restartPolicy", json!("Always"));
    set(spec, "terminationGracePeriodSeconds", json!(30));
    set(spec, "dnsPolicy", json!("ClusterFirst"));
    set(spec, "securityContext", json!({}));
    set(spec, "schedulerName", json!("default-scheduler"));
    for list in ["containers", "initContainers"] {
        let containers = spec.get_mut(list).and_then(Value::as_array_mut);
        for container in containers.into_iter().flatten() {
            if let Some(container) = container.as_object_mut() {
                self::container(container);
            }
        }
    }
    let volumes = spec.get_mut("volumes").and_then(Value::as_array_mut);
    for volume in volumes.into_iter().flatten() {
        for source in ["configMap", "secret", "projected", "downwardAPI"] {
            if let Some(source) = volume.get_mut(source).and_then(Value::as_object_mut) {
                set(source, "defaultMode", json!(420));
            }
        }
    }
}

fn container(c: &mut Map<String, Value>) {
    set(c, "terminationMessagePath", json!("/dev/termination-log"));
    set(c, "terminationMessagePolicy", json!("File"));
    set(c, "resources", json!({}));
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    let policy = if pulls_always(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    set(c, "imagePullPolicy", json!(policy));
    let ports = c.get_mut("ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
        set(port, "protocol", json!("TCP"));
    }
    let env = c.get_mut("env").and_then(Value::as_array_mut);
    for var in env.into_iter().flatten() {
        if let Some(field) = var
            .pointer_mut("/valueFrom/fieldRef")
            .and_then(Value::as_object_mut)
        {
            set(field, "apiVersion", json!("v1"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = c.get_mut(probe).and_then(Value::as_object_mut) {
            self::probe(probe);
        }
    }
}

/// `:latest` or no tag (and no digest) pulls always.
fn pulls_always(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

fn probe(p: &mut Map<String, Value>) {
    set(p, "timeoutSeconds", json!(1));
    set(p, "periodSeconds", json!(10));
    set(p, "successThreshold", json!(1));
    set(p, "failureThreshold", json!(3));
    if let Some(get) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
        set(get, "scheme", json!("HTTP"));
    }
}

fn deployment(spec: &mut Map<String, Value>) {
    set(spec, "replicas", json!(1));
    set(spec, "revisionHistoryLimit", json!(10));
    set(spec, "progressDeadlineSeconds", json!(600));
    let strategy = child(spec, "strategy");
    set(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = child(strategy, "rollingUpdate");
        set(rolling, "maxUnavailable", json!("25%"));
        set(rolling, "maxSurge", json!("25%"));
    }
}

fn stateful_set(spec: &mut Map<String, Value>) {
    set(spec, "replicas", json!(1));
    set(spec, "podManagementPolicy", json!("OrderedReady"));
    set(spec, "revisionHistoryLimit", json!(10));
    let strategy = child(spec, "updateStrategy");
    set(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        set(child(strategy, "rollingUpdate"), "partition", json!(0));
    }
    let retention = child(spec, "persistentVolumeClaimRetentionPolicy");
    set(retention, "whenDeleted", json!("Retain"));
    set(retention, "whenScaled", json!("Retain"));
}

fn daemon_set(spec: &mut Map<String, Value>) {
    set(spec, "revisionHistoryLimit", json!(10));
    let strategy = child(spec, "updateStrategy");
    set(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = child(strategy, "rollingUpdate");
        set(rolling, "maxUnavailable", json!(1));
        set(rolling, "maxSurge", json!(0));
    }
}

fn job(spec: &mut Map<String, Value>) {
    set(spec, "parallelism", json!(1));
    set(spec, "completions", json!(1));
    set(spec, "backoffLimit", json!(6));
    set(spec, "completionMode", json!("NonIndexed"));
    set(spec, "suspend", json!(false));
    set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
}

fn cron_job(spec: &mut Map<String, Value>) {
    set(spec, "concurrencyPolicy", json!("Allow"));
    set(spec, "suspend", json!(false));
    set(spec, "successfulJobsHistoryLimit", json!(3));
    set(spec, "failedJobsHistoryLimit", json!(1));
}

fn service(spec: &mut Map<String, Value>) {
    set(spec, "type", json!("ClusterIP"));
    let external_name = spec.get("type") == Some(&json!("ExternalName"));
    if !external_name {
        set(spec, "sessionAffinity", json!("None"));
        set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
        set(port, "protocol", json!("TCP"));
        if let Some(number) = port.get("port").cloned() {
            set(port, "targetPort", number);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn a_deployment_gets_the_api_servers_defaults() {
        let reg = Registry::new(std::iter::empty());
        let info = reg.find("apps", "v1", "deployments").unwrap();
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "busybox"}]}}}});
        on_decode(info, &mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let containers = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(containers[1]["imagePullPolicy"], "Always");
        assert_eq!(containers[0]["ports"][0]["protocol"], "TCP");
        assert_eq!(d["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(d["status"], json!({}));
    }
}
