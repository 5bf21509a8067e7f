//! Absent resources beyond namespaced built-ins: cluster-scoped objects and custom resources
//! whose CRD is gone.

use addon_operator::edges::helm::Helm;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams};

use crate::common::{Env, NS};

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

const TEMPLATES: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}-reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
---
apiVersion: example.io/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
spec:
  greeting: {{ .Values.web.greeting | quote }}
"#;

pub async fn absent_cluster_scoped_objects_and_kinds_no_longer_served_are_detected(env: Env) {
    let module = env.module("crd", true);
    std::fs::write(module.join("templates/all.yaml"), TEMPLATES).unwrap();
    std::fs::create_dir_all(module.join("crds")).unwrap();
    std::fs::write(module.join("crds/widget.yaml"), WIDGET_CRD).unwrap();
    // helm skips crds/ (--skip-crds): the operator creates them before the release, as here
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd: CustomResourceDefinition = serde_saphyr::from_str(WIDGET_CRD).unwrap();
    crds.create(&kube::api::PostParams::default(), &crd)
        .await
        .unwrap();
    let req = env.request(&module, "hello", "sum-1");
    env.helm.upgrade(&req).await.unwrap();
    assert!(
        env.emu
            .object("example.io", "widgets", NS, "crd-widget")
            .is_some()
    );
    assert!(!env.helm.should_upgrade(&req).await.unwrap());

    let roles: Api<ClusterRole> = Api::all(env.client.clone());
    roles
        .delete("crd-reader", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        env.helm.should_upgrade(&req).await.unwrap(),
        "cluster role absent"
    );
    env.helm.upgrade(&req).await.unwrap();
    assert!(roles.get_opt("crd-reader").await.unwrap().is_some());
    assert!(!env.helm.should_upgrade(&req).await.unwrap());

    crds.delete("widgets.example.io", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        env.helm.should_upgrade(&req).await.unwrap(),
        "kind not served"
    );
}
