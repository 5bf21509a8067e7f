//! The functions written in Rust, looked up by name and arity when a filter is compiled, with gojq's semantics.

use std::rc::Rc;

use super::ast::Ast;
use super::encode;
use super::eval::{Ctx, Env, Flow, Out, Res, err};
use super::ops;
use super::path::{PathOut, PathVal, eval_paths};
use super::strings;
use super::time;
use super::value::{Map, Val, compare};

pub use super::encode::describe;

/// A native function: its index in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Native(u16);

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

macro_rules! math0 {
    ($($name:literal => $f:expr),* $(,)?) => {
        &[$(($name, 0, Kind::V0(|v| math1($name, v, $f))),)*]
    };
}

static MATH0: &[(&str, usize, Kind)] = math0! {
    "floor" => f64::floor, "ceil" => f64::ceil, "round" => f64::round, "trunc" => f64::trunc,
    "rint" => f64::round_ties_even, "nearbyint" => f64::round_ties_even,
    "fabs" => f64::abs, "sqrt" => f64::sqrt, "cbrt" => f64::cbrt,
    "exp" => f64::exp, "exp2" => f64::exp2, "exp10" => |x: f64| 10f64.powf(x), "expm1" => f64::exp_m1,
    "log" => f64::ln, "log10" => f64::log10, "log1p" => f64::ln_1p, "log2" => f64::log2,
    "logb" => |x: f64| if x == 0.0 { f64::NEG_INFINITY } else if x.is_infinite() { f64::INFINITY } else { x.abs().log2().floor() },
    "sin" => f64::sin, "cos" => f64::cos, "tan" => f64::tan,
    "asin" => f64::asin, "acos" => f64::acos, "atan" => f64::atan,
    "sinh" => f64::sinh, "cosh" => f64::cosh, "tanh" => f64::tanh,
    "asinh" => f64::asinh, "acosh" => f64::acosh, "atanh" => f64::atanh,
    "significand" => significand,
    "gamma" => libm::tgamma, "lgamma" => libm::lgamma, "tgamma" => libm::tgamma,
    "lgamma_r" => libm::lgamma, "erf" => libm::erf, "erfc" => libm::erfc,
    "j0" => libm::j0, "j1" => libm::j1, "y0" => libm::y0, "y1" => libm::y1,
};

