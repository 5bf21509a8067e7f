//! Natives that convert: `tostring`, `tonumber`, `fromjson`, `join`, and the `@format` strings.

use super::super::{Flow, err};
use super::{strings, type_error, type_error1, values_of};
use crate::jq::encode;
use crate::jq::encode::describe;
use crate::jq::value::Val;

pub fn tostring(v: &Val) -> String {
    match v {
        Val::Str(s) => s.to_string(),
        other => encode::to_json_text(other),
    }
}

pub(super) fn fromjson(v: &Val) -> Result<Val, Flow> {
    let Val::Str(s) = v else {
        return Err(type_error("fromjson", v));
    };
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(j) => Ok(Val::from(&j)),
        Err(e) => Err(err(format!(
            "fromjson cannot be applied to: {}: {e}",
            describe(v)
        ))),
    }
}

pub(super) fn tonumber(v: &Val) -> Result<Val, Flow> {
    match v {
        n if n.is_number() => Ok(n.clone()),
        Val::Str(s) => {
            if !is_json_number(s) {
                return Err(err(format!(
                    "tonumber cannot be applied to: {}: invalid number",
                    describe(v)
                )));
            }
            Ok(super::super::lit_val(&crate::jq::ast::Lit::number(s)))
        }
        _ => Err(type_error("tonumber", v)),
    }
}

/// Whether `s` is a number as gojq's lexer reads one: digits, an optional fraction and exponent.
pub(super) fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > start
    };
    let int = digits(&mut i);
    let mut frac = false;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = digits(&mut i);
    }
    if !int && !frac {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == b.len()
}

pub(super) fn join(v: &Val, sep: &Val) -> Result<Val, Flow> {
    let items = values_of(v).ok_or_else(|| type_error1("join", v, sep))?;
    if items.is_empty() {
        return Ok(Val::str(""));
    }
    let sep = match sep {
        Val::Str(s) => s.to_string(),
        _ if items.len() > 1 => return Err(type_error1("join", v, sep)),
        _ => String::new(),
    };
    let mut parts = Vec::with_capacity(items.len());
    for x in &items {
        parts.push(match x {
            Val::Null => String::new(),
            Val::Str(s) => s.to_string(),
            Val::Bool(_) | Val::Int(_) | Val::Float(_) | Val::Big(_) => encode::to_json_text(x),
            _ => return Err(err(format!("cannot join: {}", describe(x)))),
        });
    }
    Ok(Val::str(parts.join(&sep)))
}

/// `@name` applied to a value.
pub fn format(name: &str, v: &Val) -> Result<Val, Flow> {
    strings::format(name, v)
}
