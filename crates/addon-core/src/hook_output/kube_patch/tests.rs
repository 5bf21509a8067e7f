//! Tests of `$KUBERNETES_PATCH_PATH` parsing with the documented examples and invalid inputs.

use super::*;
use serde_json::json;

fn one(text: &str) -> KubeOperation {
    let ops = parse(text).unwrap();
    assert_eq!(ops.len(), 1, "{ops:?}");
    ops.into_iter().next().unwrap()
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

fn target(kind: &str, ns: Option<&str>, name: &str) -> ObjectRef {
    ObjectRef {
        api_version: None,
        kind: kind.into(),
        namespace: ns.map(Into::into),
        name: name.into(),
        subresource: None,
    }
}

#[test]
fn empty_file_has_no_operations() {
    assert!(parse("").unwrap().is_empty());
    assert!(parse("\n  \n").unwrap().is_empty());
}

#[test]
fn create_or_update_with_an_object() {
    let op = one(
        r#"{"operation": "CreateOrUpdate", "object": {"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "flannel", "namespace": "d8-flannel"}, "spec": {}}}"#,
    );
    let KubeOperation::Create { mode, object, .. } = op else {
        panic!("{op:?}")
    };
    assert_eq!(mode, CreateMode::CreateOrUpdate);
    assert_eq!(object["metadata"]["name"], json!("flannel"));
}

#[test]
fn yaml_create_with_object_as_yaml_and_as_json_string() {
    let ops = parse(
        r#"
operation: Create
object:
  apiVersion: v1
  kind: ConfigMap
  metadata:
    namespace: default
    name: testcm
  data: {a: b}
---
operation: CreateIfNotExists
object: |
  {"apiVersion":"v1", "kind":"ConfigMap",
   "metadata":{"namespace":"default","name":"testcm"},
   "data":{"foo": "bar"}}
"#,
    )
    .unwrap();
    assert_eq!(ops.len(), 2);
    let KubeOperation::Create { mode, object, .. } = &ops[1] else {
        panic!("{ops:?}")
    };
    assert_eq!(*mode, CreateMode::CreateIfNotExists);
    assert_eq!(object["data"], json!({"foo": "bar"}));
}

#[test]
fn deletes_map_to_propagation_policies() {
    let ops = parse(
        r#"{"operation": "Delete", "kind": "Pod", "namespace": "default", "name": "nginx"}
{"operation": "DeleteInBackground", "kind": "Pod", "name": "a"}
{"operation": "DeleteNonCascading", "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "x", "name": "b"}"#,
    )
    .unwrap();
    assert_eq!(
        ops[0],
        KubeOperation::Delete {
            target: target("Pod", Some("default"), "nginx"),
            propagation: DeletePropagation::Foreground
        }
    );
    assert_eq!(
        ops[1],
        KubeOperation::Delete {
            target: target("Pod", None, "a"),
            propagation: DeletePropagation::Background
        }
    );
    let KubeOperation::Delete {
        target: t,
        propagation,
    } = &ops[2]
    else {
        panic!()
    };
    assert_eq!(*propagation, DeletePropagation::Orphan);
    assert_eq!(t.api_version.as_deref(), Some("apps/v1"));
}

#[test]
fn jq_patch_compiles_its_filter() {
    let op = one(
        r#"{ "operation": "JQPatch", "kind": "Deployment", "namespace": "default", "name": "nginx", "jqFilter": ".spec.replicas = 1" }"#,
    );
    let KubeOperation::JqPatch { filter, .. } = op else {
        panic!()
    };
    assert_eq!(
        filter.apply(&json!({"spec": {"replicas": 3}})).unwrap(),
        json!({"spec": {"replicas": 1}})
    );
}

#[test]
fn merge_patch_as_object_or_yaml_string() {
    let a = one(
        r#"{ "operation": "MergePatch", "kind": "Deployment", "namespace": "default", "name": "nginx", "mergePatch": { "spec": { "replicas": 1 } } }"#,
    );
    let b = one(
        "operation: MergePatch\nkind: Deployment\nnamespace: default\nname: nginx\nignoreMissingObject: true\nmergePatch: |\n  spec:\n    replicas: 1\n",
    );
    let (
        KubeOperation::MergePatch {
            patch: pa,
            ignore_missing_object: ia,
            ..
        },
        KubeOperation::MergePatch {
            patch: pb,
            ignore_missing_object: ib,
            ..
        },
    ) = (a, b)
    else {
        panic!()
    };
    assert_eq!(pa, pb);
    assert!(!ia && ib);
}

#[test]
fn json_patch_as_array_or_string() {
    let a = one(
        r#"{ "operation": "JSONPatch", "kind": "Deployment", "namespace": "default", "name": "nginx",
        "jsonPatch": [ {"op": "replace", "path":  "/spec/replicas", "value":  1} ] }"#,
    );
    let b = one(
        r#"{ "operation": "JSONPatch", "kind": "Deployment", "namespace": "default", "name": "nginx",
        "jsonPatch": "[{\"op\": \"replace\", \"path\": \"/spec/replicas\", \"value\": 1}]" }"#,
    );
    let (KubeOperation::JsonPatch { patch: pa, .. }, KubeOperation::JsonPatch { patch: pb, .. }) =
        (a, b)
    else {
        panic!()
    };
    assert_eq!(pa, pb);
    assert_eq!(pa.0.len(), 1);
}