static MATH2: &[(&str, usize, Kind)] = &[
    ("pow", 2, Kind::V2(|_, a, b| math2("pow", a, b, f64::powf))),
    (
        "atan2",
        2,
        Kind::V2(|_, a, b| math2("atan2", a, b, f64::atan2)),
    ),
    ("fmin", 2, Kind::V2(|_, a, b| math2("fmin", a, b, f64::min))),
    ("fmax", 2, Kind::V2(|_, a, b| math2("fmax", a, b, f64::max))),
    (
        "fmod",
        2,
        Kind::V2(|_, a, b| math2("fmod", a, b, |x, y| x % y)),
    ),
    (
        "hypot",
        2,
        Kind::V2(|_, a, b| math2("hypot", a, b, f64::hypot)),
    ),
    (
        "copysign",
        2,
        Kind::V2(|_, a, b| math2("copysign", a, b, f64::copysign)),
    ),
    (
        "fdim",
        2,
        Kind::V2(|_, a, b| math2("fdim", a, b, libm::fdim)),
    ),
    (
        "nextafter",
        2,
        Kind::V2(|_, a, b| math2("nextafter", a, b, libm::nextafter)),
    ),
    (
        "nexttoward",
        2,
        Kind::V2(|_, a, b| math2("nexttoward", a, b, libm::nextafter)),
    ),
    (
        "remainder",
        2,
        Kind::V2(|_, a, b| math2("remainder", a, b, libm::remainder)),
    ),
    (
        "drem",
        2,
        Kind::V2(|_, a, b| math2("drem", a, b, libm::remainder)),
    ),
    ("ldexp", 2, Kind::V2(|_, a, b| math2("ldexp", a, b, ldexp))),
    ("scalb", 2, Kind::V2(|_, a, b| math2("scalb", a, b, ldexp))),
    (
        "scalbln",
        2,
        Kind::V2(|_, a, b| math2("scalbln", a, b, ldexp)),
    ),
    (
        "jn",
        2,
        Kind::V2(|_, a, b| math2("jn", a, b, |n, x| libm::jn(n as i32, x))),
    ),
    (
        "yn",
        2,
        Kind::V2(|_, a, b| math2("yn", a, b, |n, x| libm::yn(n as i32, x))),
    ),
    ("fma", 3, Kind::V3(fma)),
];

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
        ("first", [f]) => {
            let id = ctx.fresh_id();
            match ctx.eval(f, env, input, &mut |v| {
                out(v).map_err(|e| Flow::Pass(id, Box::new(e)))?;
                Err(Flow::Break(id))
            }) {
                Err(Flow::Break(b)) if b == id => Ok(()),
                Err(Flow::Pass(p, e)) if p == id => Err(*e),
                other => other,
            }
        }
        ("last", [f]) => {
            let mut last = None;
            ctx.eval(f, env, input, &mut |v| {
                last = Some(v);
                Ok(())
            })?;
            last.map_or(Ok(()), out)
        }
        ("until", [cond, next]) => until(ctx, cond, next, env, input, out),
        ("while", [cond, update]) => while_loop(ctx, cond, update, env, input, out),
        ("repeat", [f]) => repeat(ctx, f, env, input, out),
        ("range", _) => range(ctx, args, env, input, out),
        ("recurse", []) => super::eval::recurse_values(input, out),
        ("recurse", [f]) => recurse_with(ctx, f, env, input, out),
        ("isvalid", [f]) => {
            let r = ctx.eval(f, env, input, &mut |_| Ok(()));
            match r {
                Ok(()) => out(Val::Bool(true)),
                Err(Flow::Error(_)) => out(Val::Bool(false)),
                Err(e) => Err(e),
            }
        }
        _ => Err(err(format!("{name}/{} cannot be called here", args.len()))),
    }
}

/// def until(cond; next): def _until: if cond then . else next | _until end;
fn until<'p>(
    ctx: &Ctx<'p>,
    cond: &'p Ast,
    next: &'p Ast,
    env: &Env<'p>,
    input: Val,
    out: Out,
) -> Res {
    let mut v = input;
    loop {
        let conds = ctx.collect(cond, env, v.clone())?;
        if conds.len() != 1 {
            for c in conds {
                if c.truthy() {
                    out(v.clone())?;
                } else {
                    for n in ctx.collect(next, env, v.clone())? {
                        until(ctx, cond, next, env, n, out)?;
                    }
                }
            }
            return Ok(());
        }
        if conds[0].truthy() {
            return out(v);
        }
        let mut nexts = ctx.collect(next, env, v)?;
        if nexts.len() != 1 {
            for n in nexts {
                until(ctx, cond, next, env, n, out)?;
            }
            return Ok(());
        }
        v = nexts.pop().unwrap_or(Val::Null);
    }
}

fn limit<'p>(ctx: &Ctx<'p>, n: &Val, f: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
    let Some(n) = n.as_int() else {
        return Err(err(format!(
            "limit: expected a number but got: {}",
            describe(n)
        )));
    };
    if n < 0 {
        return Err(err("limit doesn't support negative count"));
    }
    if n == 0 {
        return Ok(());
    }
    let id = ctx.fresh_id();
    let mut left = n;
    match ctx.eval(f, env, input, &mut |v| {
        out(v).map_err(|e| Flow::Pass(id, Box::new(e)))?;
        left -= 1;
        if left <= 0 {
            Err(Flow::Break(id))
        } else {
            Ok(())
        }
    }) {
        Err(Flow::Break(b)) if b == id => Ok(()),
        Err(Flow::Pass(p, e)) if p == id => Err(*e),
        other => other,
    }
}

fn skip<'p>(ctx: &Ctx<'p>, n: &Val, f: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
    let Some(n) = n.as_int() else {
        return Err(err(format!(
            "skip: expected a number but got: {}",
            describe(n)
        )));
    };
    if n < 0 {
        return Err(err("skip doesn't support negative count"));
    }
    let mut left = n;
    ctx.eval(f, env, input, &mut |v| {
        if left > 0 {
            left -= 1;
            Ok(())
        } else {
            out(v)
        }
    })
}

