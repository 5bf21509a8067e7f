//! Values handed to CEL rules: JSON turned into CEL values the way upstream's `structpb` does
//! (every number a double), and the size figures the cost bound reads.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

/// A JSON value as CEL sees it. Numbers are doubles, as upstream's values are after their trip
/// through `structpb`: `self.replicas == 1` holds for `1`, `self.replicas + 1` has no overload.
pub fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<String, cel::Value> =
                map.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::from(entries)
        }
    }
}

/// The length of the longest list or map in `value` (0 for a scalar): how many times one
/// comprehension over it can loop.
pub fn longest_collection(value: &Value) -> usize {
    let mut longest = 0;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => {
                longest = longest.max(items.len());
                stack.extend(items);
            }
            Value::Object(map) => {
                longest = longest.max(map.len());
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_become_doubles_like_upstream() {
        assert_eq!(to_cel(&json!(3)), cel::Value::Float(3.0));
        assert!(matches!(to_cel(&json!({"a": [1]})), cel::Value::Map(_)));
    }

    #[test]
    fn longest_collection_looks_at_every_depth() {
        assert_eq!(longest_collection(&json!(1)), 0);
        assert_eq!(longest_collection(&json!({"a": {"b": [1, 2, 3]}})), 3);
    }
}
