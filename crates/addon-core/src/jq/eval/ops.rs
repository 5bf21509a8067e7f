//! Operators and path primitives with gojq's semantics: arithmetic, indexing, slicing, `getpath`/`setpath`/`delpaths`.

use num_bigint::BigInt;
use num_traits::{Signed, Zero};

use super::{Flow, Out, Res, err};
use crate::jq::ast::BinOp;
use crate::jq::encode::describe;
use crate::jq::value::{Map, Val, big_to_f64, compare, float_to_int};

fn type_error(what: &str, l: &Val, r: &Val) -> Flow {
    err(format!(
        "cannot {what}: {} and {}",
        describe(l),
        describe(r)
    ))
}

pub fn negate(v: &Val) -> Result<Val, Flow> {
    Ok(match v {
        Val::Int(i) => match i.checked_neg() {
            Some(n) => Val::Int(n),
            None => Val::big(-BigInt::from(*i)),
        },
        Val::Float(f) => Val::Float(-f),
        Val::Big(b) => Val::big(-(**b).clone()),
        other => return Err(err(format!("cannot negate: {}", describe(other)))),
    })
}

pub fn binop(op: BinOp, l: &Val, r: &Val) -> Result<Val, Flow> {
    use std::cmp::Ordering::*;
    let cmp = || compare(l, r);
    Ok(match op {
        BinOp::Add => add(l, r)?,
        BinOp::Sub => sub(l, r)?,
        BinOp::Mul => mul(l, r)?,
        BinOp::Div => div(l, r)?,
        BinOp::Mod => modulo(l, r)?,
        BinOp::Eq => Val::Bool(cmp() == Equal),
        BinOp::Ne => Val::Bool(cmp() != Equal),
        BinOp::Lt => Val::Bool(cmp() == Less),
        BinOp::Le => Val::Bool(cmp() != Greater),
        BinOp::Gt => Val::Bool(cmp() == Greater),
        BinOp::Ge => Val::Bool(cmp() != Less),
    })
}

/// Two numbers as integers (big when either is big), or `None` when either is a float.
fn as_bigs(l: &Val, r: &Val) -> Option<(BigInt, BigInt)> {
    let big = |v: &Val| match v {
        Val::Int(i) => Some(BigInt::from(*i)),
        Val::Big(b) => Some((**b).clone()),
        _ => None,
    };
    Some((big(l)?, big(r)?))
}

fn floats(l: &Val, r: &Val) -> Option<(f64, f64)> {
    Some((l.as_f64()?, r.as_f64()?))
}

pub fn add(l: &Val, r: &Val) -> Result<Val, Flow> {
    Ok(match (l, r) {
        (Val::Int(a), Val::Int(b)) => match a.checked_add(*b) {
            Some(c) => Val::Int(c),
            None => Val::big(BigInt::from(*a) + b),
        },
        (Val::Null, x) | (x, Val::Null) => x.clone(),
        (Val::Str(a), Val::Str(b)) => Val::str(format!("{a}{b}")),
        (Val::Arr(a), Val::Arr(b)) => {
            if a.is_empty() {
                r.clone()
            } else if b.is_empty() {
                l.clone()
            } else {
                Val::arr(a.iter().chain(b.iter()).cloned().collect())
            }
        }
        (Val::Obj(a), Val::Obj(b)) => {
            let mut m = (**a).clone();
            m.extend(b.iter().map(|(k, v)| (k.clone(), v.clone())));
            Val::obj(m)
        }
        _ if l.is_number() && r.is_number() => match as_bigs(l, r) {
            Some((a, b)) => Val::big(a + b),
            None => number_float(l, r, |a, b| a + b),
        },
        _ => return Err(type_error("add", l, r)),
    })
}

fn number_float(l: &Val, r: &Val, f: impl Fn(f64, f64) -> f64) -> Val {
    let (a, b) = floats(l, r).unwrap_or((f64::NAN, f64::NAN));
    Val::Float(f(a, b))
}

