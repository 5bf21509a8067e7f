//! The functions written in Rust, looked up by name and arity when a filter is compiled, with gojq's semantics.

mod collections;
mod control;
mod convert;
mod math;
mod paths;
mod sorting;
mod strings;
mod time;

use super::{Ctx, Env, Flow, Out, Res, err, eval_paths};
use crate::jq::ast::{Ast, Native};
use crate::jq::encode;
use crate::jq::value::{Map, Val};

pub use crate::jq::encode::describe;
use collections::{
    add, bsearch, contains_fn, flatten, flatten_depth, from_entries, has, keys, length, reverse,
    to_entries, transpose, utf8bytelength, values_of,
};
use control::{
    first, halt_error, isvalid, last, limit, range, recurse_with, repeat, skip, until, while_loop,
};
pub(super) use convert::{format, tostring};
use convert::{fromjson, join, tonumber};
use math::{MATH0, MATH2, abs, float_pred, frexp, modf, plus};
pub(super) use paths::call_paths;
use paths::{delpaths, getpath, setpath};
use sorting::{group_by, min_max, sort_by, unique_by};

type F0 = fn(&Val) -> Result<Val, Flow>;

type F1 = fn(&Val, &Val) -> Result<Val, Flow>;

type F2 = fn(&Val, &Val, &Val) -> Result<Val, Flow>;

type F3 = fn(&Val, &Val, &Val, &Val) -> Result<Val, Flow>;

/// How a native takes its arguments: as values (every combination of their outputs), or as
/// filters handled one by one in [`call`].
pub(super) enum Kind {
    V0(F0),
    V1(F1),
    V2(F2),
    V3(F3),
    Filter,
}

static CORE: &[(&str, usize, Kind)] = &[
    ("empty", 0, Kind::Filter),
    ("not", 0, Kind::V0(|v| Ok(Val::Bool(!v.truthy())))),
    ("path", 1, Kind::Filter),
    ("error", 0, Kind::V0(|v| Err(Flow::Error(v.clone())))),
    ("error", 1, Kind::V1(|_, m| Err(Flow::Error(m.clone())))),
    ("halt", 0, Kind::V0(|_| Err(Flow::Halt))),
    (
        "halt_error",
        0,
        Kind::V0(|v| Err(Flow::HaltError(v.clone()))),
    ),
    ("halt_error", 1, Kind::V1(halt_error)),
    ("env", 0, Kind::V0(|_| Ok(Val::obj(Map::new())))),
    ("builtins", 0, Kind::Filter),
    ("input_filename", 0, Kind::V0(|_| Ok(Val::Null))),
    ("debug", 0, Kind::V0(|v| Ok(v.clone()))),
    ("debug", 1, Kind::Filter),
    ("stderr", 0, Kind::V0(|v| Ok(v.clone()))),
    ("input", 0, Kind::V0(|_| Err(err("input is not allowed")))),
    ("inputs", 0, Kind::Filter),
    ("limit", 2, Kind::Filter),
    ("skip", 2, Kind::Filter),
    ("first", 1, Kind::Filter),
    ("last", 1, Kind::Filter),
    ("until", 2, Kind::Filter),
    ("while", 2, Kind::Filter),
    ("repeat", 1, Kind::Filter),
    ("range", 1, Kind::Filter),
    ("range", 2, Kind::Filter),
    ("range", 3, Kind::Filter),
    ("recurse", 0, Kind::Filter),
    ("recurse", 1, Kind::Filter),
    ("getpath", 1, Kind::V1(getpath)),
    ("setpath", 2, Kind::V2(setpath)),
    ("delpaths", 1, Kind::V1(delpaths)),
    ("length", 0, Kind::V0(length)),
    ("utf8bytelength", 0, Kind::V0(utf8bytelength)),
    ("abs", 0, Kind::V0(abs)),
    ("keys", 0, Kind::V0(keys)),
    ("keys_unsorted", 0, Kind::V0(keys)),
    ("has", 1, Kind::V1(has)),
    ("contains", 1, Kind::V1(contains_fn)),
    ("to_entries", 0, Kind::V0(to_entries)),
    ("from_entries", 0, Kind::V0(from_entries)),
    ("add", 0, Kind::V0(add)),
    ("type", 0, Kind::V0(|v| Ok(Val::str(v.type_name())))),
    ("tostring", 0, Kind::V0(|v| Ok(Val::str(tostring(v))))),
    (
        "tojson",
        0,
        Kind::V0(|v| Ok(Val::str(encode::to_json_text(v)))),
    ),
    ("fromjson", 0, Kind::V0(fromjson)),
    ("tonumber", 0, Kind::V0(tonumber)),
    ("reverse", 0, Kind::V0(reverse)),
    ("infinite", 0, Kind::V0(|_| Ok(Val::Float(f64::INFINITY)))),
    ("nan", 0, Kind::V0(|_| Ok(Val::Float(f64::NAN)))),
    (
        "isinfinite",
        0,
        Kind::V0(|v| float_pred("isinfinite", v, f64::is_infinite)),
    ),
    (
        "isnan",
        0,
        Kind::V0(|v| float_pred("isnan", v, f64::is_nan)),
    ),
    (
        "isfinite",
        0,
        Kind::V0(|v| float_pred("isfinite", v, |x| !x.is_infinite())),
    ),
    (
        "isnormal",
        0,
        Kind::V0(|v| float_pred("isnormal", v, f64::is_normal)),
    ),
    ("isvalid", 1, Kind::Filter),
    ("frexp", 0, Kind::V0(frexp)),
    ("modf", 0, Kind::V0(modf)),
    ("now", 0, Kind::V0(|_| Ok(Val::Float(time::now())))),
    ("mktime", 0, Kind::V0(time::mktime)),
    ("gmtime", 0, Kind::V0(time::gmtime)),
    ("localtime", 0, Kind::V0(time::gmtime)),
    ("strftime", 1, Kind::V1(time::strftime)),
    ("strflocaltime", 1, Kind::V1(time::strftime)),
    ("strptime", 1, Kind::V1(time::strptime)),
    ("transpose", 0, Kind::V0(transpose)),
    ("bsearch", 1, Kind::V1(bsearch)),
    ("flatten", 0, Kind::V0(|v| flatten(v, &Val::Int(-1)))),
    ("flatten", 1, Kind::V1(flatten_depth)),
    ("min", 0, Kind::V0(|v| min_max(v, v, true, "min"))),
    ("max", 0, Kind::V0(|v| min_max(v, v, false, "max"))),
    ("_min_by", 1, Kind::V1(|v, k| min_max(v, k, true, "min_by"))),
    (
        "_max_by",
        1,
        Kind::V1(|v, k| min_max(v, k, false, "max_by")),
    ),
    ("sort", 0, Kind::V0(|v| sort_by(v, v, "sort"))),
    ("_sort_by", 1, Kind::V1(|v, k| sort_by(v, k, "sort_by"))),
    ("_group_by", 1, Kind::V1(group_by)),
    ("unique", 0, Kind::V0(|v| unique_by(v, v, "unique"))),
    (
        "_unique_by",
        1,
        Kind::V1(|v, k| unique_by(v, k, "unique_by")),
    ),
    ("join", 1, Kind::V1(join)),
    ("_plus", 0, Kind::V0(plus)),
    (
        "toarray",
        0,
        Kind::V0(|v| {
            Ok(match v {
                Val::Arr(_) => v.clone(),
                other => Val::arr(vec![other.clone()]),
            })
        }),
    ),
];

