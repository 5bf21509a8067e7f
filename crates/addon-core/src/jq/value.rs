//! jq values as gojq holds them: integers, floats and big integers apart, objects with sorted keys, cheap clones.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::rc::Rc;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};
use serde_json::Value;

/// An object: gojq iterates maps in sorted key order, so the map is sorted.
pub type Map = BTreeMap<Rc<str>, Val>;

/// One jq value. Clones share their contents.
#[derive(Clone, Debug)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Big(Rc<BigInt>),
    Str(Rc<str>),
    Arr(Rc<Vec<Val>>),
    Obj(Rc<Map>),
}

impl Val {
    pub fn str(s: impl Into<Rc<str>>) -> Self {
        Self::Str(s.into())
    }

    pub fn arr(items: Vec<Val>) -> Self {
        Self::Arr(Rc::new(items))
    }

    pub fn obj(map: Map) -> Self {
        Self::Obj(Rc::new(map))
    }

    /// A big integer as gojq keeps it: an `Int` whenever it fits.
    pub fn big(b: BigInt) -> Self {
        match b.to_i64() {
            Some(i) => Self::Int(i),
            None => Self::Big(Rc::new(b)),
        }
    }

    /// jq truthiness: everything but `null` and `false`.
    pub fn truthy(&self) -> bool {
        !matches!(self, Self::Null | Self::Bool(false))
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "boolean",
            Self::Int(_) | Self::Float(_) | Self::Big(_) => "number",
            Self::Str(_) => "string",
            Self::Arr(_) => "array",
            Self::Obj(_) => "object",
        }
    }

    pub fn is_number(&self) -> bool {
        matches!(self, Self::Int(_) | Self::Float(_) | Self::Big(_))
    }

    /// The number as a float (`None` for other types).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(*i as f64),
            Self::Float(f) => Some(*f),
            Self::Big(b) => Some(big_to_f64(b)),
            _ => None,
        }
    }

    /// The number as an integer the way gojq's `toInt` makes it: floats truncate and saturate.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            Self::Float(f) => Some(float_to_int(*f)),
            Self::Big(b) => {
                Some(
                    b.to_i64()
                        .unwrap_or(if b.is_negative() { i64::MIN } else { i64::MAX }),
                )
            }
            _ => None,
        }
    }

    #[cfg(test)]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The type rank of jq's order: null < false < true < numbers < strings < arrays < objects.
    fn rank(&self) -> u8 {
        match self {
            Self::Null => 0,
            Self::Bool(false) => 1,
            Self::Bool(true) => 2,
            Self::Int(_) | Self::Float(_) | Self::Big(_) => 3,
            Self::Str(_) => 4,
            Self::Arr(_) => 5,
            Self::Obj(_) => 6,
        }
    }
}

/// A float as an integer the way Go converts it in gojq: truncated, saturating at the ends.
pub fn float_to_int(f: f64) -> i64 {
    if f.is_nan() {
        return i64::MIN;
    }
    // `as` truncates toward zero and saturates, like gojq's floatToInt.
    f as i64
}

pub fn big_to_f64(b: &BigInt) -> f64 {
    b.to_f64().unwrap_or(if b.is_negative() {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    })
}