pub fn sub(l: &Val, r: &Val) -> Result<Val, Flow> {
    Ok(match (l, r) {
        (Val::Int(a), Val::Int(b)) => match a.checked_sub(*b) {
            Some(c) => Val::Int(c),
            None => Val::big(BigInt::from(*a) - b),
        },
        (Val::Arr(a), Val::Arr(b)) => Val::arr(
            a.iter()
                .filter(|x| !b.iter().any(|y| compare(x, y).is_eq()))
                .cloned()
                .collect(),
        ),
        _ if l.is_number() && r.is_number() => match as_bigs(l, r) {
            Some((a, b)) => Val::big(a - b),
            None => number_float(l, r, |a, b| a - b),
        },
        _ => return Err(type_error("subtract", l, r)),
    })
}

pub fn mul(l: &Val, r: &Val) -> Result<Val, Flow> {
    Ok(match (l, r) {
        (Val::Int(a), Val::Int(b)) => match a.checked_mul(*b) {
            Some(c) => Val::Int(c),
            None => Val::big(BigInt::from(*a) * b),
        },
        (Val::Obj(a), Val::Obj(b)) => Val::obj(deep_merge(a, b)),
        (Val::Str(s), n) | (n, Val::Str(s)) if n.is_number() => {
            repeat_string(s, n.as_f64().unwrap_or(0.0))
        }
        _ if l.is_number() && r.is_number() => match as_bigs(l, r) {
            Some((a, b)) => Val::big(a * b),
            None => number_float(l, r, |a, b| a * b),
        },
        _ => return Err(type_error("multiply", l, r)),
    })
}

fn deep_merge(l: &Map, r: &Map) -> Map {
    let mut m = l.clone();
    for (k, v) in r {
        let merged = match (m.get(k), v) {
            (Some(Val::Obj(a)), Val::Obj(b)) => Val::obj(deep_merge(a, b)),
            _ => v.clone(),
        };
        m.insert(k.clone(), merged);
    }
    m
}

fn repeat_string(s: &str, n: f64) -> Val {
    if n < 0.0 || n.is_nan() || (!s.is_empty() && n > (0x1000_0000 / s.len()) as f64) {
        return Val::Null;
    }
    // gojq repeats int(n) times; zero times is an empty string.
    Val::str(s.repeat(n as usize))
}

pub fn div(l: &Val, r: &Val) -> Result<Val, Flow> {
    let zero = || err(format!("cannot divide {} by: {}", describe(l), describe(r)));
    Ok(match (l, r) {
        (Val::Int(a), Val::Int(b)) => {
            if *b == 0 {
                return Err(zero());
            }
            match (a.checked_rem(*b), a.checked_div(*b)) {
                (Some(0), Some(q)) => Val::Int(q),
                _ => Val::Float(*a as f64 / *b as f64),
            }
        }
        (Val::Str(a), Val::Str(b)) => split_string(a, b),
        _ if l.is_number() && r.is_number() => match as_bigs(l, r) {
            Some((a, b)) => {
                if b.is_zero() {
                    return Err(zero());
                }
                if (&a % &b).is_zero() {
                    Val::big(a / b)
                } else {
                    Val::Float(big_to_f64(&a) / big_to_f64(&b))
                }
            }
            None => {
                let (a, b) = floats(l, r).unwrap_or((f64::NAN, f64::NAN));
                if b == 0.0 {
                    return Err(zero());
                }
                Val::Float(a / b)
            }
        },
        _ => return Err(type_error("divide", l, r)),
    })
}

/// `"a,b" / ","`: the string split on the separator (an empty string gives `[]`).
pub fn split_string(s: &str, sep: &str) -> Val {
    if s.is_empty() {
        return Val::arr(Vec::new());
    }
    let parts: Vec<Val> = if sep.is_empty() {
        s.chars().map(|c| Val::str(c.to_string())).collect()
    } else {
        s.split(sep).map(Val::str).collect()
    };
    Val::arr(parts)
}

pub fn modulo(l: &Val, r: &Val) -> Result<Val, Flow> {
    let zero = || err(format!("cannot modulo {} by: {}", describe(l), describe(r)));
    Ok(match (l, r) {
        (Val::Int(a), Val::Int(b)) => {
            if *b == 0 {
                return Err(zero());
            }
            Val::Int(a.wrapping_rem(*b))
        }
        _ if l.is_number() && r.is_number() => match as_bigs(l, r) {
            Some((a, b)) => {
                if b.is_zero() {
                    return Err(zero());
                }
                Val::big(a % b)
            }
            None => {
                let (a, b) = floats(l, r).unwrap_or((f64::NAN, f64::NAN));
                let bi = float_to_int(b);
                if bi == 0 || b.is_nan() {
                    return Err(zero());
                }
                if a.is_nan() {
                    return Ok(Val::Float(f64::NAN));
                }
                Val::Int(float_to_int(a).wrapping_rem(bi))
            }
        },
        _ => return Err(type_error("modulo", l, r)),
    })
}

