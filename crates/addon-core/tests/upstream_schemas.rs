//! Schemas copied from flant/addon-operator's tests (see `tests/fixtures/upstream/NOTICE`):
//! RE2 patterns, `default: null`, `x-extend` with values-only keys, and `$ref`s to other files,
//! each giving what the Go tests expect.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use addon_core::config::Config;
use addon_core::names::HookName;
use addon_core::schema::{SchemaFile, ScopeSchemas};
use addon_core::values::{HookRef, PatchKind, Scope, ValuesPatch, ValuesStore};
use serde_json::json;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream")
        .join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

fn global_schemas() -> ScopeSchemas {
    let config = read("models_modules/global/openapi/config-values.yaml");
    let values = read("models_modules/global/openapi/values.yaml");
    ScopeSchemas::load(
        &Scope::Global,
        Some(SchemaFile {
            file: "global/openapi/config-values.yaml",
            text: &config,
        }),
        Some(SchemaFile {
            file: "global/openapi/values.yaml",
            text: &values,
        }),
    )
    .unwrap()
}

/// Go's `TestPatchValues` (values_storage_test.go): static values, both global schemas (RE2
/// `(?P<name>…)` patterns, `storageClass: {default: null}`, `internal` only in values.yaml),
/// one values patch.
#[test]
fn go_values_storage_example_gives_the_same_values() {
    let mut store = ValuesStore::new();
    store
        .add_common_values(
            "modules/values.yaml",
            r#"
global:
  highAvailability: false
  modules:
    https:
      certManager:
        clusterIssuerName: letsencrypt
      mode: CertManager
    ingressClass: nginx
    placement: {}
    publicDomainTemplate: '%s.example.com'
    resourcesRequests:
      controlPlane: {}
      everyNode:
        cpu: 300m
        memory: 512Mi
"#,
        )
        .unwrap();
    store.set_global_schemas(global_schemas());
    let hook = HookRef::global(HookName::new("hooks/h").unwrap());
    let patch = ValuesPatch::parse(
        &hook,
        PatchKind::Values,
        r#"[{"op":"add","path":"/global/modules/resourcesRequests/everyNode/cpu","value":"500m"}]"#,
    )
    .unwrap();
    store.apply_values_patch(&hook, &patch).unwrap();
    let expected = addon_core::yaml::parse(
        r#"
discovery:
    clusterControlPlaneIsHighlyAvailable: false
    d8SpecificNodeCountByRole: {}
    prometheusScrapeInterval: 30
highAvailability: false
internal:
    modules:
        kubeRBACProxyCA: {}
        resourcesRequests:
            memoryControlPlane: 0
            milliCpuControlPlane: 0
modules:
    https:
        certManager:
            clusterIssuerName: letsencrypt
        mode: CertManager
    ingressClass: nginx
    placement: {}
    publicDomainTemplate: '%s.example.com'
    resourcesRequests:
        controlPlane: {}
        everyNode:
            cpu: 500m
            memory: 512Mi
modulesImages:
    registry: {}
    tags: {}
"#,
    )
    .unwrap();
    assert_eq!(store.global_values(), expected);
    store.check_config(&Config::empty(), &[]).unwrap();
}

#[test]
fn re2_named_groups_validate_values() {
    let schemas = global_schemas();
    let ok = json!({"deckhouseVersion": "dev", "modulesImages": {"registry": {}, "tags": {}}});
    schemas.validate_values(&ok).unwrap();
    let schema = schemas.values().unwrap().effective().to_string();
    assert!(
        schema.contains("(?P<major>"),
        "the fixture still has RE2 groups"
    );
}

/// Go's `Test_Add_Schema` (schemas_test.go): `$ref` to another file and to a fragment of one,
/// YAML anchors and merge keys, local references inside the referenced file.
#[test]
fn references_to_other_files_are_expanded() {
    let dir = fixture("values_validation");
    let mut files = BTreeMap::new();
    for name in [
        "test-schema-ok-project.yaml",
        "test-schema-ok-project-2.yaml",
    ] {
        let text = std::fs::read_to_string(dir.join("testdata").join(name)).unwrap();
        files.insert(format!("testdata/{name}"), text);
    }
    let main = read("values_validation/testdata/test-schema-ok.yaml");
    let schemas = ScopeSchemas::load_with_files(
        &Scope::Global,
        Some(SchemaFile {
            file: "openapi/config-values.yaml",
            text: &main,
        }),
        None,
        &files,
    )
    .unwrap();
    let s = schemas.config().unwrap().effective();
    let props = &s["properties"];
    assert!(props["clusterName"].is_object());
    assert!(props["activeProject"]["properties"]["version"].is_object());
    assert!(props["archive"]["items"]["properties"]["description"].is_object());
    let external = &props["externalProjects"]["properties"];
    assert!(external["activeProject"]["properties"]["version"].is_object());
    assert!(external["archive"]["items"]["properties"]["description"].is_object());
    let fragment = &props["fragmentedProjects"]["properties"];
    let item = &fragment["archive"]["items"]["properties"];
    assert_eq!(item["version"]["type"], "number");
    assert_eq!(item["description"]["type"], "string");
    assert!(schemas.values().is_none() && schemas.helm().is_none());
    schemas
        .validate_config(
            &json!({"clusterName": "c", "fragmentedProjects": {"archive": [{"version": 1}]}}),
        )
        .unwrap();
    let err = schemas
        .validate_config(
            &json!({"clusterName": "c", "externalProjects": {"project": {"version": "one"}}}),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/global/externalProjects/project/version: expected type number"),
        "{err}"
    );
    assert!(!err.contains("one"), "the value is not quoted: {err}");
}

#[test]
fn a_reference_to_a_missing_or_remote_file_is_a_clear_error() {
    for (reference, expected) in [
        ("testdata/nope.yaml", "no file 'testdata/nope.yaml'"),
        (
            "https://example.com/x.yaml",
            "remote references are not supported",
        ),
        ("../../secret.yaml", "outside the openapi/ directory"),
    ] {
        let text = format!("type: object\nproperties:\n  a: {{$ref: '{reference}'}}\n");
        let err = ScopeSchemas::load(
            &Scope::Global,
            Some(SchemaFile {
                file: "global-hooks/openapi/config-values.yaml",
                text: &text,
            }),
            None,
        )
        .unwrap_err();
        let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
        assert!(chain.contains(expected), "{chain}");
        assert!(chain.contains("config-values.yaml"), "{chain}");
    }
}
