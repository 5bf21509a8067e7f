//! Equality of results as JSON values: numbers by value (1 and 1.0 are equal, integers beyond 2^53 exactly), object keys in any order, strings as text (so a key order shown inside `tojson` or an interpolated string is a difference).

use serde_json::{Number, Value};

pub fn same(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Number(a), Value::Number(b)) => same_number(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| same(x, y)))
        }
        _ => ours == theirs,
    }
}

/// An integer, when the number is one exactly (a float counts when it is integral).
fn exact_integer(n: &Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    let f = n.as_f64()?;
    // Every float of magnitude below 2^127 that is integral converts exactly.
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38).then_some(f as i128)
}

fn same_number(a: &Number, b: &Number) -> bool {
    let integral = |n: &Number| n.is_i64() || n.is_u64();
    if integral(a) || integral(b) {
        return match (exact_integer(a), exact_integer(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        };
    }
    a.as_f64() == b.as_f64()
}