/// `.name` in value mode: [`index`] with a string key, without making a value of the key.
pub fn index_str(v: &Val, key: &str) -> Result<Val, Flow> {
    match v {
        Val::Null => Ok(Val::Null),
        Val::Obj(m) => Ok(m.get(key).cloned().unwrap_or(Val::Null)),
        _ => Err(err(format!("expected an object but got: {}", describe(v)))),
    }
}

/// `.[key]` in value mode (gojq's `_index`): `null` indexes to `null`.
pub fn index(v: &Val, key: &Val) -> Result<Val, Flow> {
    match key {
        Val::Str(k) => match v {
            Val::Null => Ok(Val::Null),
            Val::Obj(m) => Ok(m.get(&**k).cloned().unwrap_or(Val::Null)),
            _ => Err(err(format!("expected an object but got: {}", describe(v)))),
        },
        Val::Int(_) | Val::Float(_) | Val::Big(_) => {
            let i = key.as_int().unwrap_or(0);
            match v {
                Val::Null => Ok(Val::Null),
                Val::Arr(items) => Ok(array_at(items, i).cloned().unwrap_or(Val::Null)),
                Val::Str(s) => Ok(string_at(s, i)),
                _ => Err(err(format!("expected an array but got: {}", describe(v)))),
            }
        }
        Val::Arr(needle) => match v {
            Val::Null => Ok(Val::Null),
            Val::Arr(items) => Ok(array_indices(items, needle)),
            _ => Err(err(format!("expected an array but got: {}", describe(v)))),
        },
        Val::Obj(m) => {
            if matches!(v, Val::Null) {
                return Ok(Val::Null);
            }
            let (Some(start), Some(end)) = (m.get("start"), m.get("end")) else {
                return Err(err(format!(
                    "expected {{\"start\", \"end\"}} object but got: {}",
                    describe(key)
                )));
            };
            slice(v, start, end)
        }
        _ => Err(err(match v {
            Val::Arr(_) => format!(
                "expected a number for indexing an array but got: {}",
                describe(key)
            ),
            Val::Str(_) => format!(
                "expected a number for indexing a string but got: {}",
                describe(key)
            ),
            _ => format!(
                "expected a string for object key but got: {}",
                describe(key)
            ),
        })),
    }
}

fn clamp_index(i: i64, min: i64, max: i64) -> i64 {
    let i = if i < 0 { i.saturating_add(max) } else { i };
    i.clamp(min, max.max(min))
}

fn array_at(items: &[Val], i: i64) -> Option<&Val> {
    let j = clamp_index(i, -1, items.len() as i64);
    if j >= 0 { items.get(j as usize) } else { None }
}

fn string_at(s: &str, i: i64) -> Val {
    let len = s.chars().count() as i64;
    let j = clamp_index(i, -1, len);
    if j >= 0 && j < len {
        s.chars()
            .nth(j as usize)
            .map_or(Val::Null, |c| Val::str(c.to_string()))
    } else {
        Val::Null
    }
}

/// The positions where `needle` occurs in `items` (`.[[1,2]]`, `indices`).
pub fn array_indices(items: &[Val], needle: &[Val]) -> Val {
    if needle.is_empty() {
        return Val::Null;
    }
    let mut found = Vec::new();
    if needle.len() <= items.len() {
        for i in 0..=items.len() - needle.len() {
            if items[i..i + needle.len()]
                .iter()
                .zip(needle)
                .all(|(a, b)| compare(a, b).is_eq())
            {
                found.push(Val::Int(i as i64));
            }
        }
    }
    Val::arr(found)
}