fn tables() -> impl Iterator<Item = &'static (&'static str, usize, Kind)> {
    CORE.iter().chain(MATH0).chain(MATH2).chain(strings::TABLE)
}

fn entry(n: Native) -> Option<&'static (&'static str, usize, Kind)> {
    tables().nth(n.0 as usize)
}

/// The native of `name/arity`, if there is one.
pub fn lookup(name: &str, arity: usize) -> Option<Native> {
    tables()
        .position(|(n, a, _)| *n == name && *a == arity)
        .map(|i| Native(i as u16))
}

/// Names of every native, as `name/arity`.
pub fn names() -> impl Iterator<Item = String> {
    tables()
        .filter(|(n, _, _)| !n.starts_with('_'))
        .map(|(n, a, _)| format!("{n}/{a}"))
}

pub fn call<'p>(
    ctx: &Ctx<'p>,
    n: Native,
    args: &'p [Ast],
    env: &Env<'p>,
    input: Val,
    out: Out,
) -> Res {
    let Some((name, _, kind)) = entry(n) else {
        return Err(err("unknown native function"));
    };
    match kind {
        Kind::V0(f) => out(f(&input)?),
        Kind::V1(f) => ctx.cartesian(args, env, &input, &mut |_, a| out(f(&input, &a[0])?)),
        Kind::V2(f) => ctx.cartesian(args, env, &input, &mut |_, a| out(f(&input, &a[0], &a[1])?)),
        Kind::V3(f) => ctx.cartesian(args, env, &input, &mut |_, a| {
            out(f(&input, &a[0], &a[1], &a[2])?)
        }),
        Kind::Filter => call_filter(ctx, name, args, env, input, out),
    }
}

fn call_filter<'p>(
    ctx: &Ctx<'p>,
    name: &str,
    args: &'p [Ast],
    env: &Env<'p>,
    input: Val,
    out: Out,
) -> Res {
    match (name, args) {
        ("empty", _) | ("inputs", _) => Ok(()),
        ("path", [f]) => eval_paths(ctx, f, env, (Vec::new(), input), &mut |(p, _)| {
            out(Val::arr(p))
        }),
        ("builtins", _) => out(Val::arr(names().map(Val::str).collect())),
        ("debug", [_]) => out(input),
        ("limit", [n, f]) => ctx.cartesian(std::slice::from_ref(n), env, &input, &mut |ctx, nv| {
            limit(ctx, &nv[0], f, env, input.clone(), out)
        }),
        ("skip", [n, f]) => ctx.cartesian(std::slice::from_ref(n), env, &input, &mut |ctx, nv| {
            skip(ctx, &nv[0], f, env, input.clone(), out)
        }),
        ("first", [f]) => first(ctx, f, env, input, out),
        ("last", [f]) => last(ctx, f, env, input, out),
        ("until", [cond, next]) => until(ctx, cond, next, env, input, out),
        ("while", [cond, update]) => while_loop(ctx, cond, update, env, input, out),
        ("repeat", [f]) => repeat(ctx, f, env, input, out),
        ("range", _) => range(ctx, args, env, input, out),
        ("recurse", []) => super::recurse_values(input, out),
        ("recurse", [f]) => recurse_with(ctx, f, env, input, out),
        ("isvalid", [f]) => isvalid(ctx, f, env, input, out),
        _ => Err(err(format!("{name}/{} cannot be called here", args.len()))),
    }
}

fn type_error(name: &str, v: &Val) -> Flow {
    err(format!("{name} cannot be applied to: {}", describe(v)))
}

fn type_error1(name: &str, v: &Val, x: &Val) -> Flow {
    err(format!(
        "{name}({}) cannot be applied to: {}",
        describe(x),
        describe(v)
    ))
}
