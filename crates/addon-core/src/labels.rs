//! Labels set over an object's own `metadata.labels` (the release post-renderer's and
//! `--crd-extra-labels`).

use serde_json::{Map, Value};

/// Sets `labels` over the object's own `metadata.labels`, making the maps when missing (a
/// non-object `metadata` or `labels` is replaced): the overlay of the release post-renderer and
/// of `--crd-extra-labels`.
pub fn overlay_labels<'a>(
    object: &mut Value,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) {
    let Some(object) = object.as_object_mut() else {
        return;
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let own = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !own.is_object() {
        *own = Value::Object(Map::new());
    }
    if let Some(own) = own.as_object_mut() {
        for (key, value) in labels {
            own.insert(key.to_string(), Value::from(value));
        }
    }
}