fn while_loop<'p>(
    ctx: &Ctx<'p>,
    cond: &'p Ast,
    update: &'p Ast,
    env: &Env<'p>,
    input: Val,
    out: Out,
) -> Res {
    // def while(cond; update): def _while: if cond then ., (update | _while) else empty end;
    // iterative while each step has one condition and one update output.
    let mut v = input;
    loop {
        let conds = ctx.collect(cond, env, v.clone())?;
        if conds.len() != 1 {
            for c in conds {
                if c.truthy() {
                    out(v.clone())?;
                    for u in ctx.collect(update, env, v.clone())? {
                        while_loop(ctx, cond, update, env, u, out)?;
                    }
                }
            }
            return Ok(());
        }
        if !conds[0].truthy() {
            return Ok(());
        }
        out(v.clone())?;
        let mut ups = ctx.collect(update, env, v)?;
        if ups.len() != 1 {
            for u in ups {
                while_loop(ctx, cond, update, env, u, out)?;
            }
            return Ok(());
        }
        v = ups.pop().unwrap_or(Val::Null);
    }
}

/// gojq's `def repeat(f): def _repeat: f, _repeat; _repeat;`: the outputs of `f` on the same
/// input, again and again (a filter without outputs ends instead of spinning).
fn repeat<'p>(ctx: &Ctx<'p>, f: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
    loop {
        let mut any = false;
        ctx.eval(f, env, input.clone(), &mut |v| {
            any = true;
            out(v)
        })?;
        if !any {
            return Ok(());
        }
    }
}

fn range<'p>(ctx: &Ctx<'p>, args: &'p [Ast], env: &Env<'p>, input: Val, out: Out) -> Res {
    ctx.cartesian(args, env, &input, &mut |_, a| {
        let (from, to, by) = match a {
            [to] => (Val::Int(0), to.clone(), Val::Int(1)),
            [from, to] => (from.clone(), to.clone(), Val::Int(1)),
            [from, to, by] => (from.clone(), to.clone(), by.clone()),
            _ => return Ok(()),
        };
        for x in [&from, &to, &by] {
            if !x.is_number() {
                return Err(err(format!("range cannot be applied to: {}", describe(x))));
            }
        }
        let dir = compare(&by, &Val::Int(0)) as i32;
        let mut v = from;
        while dir * (compare(&v, &to) as i32) < 0 {
            out(v.clone())?;
            v = ops::add(&v, &by)?;
        }
        Ok(())
    })
}

fn recurse_with<'p>(ctx: &Ctx<'p>, f: &'p Ast, env: &Env<'p>, v: Val, out: Out) -> Res {
    ctx.enter()?;
    let r = (|| {
        out(v.clone())?;
        ctx.eval(f, env, v, &mut |x| recurse_with(ctx, f, env, x, out))
    })();
    ctx.leave();
    r
}

