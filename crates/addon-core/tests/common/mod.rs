//! Helpers shared by the core's integration tests: fixture files and ConfigMap `data`.

#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;

use addon_core::yaml;

/// The text of `tests/fixtures/<path>`.
pub fn fixture(path: &str) -> String {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The `data` of a ConfigMap manifest, as the string map the operator reads.
pub fn configmap_data(text: &str) -> BTreeMap<String, String> {
    let doc = yaml::parse(text).unwrap();
    doc["data"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}