/// jq's total order (gojq's `Compare`).
pub fn compare(l: &Val, r: &Val) -> Ordering {
    use Val::*;
    match (l, r) {
        (Int(a), Int(b)) => a.cmp(b),
        (Big(a), Big(b)) => a.cmp(b),
        (Int(a), Big(b)) => BigInt::from(*a).cmp(b),
        (Big(a), Int(b)) => (**a).cmp(&BigInt::from(*b)),
        (a, b) if a.is_number() && b.is_number() => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            if x < y || x.is_nan() {
                Ordering::Less
            } else if x == y {
                Ordering::Equal
            } else {
                Ordering::Greater
            }
        }
        (Str(a), Str(b)) => a.as_bytes().cmp(b.as_bytes()),
        (Arr(a), Arr(b)) => {
            for (x, y) in a.iter().zip(b.iter()) {
                let c = compare(x, y);
                if c != Ordering::Equal {
                    return c;
                }
            }
            a.len().cmp(&b.len())
        }
        (Obj(a), Obj(b)) => {
            let keys = a.keys().cmp(b.keys());
            if keys != Ordering::Equal {
                return keys;
            }
            for ((_, x), (_, y)) in a.iter().zip(b.iter()) {
                let c = compare(x, y);
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        _ => l.rank().cmp(&r.rank()),
    }
}

impl PartialEq for Val {
    fn eq(&self, other: &Self) -> bool {
        compare(self, other) == Ordering::Equal
    }
}

/// How a JSON integer outside the `i64` range becomes a value.
#[derive(Clone, Copy)]
enum WideInts {
    /// Exactly, as gojq reads JSON text (`fromjson`).
    Exact,
    /// As a float, as gojq sees an object of the Kubernetes API in shell-operator: apimachinery
    /// decodes a JSON integer into an `int64`, or a `float64` when it does not fit
    /// (`UnmarshalCaseSensitivePreserveInts`), and apply.go hands that map to gojq as it is.
    Float,
}

impl From<&Value> for Val {
    fn from(value: &Value) -> Self {
        from_json(value, WideInts::Exact)
    }
}

impl Val {
    /// An input object the way upstream's filters see it: integers within `i64` exact, the
    /// others floats (see [`WideInts::Float`]).
    pub fn from_api_object(value: &Value) -> Self {
        from_json(value, WideInts::Float)
    }
}

fn from_json(value: &Value, wide: WideInts) -> Val {
    match value {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => number_from_json(n, wide),
        Value::String(s) => Val::Str(Rc::from(s.as_str())),
        Value::Array(items) => Val::arr(items.iter().map(|v| from_json(v, wide)).collect()),
        Value::Object(map) => Val::obj(
            map.iter()
                .map(|(k, v)| (Rc::from(k.as_str()), from_json(v, wide)))
                .collect(),
        ),
    }
}

fn number_from_json(n: &serde_json::Number, wide: WideInts) -> Val {
    if let Some(i) = n.as_i64() {
        Val::Int(i)
    } else if let (Some(u), WideInts::Exact) = (n.as_u64(), wide) {
        Val::big(BigInt::from(u))
    } else {
        Val::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

impl Val {
    /// The value as JSON, the way gojq's results are marshalled: NaN is `null`, infinities are
    /// the largest finite floats, integral floats are integers.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(*b),
            Self::Int(i) => Value::from(*i),
            Self::Float(f) => float_to_json(*f),
            Self::Big(b) => big_to_json(b),
            Self::Str(s) => Value::String(s.to_string()),
            Self::Arr(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            Self::Obj(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

fn float_to_json(f: f64) -> Value {
    if f.is_nan() {
        return Value::Null;
    }
    let f = f.clamp(f64::MIN, f64::MAX);
    if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        return Value::from(f as i64);
    }
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn big_to_json(b: &BigInt) -> Value {
    if let Some(u) = b.to_u64() {
        return Value::from(u);
    }
    if b.is_zero() {
        return Value::from(0);
    }
    float_to_json(big_to_f64(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn order_follows_jq_type_ranks_then_values() {
        let vals: Vec<Val> = [
            json!(null),
            json!(false),
            json!(true),
            json!(-1),
            json!(1.5),
            json!("a"),
            json!([]),
            json!({}),
        ]
        .iter()
        .map(Val::from)
        .collect();
        for pair in vals.windows(2) {
            assert_eq!(compare(&pair[0], &pair[1]), Ordering::Less, "{pair:?}");
        }
    }

    #[test]
    fn objects_compare_by_sorted_keys_first() {
        let a = Val::from(&json!({"b": 1}));
        let b = Val::from(&json!({"a": 2, "c": 0}));
        assert_eq!(compare(&b, &a), Ordering::Less);
    }

    #[test]
    fn an_api_object_holds_integers_beyond_int64_as_floats_and_json_text_exactly() {
        let wide = json!({"a": [18446744073709551615u64], "b": 9223372036854775807i64});
        let object = Val::from_api_object(&wide);
        assert!(matches!(object.to_json()["b"], Value::Number(ref n) if n.is_i64()));
        match &object {
            Val::Obj(map) => match map.get("a") {
                Some(Val::Arr(items)) => assert!(matches!(items[0], Val::Float(_)), "{items:?}"),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        assert_eq!(Val::from(&wide).to_json(), wide);
    }

    #[test]
    fn integers_and_floats_compare_as_numbers() {
        assert_eq!(Val::Int(1), Val::Float(1.0));
        assert_eq!(
            Val::from(&json!(18446744073709551615u64)).to_json(),
            json!(18446744073709551615u64)
        );
    }
}