#[test]
fn a_document_holding_an_array_gives_several_operations() {
    let ops = parse(r#"[{"operation": "Delete", "kind": "Pod", "name": "a"}, {"operation": "Delete", "kind": "Pod", "name": "b"}]"#).unwrap();
    assert_eq!(ops.len(), 2);
}

#[test]
fn delete_needs_kind_and_name() {
    assert!(
        err(r#"{"operation": "Delete", "name": "x"}"#)
            .contains("operation 0 (Delete): 'kind' is required")
    );
    assert!(err(r#"{"operation": "Delete", "kind": "Pod"}"#).contains("'name' is required"));
}

#[test]
fn the_failing_operation_is_named_by_index() {
    let e = err(
        "operation: Delete\nkind: Pod\nname: a\n---\noperation: jsonPatch\nkind: Pod\nname: a\n",
    );
    assert!(
        e.contains("operation 1 (jsonPatch): unknown operation 'jsonPatch'"),
        "{e}"
    );
}

#[test]
fn invalid_operations_are_rejected() {
    let cases = [
        (r#"{"kind": "Pod", "name": "a"}"#, "'operation' is required"),
        (
            r#"{"operation": "Delete", "kind": "Pod", "name": "a", "extra": 1}"#,
            "unknown field 'extra'",
        ),
        (r#"{"operation": "Create"}"#, "'object' is required"),
        (
            r#"{"operation": "Create", "object": {"kind": "ConfigMap", "metadata": {"name": "a"}}}"#,
            "needs 'apiVersion' and 'kind'",
        ),
        (
            r#"{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap"}}"#,
            "metadata.name",
        ),
        (
            r#"{"operation": "JQPatch", "kind": "Pod", "name": "a"}"#,
            "'jqFilter' is required",
        ),
        (
            r#"{"operation": "JQPatch", "kind": "Pod", "name": "a", "jqFilter": ".["}"#,
            "compile jqFilter",
        ),
        (
            r#"{"operation": "MergePatch", "kind": "Pod", "name": "a"}"#,
            "'mergePatch' must be an object",
        ),
        (
            r#"{"operation": "JSONPatch", "kind": "Pod", "name": "a", "jsonPatch": [{"op": "nope"}]}"#,
            "not a JSON Patch",
        ),
        (
            r#"{"operation": "Delete", "kind": "Pod", "name": "a", "ignoreMissingObject": "yes"}"#,
            "must be a boolean",
        ),
        ("42", "must be an object"),
    ];
    for (text, expected) in cases {
        let e = err(text);
        assert!(e.contains(expected), "{text}: {e}");
    }
}

#[test]
fn unreadable_file_is_a_read_error() {
    let e = parse("operation: [unclosed\n  - x: {").unwrap_err();
    assert_eq!(e.category(), "kube_patch_read");
}

#[test]
fn names_that_would_change_the_request_url_are_rejected() {
    for name in [
        "../../secrets/victim",
        "a?dryRun=All",
        "a&b",
        "a#b",
        "UPPER",
        "-a",
        ".",
        "a b",
        &"a".repeat(254),
    ] {
        let text = format!(
            r#"{{"operation": "Delete", "kind": "Pod", "namespace": "ns", "name": {name:?}}}"#
        );
        let e = err(&text);
        assert!(e.contains("is not a valid Kubernetes name"), "{name}: {e}");
        assert!(e.contains("operation 0 (Delete)"), "{e}");
    }
}

#[test]
fn namespaces_must_be_dns_labels() {
    for ns in ["../x", "a.b", "A", &"n".repeat(64), "x/"] {
        let text = format!(
            r#"{{"operation": "JQPatch", "kind": "Pod", "namespace": {ns:?}, "name": "p", "jqFilter": "."}}"#
        );
        assert!(
            err(&text).contains("is not a valid Kubernetes namespace"),
            "{ns}"
        );
    }
}

#[test]
fn valid_names_pass_including_rbac_names_with_colons() {
    one(r#"{"operation": "Delete", "kind": "Pod", "namespace": "kube-system", "name": "a.b-c.0"}"#);
    one(r#"{"operation": "Delete", "kind": "ClusterRole", "name": "system:controller:x"}"#);
    let e = err(r#"{"operation": "Delete", "kind": "ClusterRole", "name": "a/../b"}"#);
    assert!(e.contains("no '/'"), "{e}");
}

#[test]
fn created_objects_are_checked_by_name_generate_name_and_namespace() {
    let create = |meta: &str| {
        format!(
            r#"{{"operation": "Create", "object": {{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {meta}}}}}"#
        )
    };
    one(&create(r#"{"generateName": "job-", "namespace": "ns"}"#));
    one(&create(r#"{"name": "cm", "namespace": "ns"}"#));
    assert!(
        err(&create(r#"{"generateName": "Job-", "namespace": "ns"}"#))
            .contains("metadata.generateName")
    );
    assert!(err(&create(r#"{"name": "../cm", "namespace": "ns"}"#)).contains("metadata.name"));
    assert!(
        err(&create(r#"{"name": "cm", "namespace": "ns/../x"}"#)).contains("metadata.namespace")
    );
    assert!(err(&create(r#"{"name": "cm", "generateName": 5}"#)).contains("must be a string"));
}

#[test]
fn subresources_are_lowercase_words() {
    let e = err(
        r#"{"operation": "MergePatch", "kind": "Deployment", "namespace": "ns", "name": "d", "subresource": "status/../../x", "mergePatch": {}}"#,
    );
    assert!(e.contains("subresource"), "{e}");
}

/// The issue's reproducer: a JQPatch filter nested 10,000 levels is an invalid operation, not a
/// stack overflow while compiling.
#[test]
fn a_jq_patch_filter_nested_too_deep_is_an_invalid_operation() {
    for depth in [8_000, 10_000] {
        let filter = format!("{}.{}", "(".repeat(depth), ")".repeat(depth));
        let text = json!({"operation": "JQPatch", "kind": "Pod", "namespace": "ns", "name": "p", "jqFilter": filter});
        let e = err(&text.to_string());
        assert!(e.contains("operation 0 (JQPatch)"), "{e}");
        assert!(e.contains("nests") || e.contains("bytes long"), "{e}");
        assert!(e.len() < 1_000, "{e}");
    }
}