/// The natives that make paths: `empty`, `error`, `getpath`, `recurse`, `first`, `last`,
/// `limit`, `skip`; any other gives "invalid path".
pub fn call_paths<'p>(
    ctx: &Ctx<'p>,
    n: Native,
    args: &'p [Ast],
    env: &Env<'p>,
    cur: PathVal,
    out: PathOut,
) -> Res {
    let Some((name, _, _)) = entry(n) else {
        return Err(err("unknown native function"));
    };
    let (path, value) = cur;
    match (*name, args) {
        ("empty", _) => Ok(()),
        ("error", _) => call(ctx, n, args, env, value, &mut |_| Ok(())),
        ("getpath", [p]) => ctx.eval(p, env, value.clone(), &mut |pv| {
            let Val::Arr(items) = &pv else {
                return Err(err(format!(
                    "getpath: expected an array but got: {}",
                    describe(&pv)
                )));
            };
            let found = ops::getpath(&value, items).unwrap_or(Val::Null);
            let mut full = path.clone();
            full.extend(items.iter().cloned());
            out((full, found))
        }),
        ("recurse", []) => super::path::recurse_paths(path, value, out),
        ("recurse", [f]) => recurse_paths_with(ctx, f, env, (path, value), out),
        ("first", [f]) => {
            let id = ctx.fresh_id();
            match eval_paths(ctx, f, env, (path, value), &mut |pv| {
                out(pv).map_err(|e| Flow::Pass(id, Box::new(e)))?;
                Err(Flow::Break(id))
            }) {
                Err(Flow::Break(b)) if b == id => Ok(()),
                Err(Flow::Pass(p, e)) if p == id => Err(*e),
                other => other,
            }
        }
        ("last", [f]) => {
            let mut last = None;
            eval_paths(ctx, f, env, (path, value), &mut |pv| {
                last = Some(pv);
                Ok(())
            })?;
            last.map_or(Ok(()), out)
        }
        ("limit", [n, f]) => ctx.eval(n, env, value.clone(), &mut |nv| {
            let n = nv.as_int().unwrap_or(0);
            if n <= 0 {
                return Ok(());
            }
            let id = ctx.fresh_id();
            let mut left = n;
            match eval_paths(ctx, f, env, (path.clone(), value.clone()), &mut |pv| {
                out(pv).map_err(|e| Flow::Pass(id, Box::new(e)))?;
                left -= 1;
                if left <= 0 {
                    Err(Flow::Break(id))
                } else {
                    Ok(())
                }
            }) {
                Err(Flow::Break(b)) if b == id => Ok(()),
                Err(Flow::Pass(p, e)) if p == id => Err(*e),
                other => other,
            }
        }),
        ("skip", [n, f]) => ctx.eval(n, env, value.clone(), &mut |nv| {
            let mut left = nv.as_int().unwrap_or(0);
            eval_paths(ctx, f, env, (path.clone(), value.clone()), &mut |pv| {
                if left > 0 {
                    left -= 1;
                    Ok(())
                } else {
                    out(pv)
                }
            })
        }),
        _ => super::path::not_a_path(&mut |out| call(ctx, n, args, env, value.clone(), out)),
    }
}

fn recurse_paths_with<'p>(
    ctx: &Ctx<'p>,
    f: &'p Ast,
    env: &Env<'p>,
    cur: PathVal,
    out: PathOut,
) -> Res {
    ctx.enter()?;
    let r = (|| {
        out(cur.clone())?;
        eval_paths(ctx, f, env, cur, &mut |pv| {
            recurse_paths_with(ctx, f, env, pv, out)
        })
    })();
    ctx.leave();
    r
}

// ---- value functions ----

fn math1(name: &str, v: &Val, f: impl Fn(f64) -> f64) -> Result<Val, Flow> {
    match v.as_f64() {
        Some(x) => Ok(Val::Float(f(x))),
        None => Err(err(format!("{name} cannot be applied to: {}", describe(v)))),
    }
}

fn math2(name: &str, a: &Val, b: &Val, f: impl Fn(f64, f64) -> f64) -> Result<Val, Flow> {
    let x = a
        .as_f64()
        .ok_or_else(|| err(format!("{name} cannot be applied to: {}", describe(a))))?;
    let y = b
        .as_f64()
        .ok_or_else(|| err(format!("{name} cannot be applied to: {}", describe(b))))?;
    Ok(Val::Float(f(x, y)))
}

fn fma(_: &Val, a: &Val, b: &Val, c: &Val) -> Result<Val, Flow> {
    let get = |v: &Val| {
        v.as_f64()
            .ok_or_else(|| err(format!("fma cannot be applied to: {}", describe(v))))
    };
    Ok(Val::Float(get(a)?.mul_add(get(b)?, get(c)?)))
}

