//! Natives on arrays and objects: `length`, `keys`, `has`, `contains`, entries, `add`, `reverse`, `transpose`, `bsearch`, `flatten`.

use super::super::{Flow, err, ops};
use super::{abs, type_error, type_error1};
use crate::jq::encode::describe;
use crate::jq::value::{Map, Val, compare};
use std::rc::Rc;

pub(super) fn length(v: &Val) -> Result<Val, Flow> {
    Ok(match v {
        Val::Null => Val::Int(0),
        Val::Int(_) | Val::Float(_) | Val::Big(_) => abs(v)?,
        Val::Str(s) => Val::Int(s.chars().count() as i64),
        Val::Arr(a) => Val::Int(a.len() as i64),
        Val::Obj(m) => Val::Int(m.len() as i64),
        Val::Bool(_) => return Err(type_error("length", v)),
    })
}

pub(super) fn utf8bytelength(v: &Val) -> Result<Val, Flow> {
    match v {
        Val::Str(s) => Ok(Val::Int(s.len() as i64)),
        _ => Err(type_error("utf8bytelength", v)),
    }
}

pub(super) fn keys(v: &Val) -> Result<Val, Flow> {
    match v {
        Val::Arr(a) => Ok(Val::arr((0..a.len()).map(|i| Val::Int(i as i64)).collect())),
        Val::Obj(m) => Ok(Val::arr(m.keys().map(|k| Val::Str(k.clone())).collect())),
        _ => Err(type_error("keys", v)),
    }
}

pub(super) fn has(v: &Val, k: &Val) -> Result<Val, Flow> {
    match (v, k) {
        (Val::Arr(a), n) if n.is_number() => {
            let i = n.as_int().unwrap_or(-1);
            Ok(Val::Bool(i >= 0 && (i as usize) < a.len()))
        }
        (Val::Obj(m), Val::Str(s)) => Ok(Val::Bool(m.contains_key(&**s))),
        (Val::Null, _) => Ok(Val::Bool(false)),
        _ => Err(type_error1("has", v, k)),
    }
}

