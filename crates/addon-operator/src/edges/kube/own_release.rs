//! Which Helm release deployed the operator itself: the `meta.helm.sh/release-name` annotation
//! of the top controller of its pod (Pod → ReplicaSet → Deployment, or a StatefulSet/DaemonSet),
//! so that the startup purge never uninstalls the operator.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

/// Helm's annotations on every object it installs.
const RELEASE_NAME: &str = "meta.helm.sh/release-name";
const RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";

/// How many owners are followed up from the pod (Pod → ReplicaSet → Deployment needs 2).
const MAX_OWNERS: usize = 3;

/// The release of the pod `pod` in `namespace` (found by its controllers' Helm annotations), or
/// `None` when the pod or its controllers cannot be read or were not installed by Helm into
/// `namespace`. Never fails: a failed lookup is logged and only means nothing extra is kept.
pub async fn own_release(client: &Client, namespace: &str, pod: &str) -> Option<String> {
    let mut object = get(client, namespace, "v1", "Pod", pod).await?;
    for _ in 0..=MAX_OWNERS {
        if let Some(release) = release_of(&object, namespace) {
            tracing::info!(release = %release, "the operator's own Helm release is never purged");
            return Some(release);
        }
        let (api_version, kind, name) = controller(&object)?;
        object = get(client, namespace, &api_version, &kind, &name).await?;
    }
    None
}

async fn get(
    client: &Client,
    namespace: &str,
    api_version: &str,
    kind: &str,
    name: &str,
) -> Option<Value> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    match api.get(name).await {
        Ok(object) => serde_json::to_value(object).ok(),
        Err(e) => {
            tracing::info!(kind, name, error = %e, "cannot read an owner of the operator's pod; its own release is not known");
            None
        }
    }
}

/// The release named by Helm's annotations, when installed into `namespace`.
fn release_of(object: &Value, namespace: &str) -> Option<String> {
    let annotations = &object["metadata"]["annotations"];
    let name = annotations[RELEASE_NAME].as_str()?;
    let installed_in = annotations[RELEASE_NAMESPACE].as_str().unwrap_or(namespace);
    (installed_in == namespace && !name.is_empty()).then(|| name.to_string())
}

/// The owner reference with `controller: true`: (apiVersion, kind, name).
fn controller(object: &Value) -> Option<(String, String, String)> {
    let owners = object["metadata"]["ownerReferences"].as_array()?;
    let owner = owners
        .iter()
        .find(|o| o["controller"].as_bool() == Some(true))?;
    Some((
        owner["apiVersion"].as_str()?.to_string(),
        owner["kind"].as_str()?.to_string(),
        owner["name"].as_str()?.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn helm_annotations_name_the_release_only_in_the_operators_namespace() {
        let object = json!({"metadata": {"annotations": {
            "meta.helm.sh/release-name": "ops", "meta.helm.sh/release-namespace": "addons"}}});
        assert_eq!(release_of(&object, "addons").as_deref(), Some("ops"));
        assert_eq!(release_of(&object, "other"), None);
        assert_eq!(release_of(&json!({"metadata": {}}), "addons"), None);
    }

    #[test]
    fn the_controller_owner_is_followed() {
        let object = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Other", "name": "x"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "op-5d", "controller": true}]}});
        assert_eq!(
            controller(&object),
            Some(("apps/v1".into(), "ReplicaSet".into(), "op-5d".into()))
        );
    }
}