/// Resolves slice bounds against a length, gojq's way: `null` start is 0, `null` end the length.
fn slice_range(len: i64, start: &Val, end: &Val, what: &str) -> Result<(usize, usize), Flow> {
    let bound = |v: &Val| -> Result<Option<i64>, Flow> {
        match v {
            Val::Null => Ok(None),
            n if n.is_number() => Ok(n.as_int()),
            other => Err(err(format!(
                "expected a number for indexing {what} but got: {}",
                describe(other)
            ))),
        }
    };
    let s = bound(start)?.map_or(0, |i| clamp_index(i, 0, len));
    let e = bound(end)?.map_or(len, |i| clamp_index(i, s, len));
    Ok((s as usize, e as usize))
}

pub fn slice(v: &Val, start: &Val, end: &Val) -> Result<Val, Flow> {
    match v {
        Val::Null => Ok(Val::Null),
        Val::Arr(items) => {
            let (s, e) = slice_range(items.len() as i64, start, end, "an array")?;
            Ok(Val::arr(items[s..e].to_vec()))
        }
        Val::Str(text) => {
            let len = text.chars().count() as i64;
            let (s, e) = slice_range(len, start, end, "a string")?;
            Ok(Val::str(
                text.chars().skip(s).take(e - s).collect::<String>(),
            ))
        }
        _ => Err(err(format!("expected an array but got: {}", describe(v)))),
    }
}

/// `.[]`: array items, or object values in key order.
pub fn iterate(v: &Val, out: Out) -> Res {
    match v {
        Val::Arr(items) => items.iter().try_for_each(|x| out(x.clone())),
        Val::Obj(m) => m.values().try_for_each(|x| out(x.clone())),
        _ => Err(err(format!("cannot iterate over: {}", describe(v)))),
    }
}

pub fn getpath(v: &Val, path: &[Val]) -> Result<Val, Flow> {
    let mut cur = v.clone();
    for key in path {
        cur = match cur {
            Val::Null | Val::Arr(_) | Val::Obj(_) => index(&cur, key)?,
            _ => {
                return Err(err(format!(
                    "getpath({}) cannot be applied to: {}",
                    describe(&Val::arr(path.to_vec())),
                    describe(v)
                )));
            }
        };
    }
    Ok(cur)
}

/// `setpath`: writes `new` at `path`, creating missing parents (objects for keys, arrays for
/// indices) as gojq does.
pub fn setpath(v: &Val, path: &[Val], new: Val) -> Result<Val, Flow> {
    let Some((key, rest)) = path.split_first() else {
        return Ok(new);
    };
    let child = |cur: &Val| -> Result<Val, Flow> {
        if matches!(cur, Val::Null) {
            return Ok(Val::Null);
        }
        index(cur, key)
    };
    match key {
        Val::Str(k) => {
            let mut map = object_of(v)?;
            let old = map.get(&**k).cloned().unwrap_or(Val::Null);
            map.insert(k.clone(), setpath(&old, rest, new)?);
            Ok(Val::obj(map))
        }
        Val::Int(_) | Val::Float(_) | Val::Big(_) => {
            let i = key.as_int().unwrap_or(0);
            let mut items = array_of(v)?;
            let j = clamp_index(i, -1, items.len() as i64);
            if j < 0 {
                return Err(err(format!("array index should not be negative: {i}")));
            }
            if j >= items.len() as i64 && i >= 0x800_0000 {
                return Err(err(format!("array index too large: {i}")));
            }
            let idx = if j < items.len() as i64 {
                j as usize
            } else {
                i as usize
            };
            let old = items.get(idx).cloned().unwrap_or(Val::Null);
            let value = setpath(&old, rest, new)?;
            if idx >= items.len() {
                items.resize(idx + 1, Val::Null);
            }
            items[idx] = value;
            Ok(Val::arr(items))
        }
        Val::Obj(bounds) => {
            let mut items = array_of(v)?;
            let (s, e) = slice_bounds(items.len(), bounds)?;
            let part = setpath(&child(v)?, rest, new)?;
            let Val::Arr(part) = part else {
                return Err(err(format!(
                    "expected an array but got: {}",
                    describe(&part)
                )));
            };
            items.splice(s..e, part.iter().cloned());
            Ok(Val::arr(items))
        }
        _ => Err(key_error(v, key)),
    }
}

