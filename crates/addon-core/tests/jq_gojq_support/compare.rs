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

/// The value of an integral number.
fn exact_integer(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Two integers exactly, two floats as floats. An integer and a float are the same when the float
/// prints as that integer: Go writes a float below 1e21 in shortest digits without an exponent
/// (`1.2345678901234567e19` as `12345678901234567000`, which reads back as an integer), and
/// Rust's `Display` gives the same digits; a big integer rounded to a float
/// (`9007199254740993` as `9007199254740992.0`) stays a difference.
fn same_number(a: &Number, b: &Number) -> bool {
    let integral = |n: &Number| n.is_i64() || n.is_u64();
    match (integral(a), integral(b)) {
        (true, true) => exact_integer(a) == exact_integer(b),
        (false, false) => a.as_f64() == b.as_f64(),
        (true, false) => prints_as(b, a),
        (false, true) => prints_as(a, b),
    }
}

/// Whether the float `float` is integral and prints as the integer `int`.
fn prints_as(float: &Number, int: &Number) -> bool {
    float
        .as_f64()
        .is_some_and(|f| f.is_finite() && f.fract() == 0.0 && f.to_string() == int.to_string())
}
