//! Natives that drive filters: `first`, `last`, `until`, `while`, `repeat`, `range`, `limit`, `skip`,
//! `recurse(f)`, `isvalid`, `halt_error`.

use crate::jq::ast::Ast;
use crate::jq::encode::describe;
use crate::jq::value::{Val, compare};

use super::super::{Ctx, Env, Flow, Out, Res, err, ops};

/// def until(cond; next): def _until: if cond then . else next | _until end;
pub(super) fn until<'p>(
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

/// The count of `limit` and `skip`: an integer, not negative (gojq's messages).
fn count_arg(name: &str, n: &Val) -> Result<i64, Flow> {
    let Some(n) = n.as_int() else {
        return Err(err(format!(
            "{name}: expected a number but got: {}",
            describe(n)
        )));
    };
    if n < 0 {
        return Err(err(format!("{name} doesn't support negative count")));
    }
    Ok(n)
}

pub(super) fn limit<'p>(
    ctx: &Ctx<'p>,
    n: &Val,
    f: &'p Ast,
    env: &Env<'p>,
    input: Val,
    out: Out,
) -> Res {
    let n = count_arg("limit", n)?;
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

pub(super) fn skip<'p>(
    ctx: &Ctx<'p>,
    n: &Val,
    f: &'p Ast,
    env: &Env<'p>,
    input: Val,
    out: Out,
) -> Res {
    let n = count_arg("skip", n)?;
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

pub(super) fn while_loop<'p>(
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
pub(super) fn repeat<'p>(ctx: &Ctx<'p>, f: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
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

pub(super) fn range<'p>(
    ctx: &Ctx<'p>,
    args: &'p [Ast],
    env: &Env<'p>,
    input: Val,
    out: Out,
) -> Res {
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

pub(super) fn recurse_with<'p>(ctx: &Ctx<'p>, f: &'p Ast, env: &Env<'p>, v: Val, out: Out) -> Res {
    ctx.enter()?;
    let r = (|| {
        out(v.clone())?;
        ctx.eval(f, env, v, &mut |x| recurse_with(ctx, f, env, x, out))
    })();
    ctx.leave();
    r
}

pub(super) fn halt_error(v: &Val, code: &Val) -> Result<Val, Flow> {
    if !code.is_number() {
        return Err(err(format!(
            "halt_error cannot be applied to: {}",
            describe(code)
        )));
    }
    Err(Flow::HaltError(v.clone()))
}

/// `first(f)`: the first output of `f`, which then stops.
pub(super) fn first<'p>(ctx: &Ctx<'p>, f: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
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

/// `last(f)`: the last output of `f`, if any.
pub(super) fn last<'p>(ctx: &Ctx<'p>, f: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
    let mut last = None;
    ctx.eval(f, env, input, &mut |v| {
        last = Some(v);
        Ok(())
    })?;
    last.map_or(Ok(()), out)
}

/// `isvalid(f)`: whether `f` runs without an error.
pub(super) fn isvalid<'p>(ctx: &Ctx<'p>, f: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
    match ctx.eval(f, env, input, &mut |_| Ok(())) {
        Ok(()) => out(Val::Bool(true)),
        Err(Flow::Error(_)) => out(Val::Bool(false)),
        Err(e) => Err(e),
    }
}