/// `delpaths`: deletes every path, as jq does it: the paths sorted and deleted from the last,
/// so an index still names the element it named before any deletion.
pub fn delpaths(v: &Val, paths: &[Val]) -> Result<Val, Flow> {
    let mut sorted = Vec::with_capacity(paths.len());
    for p in paths {
        match p {
            Val::Arr(path) => sorted.push(path),
            _ => return Err(err(format!("expected an array but got: {}", describe(p)))),
        }
    }
    sorted.sort_by(|a, b| compare(&Val::Arr((*a).clone()), &Val::Arr((*b).clone())));
    sorted.dedup();
    let mut acc = v.clone();
    for path in sorted.into_iter().rev() {
        acc = delpath(&acc, path)?;
    }
    Ok(acc)
}

/// Deletes one path; a path that leads nowhere leaves the value as it is.
fn delpath(v: &Val, path: &[Val]) -> Result<Val, Flow> {
    let Some((key, rest)) = path.split_first() else {
        return Ok(Val::Null);
    };
    if !rest.is_empty() {
        let child = index(v, key)?;
        if matches!(child, Val::Null) && !present(v, key) {
            return Ok(v.clone());
        }
        return setpath(v, std::slice::from_ref(key), delpath(&child, rest)?);
    }
    match key {
        Val::Str(k) => {
            let mut map = object_of(v)?;
            map.remove(&**k);
            Ok(Val::obj(map))
        }
        Val::Int(_) | Val::Float(_) | Val::Big(_) => {
            let mut items = array_of(v)?;
            let j = clamp_index(key.as_int().unwrap_or(0), -1, items.len() as i64);
            if j >= 0 && (j as usize) < items.len() {
                items.remove(j as usize);
            }
            Ok(Val::arr(items))
        }
        Val::Obj(bounds) => {
            let mut items = array_of(v)?;
            let (s, e) = slice_bounds(items.len(), bounds)?;
            items.drain(s..e);
            Ok(Val::arr(items))
        }
        _ => Err(key_error(v, key)),
    }
}

/// Whether `key` names something that exists in `v` (a key of an object, an index in range).
fn present(v: &Val, key: &Val) -> bool {
    match (v, key) {
        (Val::Obj(m), Val::Str(k)) => m.contains_key(&**k),
        (Val::Arr(items), n) if n.is_number() => {
            let j = clamp_index(n.as_int().unwrap_or(0), -1, items.len() as i64);
            j >= 0 && (j as usize) < items.len()
        }
        (Val::Arr(_), Val::Obj(_)) => true,
        _ => false,
    }
}

fn object_of(v: &Val) -> Result<Map, Flow> {
    match v {
        Val::Null => Ok(Map::new()),
        Val::Obj(m) => Ok((**m).clone()),
        other => Err(err(format!(
            "expected an object but got: {}",
            describe(other)
        ))),
    }
}

fn array_of(v: &Val) -> Result<Vec<Val>, Flow> {
    match v {
        Val::Null => Ok(Vec::new()),
        Val::Arr(a) => Ok(a.to_vec()),
        other => Err(err(format!(
            "expected an array but got: {}",
            describe(other)
        ))),
    }
}

/// The range a `{"start", "end"}` path element selects in an array of `len` items.
fn slice_bounds(len: usize, bounds: &Map) -> Result<(usize, usize), Flow> {
    let (Some(start), Some(end)) = (bounds.get("start"), bounds.get("end")) else {
        return Err(err(format!(
            "expected {{\"start\", \"end\"}} object but got: {}",
            describe(&Val::obj(bounds.clone()))
        )));
    };
    let len = len as i64;
    let s = start.as_int().map_or(0, |i| clamp_index(i, 0, len));
    let e = match end {
        n if n.is_number() => clamp_index(n.as_int().unwrap_or(0), s, len),
        _ => len,
    };
    Ok((s as usize, e as usize))
}

fn key_error(v: &Val, key: &Val) -> Flow {
    err(match v {
        Val::Arr(_) => format!(
            "expected a number for indexing an array but got: {}",
            describe(key)
        ),
        _ => format!(
            "expected a string for object key but got: {}",
            describe(key)
        ),
    })
}

/// Whether `n` is negative, for numbers of any kind.
pub fn is_negative(n: &Val) -> bool {
    match n {
        Val::Int(i) => *i < 0,
        Val::Float(f) => *f < 0.0,
        Val::Big(b) => b.is_negative(),
        _ => false,
    }
}
