//! Checksums of values: sha256 over canonical JSON (object keys sorted), to tell "values changed".

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The hex sha256 of `value` written as canonical JSON; key order does not matter.
pub fn checksum(value: &Value) -> String {
    let mut text = String::new();
    write_canonical(value, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_checksum() {
        let a = json!({"a": 1, "b": {"x": [1, 2], "y": null}});
        let b = json!({"b": {"y": null, "x": [1, 2]}, "a": 1});
        assert_eq!(checksum(&a), checksum(&b));
    }

    #[test]
    fn different_values_have_different_checksums() {
        assert_ne!(checksum(&json!({"a": 1})), checksum(&json!({"a": "1"})));
        assert_ne!(checksum(&json!([1, 2])), checksum(&json!([2, 1])));
    }

    #[test]
    fn checksum_is_64_hex_chars() {
        let sum = checksum(&json!({}));
        assert_eq!(sum.len(), 64);
        assert!(sum.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
