//! Deep merge of JSON values: maps merge key by key, everything else is replaced by the later value.

use serde_json::Value;

/// Merges `src` into `dst`: objects merge recursively, lists and scalars from `src` replace.
pub fn deep_merge(dst: &mut Value, src: &Value) {
    match (dst, src) {
        (Value::Object(dst_map), Value::Object(src_map)) => {
            for (key, src_value) in src_map {
                match dst_map.get_mut(key) {
                    Some(dst_value) => deep_merge(dst_value, src_value),
                    None => {
                        dst_map.insert(key.clone(), src_value.clone());
                    }
                }
            }
        }
        (dst, src) => *dst = src.clone(),
    }
}

/// Merges layers in order (later wins) starting from an empty object.
pub fn merged<'a>(layers: impl IntoIterator<Item = &'a Value>) -> Value {
    let mut out = Value::Object(serde_json::Map::new());
    for layer in layers {
        deep_merge(&mut out, layer);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_merge_recursively_and_later_scalars_win() {
        let mut a = json!({"x": {"a": 1, "b": {"c": 2}}, "y": 1});
        deep_merge(&mut a, &json!({"x": {"b": {"d": 3}, "a": 5}, "z": 2}));
        assert_eq!(
            a,
            json!({"x": {"a": 5, "b": {"c": 2, "d": 3}}, "y": 1, "z": 2})
        );
    }

    #[test]
    fn lists_are_replaced_not_concatenated() {
        let mut a = json!({"l": [1, 2, 3]});
        deep_merge(&mut a, &json!({"l": [4]}));
        assert_eq!(a, json!({"l": [4]}));
    }

    #[test]
    fn a_scalar_replaces_a_map_and_a_map_replaces_a_scalar() {
        let mut a = json!({"m": {"k": 1}, "s": "x"});
        deep_merge(&mut a, &json!({"m": "flat", "s": {"k": 2}}));
        assert_eq!(a, json!({"m": "flat", "s": {"k": 2}}));
    }

    #[test]
    fn merging_no_layers_gives_an_empty_object() {
        assert_eq!(merged([]), json!({}));
    }
}