fn significand(x: f64) -> f64 {
    if x.is_nan() || x.is_infinite() || x == 0.0 {
        return x;
    }
    f64::from_bits((x.to_bits() & 0x800f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000)
}

fn ldexp(x: f64, e: f64) -> f64 {
    libm::ldexp(x, e.clamp(i32::MIN as f64, i32::MAX as f64) as i32)
}

fn float_pred(name: &str, v: &Val, f: fn(f64) -> bool) -> Result<Val, Flow> {
    match v.as_f64() {
        Some(x) => Ok(Val::Bool(f(x))),
        None => Err(err(format!("{name} cannot be applied to: {}", describe(v)))),
    }
}

fn frexp(v: &Val) -> Result<Val, Flow> {
    let x = v
        .as_f64()
        .ok_or_else(|| err(format!("frexp cannot be applied to: {}", describe(v))))?;
    let (m, e) = libm::frexp(x);
    Ok(Val::arr(vec![Val::Float(m), Val::Int(e as i64)]))
}

fn modf(v: &Val) -> Result<Val, Flow> {
    let x = v
        .as_f64()
        .ok_or_else(|| err(format!("modf cannot be applied to: {}", describe(v))))?;
    let (f, i) = libm::modf(x);
    Ok(Val::arr(vec![Val::Float(f), Val::Float(i)]))
}

fn halt_error(v: &Val, code: &Val) -> Result<Val, Flow> {
    if !code.is_number() {
        return Err(err(format!(
            "halt_error cannot be applied to: {}",
            describe(code)
        )));
    }
    Err(Flow::HaltError(v.clone()))
}

fn plus(v: &Val) -> Result<Val, Flow> {
    if v.is_number() {
        Ok(v.clone())
    } else {
        Err(err(format!("cannot plus: {}", describe(v))))
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

fn getpath(v: &Val, p: &Val) -> Result<Val, Flow> {
    match p {
        Val::Arr(path) => ops::getpath(v, path),
        _ => Err(type_error1("getpath", v, p)),
    }
}

fn setpath(v: &Val, p: &Val, x: &Val) -> Result<Val, Flow> {
    match p {
        Val::Arr(path) => ops::setpath(v, path, x.clone()),
        _ => Err(type_error1("setpath", v, p)),
    }
}

fn delpaths(v: &Val, p: &Val) -> Result<Val, Flow> {
    match p {
        Val::Arr(paths) => ops::delpaths(v, paths),
        _ => Err(type_error1("delpaths", v, p)),
    }
}

fn length(v: &Val) -> Result<Val, Flow> {
    Ok(match v {
        Val::Null => Val::Int(0),
        Val::Int(_) | Val::Float(_) | Val::Big(_) => abs(v)?,
        Val::Str(s) => Val::Int(s.chars().count() as i64),
        Val::Arr(a) => Val::Int(a.len() as i64),
        Val::Obj(m) => Val::Int(m.len() as i64),
        Val::Bool(_) => return Err(type_error("length", v)),
    })
}

fn abs(v: &Val) -> Result<Val, Flow> {
    if !v.is_number() {
        return Err(type_error("abs", v));
    }
    if ops::is_negative(v) {
        ops::negate(v)
    } else {
        Ok(v.clone())
    }
}

fn utf8bytelength(v: &Val) -> Result<Val, Flow> {
    match v {
        Val::Str(s) => Ok(Val::Int(s.len() as i64)),
        _ => Err(type_error("utf8bytelength", v)),
    }
}

fn keys(v: &Val) -> Result<Val, Flow> {
    match v {
        Val::Arr(a) => Ok(Val::arr((0..a.len()).map(|i| Val::Int(i as i64)).collect())),
        Val::Obj(m) => Ok(Val::arr(m.keys().map(|k| Val::Str(k.clone())).collect())),
        _ => Err(type_error("keys", v)),
    }
}

fn has(v: &Val, k: &Val) -> Result<Val, Flow> {
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

fn contains(l: &Val, r: &Val) -> Result<bool, Flow> {
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

fn contains_fn(l: &Val, r: &Val) -> Result<Val, Flow> {
    contains(l, r).map(Val::Bool)
}

fn entry_obj(key: Val, value: Val) -> Val {
    let mut m = Map::new();
    m.insert(Rc::from("key"), key);
    m.insert(Rc::from("value"), value);
    Val::obj(m)
}

fn to_entries(v: &Val) -> Result<Val, Flow> {
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

fn from_entries(v: &Val) -> Result<Val, Flow> {
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
fn values_of(v: &Val) -> Option<Vec<Val>> {
    match v {
        Val::Arr(a) => Some(a.to_vec()),
        Val::Obj(m) => Some(m.values().cloned().collect()),
        _ => None,
    }
}

fn add(v: &Val) -> Result<Val, Flow> {
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

pub fn tostring(v: &Val) -> String {
    match v {
        Val::Str(s) => s.to_string(),
        other => encode::to_json_text(other),
    }
}

fn fromjson(v: &Val) -> Result<Val, Flow> {
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

fn tonumber(v: &Val) -> Result<Val, Flow> {
    match v {
        n if n.is_number() => Ok(n.clone()),
        Val::Str(s) => {
            if !is_json_number(s) {
                return Err(err(format!(
                    "tonumber cannot be applied to: {}: invalid number",
                    describe(v)
                )));
            }
            Ok(super::eval::lit_val(&super::ast::Lit::number(s)))
        }
        _ => Err(type_error("tonumber", v)),
    }
}

/// Whether `s` is a number as gojq's lexer reads one: digits, an optional fraction and exponent.
fn is_json_number(s: &str) -> bool {
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

fn reverse(v: &Val) -> Result<Val, Flow> {
    match v {
        Val::Arr(a) => Ok(Val::arr(a.iter().rev().cloned().collect())),
        Val::Str(s) => Ok(Val::str(s.chars().rev().collect::<String>())),
        Val::Null => Ok(Val::arr(Vec::new())),
        _ => Err(type_error("reverse", v)),
    }
}

fn transpose(v: &Val) -> Result<Val, Flow> {
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

fn bsearch(v: &Val, t: &Val) -> Result<Val, Flow> {
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

fn flatten_depth(v: &Val, d: &Val) -> Result<Val, Flow> {
    match d.as_f64() {
        Some(x) if x < 0.0 => Err(err("flatten depth must not be negative")),
        Some(_) => flatten(v, d),
        None => Err(type_error("flatten", d)),
    }
}

fn flatten(v: &Val, depth: &Val) -> Result<Val, Flow> {
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

fn keyed(v: &Val, k: &Val, name: &str) -> Result<Vec<(Val, Val)>, Flow> {
    let (Val::Arr(vs), Val::Arr(ks)) = (v, k) else {
        return Err(type_error(name, v));
    };
    if vs.len() != ks.len() {
        return Err(err(format!("{name} cannot be applied to: length mismatch")));
    }
    Ok(vs.iter().cloned().zip(ks.iter().cloned()).collect())
}

fn min_max(v: &Val, k: &Val, is_min: bool, name: &str) -> Result<Val, Flow> {
    let items = keyed(v, k, name)?;
    let Some((first, rest)) = items.split_first() else {
        return Ok(Val::Null);
    };
    let mut best = first;
    for item in rest {
        if compare(&best.1, &item.1).is_gt() == is_min {
            best = item;
        }
    }
    Ok(best.0.clone())
}

fn sorted(v: &Val, k: &Val, name: &str) -> Result<Vec<(Val, Val)>, Flow> {
    let mut items = keyed(v, k, name)?;
    items.sort_by(|a, b| compare(&a.1, &b.1));
    Ok(items)
}

fn sort_by(v: &Val, k: &Val, name: &str) -> Result<Val, Flow> {
    Ok(Val::arr(
        sorted(v, k, name)?.into_iter().map(|(x, _)| x).collect(),
    ))
}

fn group_by(v: &Val, k: &Val) -> Result<Val, Flow> {
    let mut groups: Vec<(Val, Vec<Val>)> = Vec::new();
    for (x, key) in sorted(v, k, "group_by")? {
        match groups.last_mut() {
            Some((last, g)) if compare(last, &key).is_eq() => g.push(x),
            _ => groups.push((key, vec![x])),
        }
    }
    Ok(Val::arr(
        groups.into_iter().map(|(_, g)| Val::arr(g)).collect(),
    ))
}

fn unique_by(v: &Val, k: &Val, name: &str) -> Result<Val, Flow> {
    let mut out: Vec<(Val, Val)> = Vec::new();
    for (x, key) in sorted(v, k, name)? {
        if !out
            .last()
            .is_some_and(|(last, _)| compare(last, &key).is_eq())
        {
            out.push((key, x));
        }
    }
    Ok(Val::arr(out.into_iter().map(|(_, x)| x).collect()))
}

fn join(v: &Val, sep: &Val) -> Result<Val, Flow> {
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