pub(super) fn contains(l: &Val, r: &Val) -> Result<bool, Flow> {
    Ok(match (l, r) {
        (Val::Str(a), Val::Str(b)) => a.contains(&**b),
        (Val::Arr(a), Val::Arr(b)) => {
            for y in b.iter() {
                let mut found = false;
                for x in a.iter() {
                    if matches!(contains(x, y), Ok(true)) {
                        found = true;
                        break;
                    }
                }
                if !found {
                    return Ok(false);
                }
            }
            true
        }
        (Val::Obj(a), Val::Obj(b)) => {
            if a.len() < b.len() {
                return Ok(false);
            }
            for (k, y) in b.iter() {
                match a.get(k) {
                    Some(x) if matches!(contains(x, y), Ok(true)) => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        _ if l.is_number() && r.is_number() => compare(l, r).is_eq(),
        (Val::Null, Val::Null) => true,
        (Val::Bool(a), Val::Bool(b)) if a == b => true,
        _ => return Err(type_error1("contains", l, r)),
    })
}

pub(super) fn contains_fn(l: &Val, r: &Val) -> Result<Val, Flow> {
    contains(l, r).map(Val::Bool)
}

pub(super) fn entry_obj(key: Val, value: Val) -> Val {
    let mut m = Map::new();
    m.insert(Rc::from("key"), key);
    m.insert(Rc::from("value"), value);
    Val::obj(m)
}

pub(super) fn to_entries(v: &Val) -> Result<Val, Flow> {
    match v {
        Val::Arr(a) => Ok(Val::arr(
            a.iter()
                .enumerate()
                .map(|(i, x)| entry_obj(Val::Int(i as i64), x.clone()))
                .collect(),
        )),
        Val::Obj(m) => Ok(Val::arr(
            m.iter()
                .map(|(k, x)| entry_obj(Val::Str(k.clone()), x.clone()))
                .collect(),
        )),
        _ => Err(type_error("to_entries", v)),
    }
}

pub(super) fn from_entries(v: &Val) -> Result<Val, Flow> {
    let Val::Arr(items) = v else {
        return Err(type_error("from_entries", v));
    };
    let mut out = Map::new();
    for item in items.iter() {
        let Val::Obj(e) = item else {
            return Err(type_error("from_entries", item));
        };
        let key = ["key", "Key", "name", "Name", "k", "K"]
            .iter()
            .find_map(|k| e.get(*k).filter(|x| x.truthy()));
        let key = match key {
            Some(Val::Str(s)) => s.clone(),
            Some(other) => {
                return Err(err(format!(
                    "from_entries cannot be applied to: {}: expected a string for object key but got: {}",
                    describe(v),
                    describe(other)
                )));
            }
            None => {
                return Err(err(format!(
                    "from_entries cannot be applied to: {}: expected a string for object key but got: null",
                    describe(v)
                )));
            }
        };
        let value = ["value", "Value", "v", "V"]
            .iter()
            .find_map(|k| e.get(*k))
            .cloned()
            .unwrap_or(Val::Null);
        out.insert(key, value);
    }
    Ok(Val::obj(out))
}

/// The items of an array, or the values of an object in key order.
pub(super) fn values_of(v: &Val) -> Option<Vec<Val>> {
    match v {
        Val::Arr(a) => Some(a.to_vec()),
        Val::Obj(m) => Some(m.values().cloned().collect()),
        _ => None,
    }
}

pub(super) fn add(v: &Val) -> Result<Val, Flow> {
    let items = values_of(v).ok_or_else(|| type_error("add", v))?;
    let mut acc = Val::Null;
    let mut text: Option<String> = None;
    for x in items {
        match (&x, &mut text) {
            (Val::Null, _) => continue,
            (Val::Str(s), Some(t)) => {
                t.push_str(s);
                continue;
            }
            (Val::Str(s), None) if matches!(acc, Val::Null) => {
                text = Some(s.to_string());
                continue;
            }
            _ => {}
        }
        if let Some(t) = text.take() {
            acc = Val::str(t);
        }
        acc = ops::add(&acc, &x)?;
    }
    Ok(match text {
        Some(t) => Val::str(t),
        None => acc,
    })
}

pub(super) fn reverse(v: &Val) -> Result<Val, Flow> {
    match v {
        Val::Arr(a) => Ok(Val::arr(a.iter().rev().cloned().collect())),
        Val::Str(s) => Ok(Val::str(s.chars().rev().collect::<String>())),
        Val::Null => Ok(Val::arr(Vec::new())),
        _ => Err(type_error("reverse", v)),
    }
}

pub(super) fn transpose(v: &Val) -> Result<Val, Flow> {
    let Val::Arr(rows) = v else {
        return Err(type_error("transpose", v));
    };
    let mut width = 0;
    for r in rows.iter() {
        match r {
            Val::Arr(items) => width = width.max(items.len()),
            _ => return Err(type_error("transpose", v)),
        }
    }
    let cols = (0..width)
        .map(|j| {
            Val::arr(
                rows.iter()
                    .map(|r| match r {
                        Val::Arr(items) => items.get(j).cloned().unwrap_or(Val::Null),
                        _ => Val::Null,
                    })
                    .collect(),
            )
        })
        .collect();
    Ok(Val::arr(cols))
}

pub(super) fn bsearch(v: &Val, t: &Val) -> Result<Val, Flow> {
    let Val::Arr(items) = v else {
        return Err(type_error1("bsearch", v, t));
    };
    let i = items.partition_point(|x| compare(x, t).is_lt());
    if i < items.len() && compare(&items[i], t).is_eq() {
        Ok(Val::Int(i as i64))
    } else {
        Ok(Val::Int(-(i as i64) - 1))
    }
}

pub(super) fn flatten_depth(v: &Val, d: &Val) -> Result<Val, Flow> {
    match d.as_f64() {
        Some(x) if x < 0.0 => Err(err("flatten depth must not be negative")),
        Some(_) => flatten(v, d),
        None => Err(type_error("flatten", d)),
    }
}

pub(super) fn flatten(v: &Val, depth: &Val) -> Result<Val, Flow> {
    fn go(out: &mut Vec<Val>, items: &[Val], depth: f64) {
        for x in items {
            match x {
                Val::Arr(inner) if depth != 0.0 => go(out, inner, depth - 1.0),
                other => out.push(other.clone()),
            }
        }
    }
    let items = values_of(v).ok_or_else(|| type_error("flatten", v))?;
    let mut out = Vec::new();
    go(&mut out, &items, depth.as_f64().unwrap_or(-1.0));
    Ok(Val::arr(out))
}
