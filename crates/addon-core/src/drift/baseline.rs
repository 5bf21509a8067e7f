//! The baseline of one release object: the live values at the fields its manifest sets (so the
//! server's normalisation and defaults are never drift), the fields of a live copy that differ
//! from it, and the JSON patch that writes them back.

use serde_json::Value;

use super::settings::IgnoreRules;

/// Fields one object's baseline holds, at most (a manifest is chart output).
pub const MAX_FIELDS: usize = 4096;
/// Nesting the walk follows, at most; deeper values are compared whole.
const MAX_DEPTH: usize = 32;

/// The values an object had, right after its release was applied, at the fields the chart sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    fields: Vec<(String, Value)>,
}

/// One field whose live value is not the baseline's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftedField {
    /// JSON pointer.
    pub path: String,
    pub want: Value,
    /// `None`: the field is gone.
    pub got: Option<Value>,
}

impl Baseline {
    /// The live values of `live` at the leaves of `desired` (the manifest object), leaving out
    /// ignored fields and fields the server does not keep.
    pub fn record(desired: &Value, live: &Value, ignore: &IgnoreRules) -> Self {
        let mut leaves = Vec::new();
        for (key, value) in desired.as_object().into_iter().flatten() {
            match key.as_str() {
                "apiVersion" | "kind" | "status" => {}
                "metadata" => {
                    for part in ["labels", "annotations"] {
                        if let Some(map) = value.get(part) {
                            let path = format!("/metadata/{part}");
                            leaves_of(map, &path, 1, &mut leaves);
                        }
                    }
                }
                _ => leaves_of(value, &format!("/{}", escape(key)), 1, &mut leaves),
            }
        }
        let fields = leaves
            .into_iter()
            .filter(|path| !ignore.ignores(path))
            .filter_map(|path| {
                let live = live.pointer(&path)?;
                Some((path.clone(), baseline_value(desired.pointer(&path), live)))
            })
            .take(MAX_FIELDS)
            .collect();
        Self { fields }
    }

    /// The fields of `live` that differ from the baseline.
    pub fn diff(&self, live: &Value) -> Vec<DriftedField> {
        self.fields
            .iter()
            .filter_map(|(path, want)| {
                let got = live.pointer(path);
                (got != Some(want)).then(|| DriftedField {
                    path: path.clone(),
                    want: want.clone(),
                    got: got.cloned(),
                })
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// One JSON patch restoring `fields`: a `test` of `resource_version` first (so a write made
    /// after the copy was read is not overwritten blindly), then `replace` (or `add` for a field
    /// that is gone) of each field with its baseline value.
    pub fn restore_patch(
        fields: &[DriftedField],
        resource_version: Option<&str>,
    ) -> Result<json_patch::Patch, serde_json::Error> {
        let mut ops = Vec::with_capacity(fields.len() + 1);
        if let Some(version) = resource_version {
            ops.push(serde_json::json!({
                "op": "test", "path": "/metadata/resourceVersion", "value": version,
            }));
        }
        for field in fields {
            let op = if field.got.is_some() {
                "replace"
            } else {
                "add"
            };
            ops.push(serde_json::json!({ "op": op, "path": field.path, "value": field.want }));
        }
        serde_json::from_value(Value::Array(ops))
    }
}

/// The JSON pointers of the leaves of `value` under `path`: scalars, empty maps and lists, and
/// lists of scalars (compared whole, so an added item is drift); lists of maps are followed
/// item by item.
fn leaves_of(value: &Value, path: &str, depth: usize, out: &mut Vec<String>) {
    if out.len() >= MAX_FIELDS {
        return;
    }
    match value {
        Value::Null => {}
        Value::Object(map) if !map.is_empty() && depth < MAX_DEPTH => {
            for (key, item) in map {
                leaves_of(item, &format!("{path}/{}", escape(key)), depth + 1, out);
            }
        }
        Value::Array(items)
            if !items.is_empty() && depth < MAX_DEPTH && items.iter().all(Value::is_object) =>
        {
            for (index, item) in items.iter().enumerate() {
                leaves_of(item, &format!("{path}/{index}"), depth + 1, out);
            }
        }
        _ => out.push(path.to_string()),
    }
}

/// The value to keep for a field: the live one, as the server stores it (quantities, defaults
/// inside lists); but a number or a boolean the server never rewrites is the chart's, so a
/// change made before the baseline was read (while the operator was away) is still drift.
fn baseline_value(desired: Option<&Value>, live: &Value) -> Value {
    match (desired, live) {
        (Some(d @ Value::Number(_)), Value::Number(_))
        | (Some(d @ Value::Bool(_)), Value::Bool(_)) => d.clone(),
        _ => live.clone(),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
