//! Path expressions: `path(f)`, and the updates built on it (`|=`, `+=`, `del`), where missing parents read as `null` and are created on write.

use super::ops;
use super::{Callee, Ctx, Env, Flow, Frame, Out, Res, err, native_paths, push_defs};
use crate::jq::ast::{Ast, Target};
use crate::jq::encode::describe;
use crate::jq::value::Val;

/// A path with the value found at it.
pub type PathVal = (Vec<Val>, Val);
pub type PathOut<'a> = &'a mut dyn FnMut(PathVal) -> Res;
/// An update of `|=`: runs on the value at a path and passes its outputs on.
pub type Updater<'a, 'p> = &'a mut dyn FnMut(&Ctx<'p>, Val, Out) -> Res;
/// An evaluation in value mode, given where its outputs go.
pub type ValueRun<'a> = &'a mut dyn FnMut(Out) -> Res;

/// Every path `f` selects in `input`.
pub fn collect<'p>(
    ctx: &Ctx<'p>,
    f: &'p Ast,
    env: &Env<'p>,
    input: Val,
) -> Result<Vec<Vec<Val>>, Flow> {
    let mut paths = Vec::new();
    eval_paths(ctx, f, env, (Vec::new(), input), &mut |(p, _)| {
        paths.push(p);
        Ok(())
    })?;
    Ok(paths)
}

/// `f |= g` as gojq runs it: for each path of `f` (taken on the input), the first output of `g`
/// on the value there replaces it; a path where `g` gives nothing is deleted at the end.
pub fn modify<'p>(
    ctx: &Ctx<'p>,
    f: &'p Ast,
    env: &Env<'p>,
    input: Val,
    g: Updater<'_, 'p>,
) -> Result<Val, Flow> {
    let paths = collect(ctx, f, env, input.clone())?;
    let mut acc = input;
    let mut deleted = Vec::new();
    for p in paths {
        let old = ops::getpath(&acc, &p)?;
        let mut first = None;
        let id = ctx.fresh_id();
        let r = g(ctx, old, &mut |v| {
            first = Some(v);
            Err(Flow::Break(id))
        });
        match r {
            Ok(()) | Err(Flow::Break(_)) if first.is_some() || r.is_ok() => {}
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        match first {
            Some(v) => acc = ops::setpath(&acc, &p, v)?,
            None => deleted.push(Val::arr(p)),
        }
    }
    if deleted.is_empty() {
        Ok(acc)
    } else {
        ops::delpaths(&acc, &deleted)
    }
}

/// Runs an expression that makes values, not paths: no output is fine (`empty`), a value is
/// an invalid path.
pub fn not_a_path(run: ValueRun) -> Res {
    let mut first = None;
    run(&mut |v| {
        if first.is_none() {
            first = Some(v);
        }
        Ok(())
    })?;
    first.map_or(Ok(()), |v| Err(invalid_path(&v)))
}

fn invalid_path(v: &Val) -> Flow {
    err(format!("invalid path against: {}", describe(v)))
}

fn extend(p: &[Val], key: Val) -> Vec<Val> {
    let mut q = Vec::with_capacity(p.len() + 1);
    q.extend_from_slice(p);
    q.push(key);
    q
}

/// Runs `ast` in path mode: each output is a path from the root and the value there.
pub fn eval_paths<'p>(
    ctx: &Ctx<'p>,
    ast: &'p Ast,
    env: &Env<'p>,
    cur: PathVal,
    out: PathOut,
) -> Res {
    ctx.enter()?;
    let r = paths_inner(ctx, ast, env, cur, out);
    ctx.leave();
    r
}

fn paths_inner<'p>(ctx: &Ctx<'p>, ast: &'p Ast, env: &Env<'p>, cur: PathVal, out: PathOut) -> Res {
    let (path, value) = cur;
    match ast {
        Ast::Identity => out((path, value)),
        Ast::RecurseAll => recurse_paths(path, value, out),
        Ast::Index(t, k) => ctx.eval(k, env, value.clone(), &mut |key| {
            eval_paths(ctx, t, env, (path.clone(), value.clone()), &mut |(p, v)| {
                let next = ops::index(&v, &key)?;
                out((extend(&p, key.clone()), next))
            })
        }),
        Ast::Slice(t, from, to) => ctx.slice_bounds(from, to, env, &value, &mut |ctx, s, e| {
            eval_paths(ctx, t, env, (path.clone(), value.clone()), &mut |(p, v)| {
                let next = ops::slice(&v, &s, &e)?;
                let mut bounds = crate::jq::value::Map::new();
                bounds.insert("start".into(), s.clone());
                bounds.insert("end".into(), e.clone());
                out((extend(&p, Val::obj(bounds)), next))
            })
        }),
        Ast::Iterate(t) => eval_paths(ctx, t, env, (path, value), &mut |(p, v)| match &v {
            Val::Arr(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, x)| out((extend(&p, Val::Int(i as i64)), x.clone()))),
            Val::Obj(m) => m
                .iter()
                .try_for_each(|(k, x)| out((extend(&p, Val::Str(k.clone())), x.clone()))),
            other => Err(err(format!("cannot iterate over: {}", describe(other)))),
        }),
        Ast::Optional(t) => try_paths(ctx, t, None, env, (path, value), out),
        Ast::Try(t, c) => try_paths(ctx, t, c.as_deref(), env, (path, value), out),
        Ast::Pipe(a, b) => eval_paths(ctx, a, env, (path, value), &mut |pv| {
            eval_paths(ctx, b, env, pv, out)
        }),
        Ast::Comma(a, b) => {
            eval_paths(ctx, a, env, (path.clone(), value.clone()), out)?;
            eval_paths(ctx, b, env, (path, value), out)
        }
        Ast::If(c, t, e) => ctx.eval(c, env, value.clone(), &mut |cv| {
            let cur = (path.clone(), value.clone());
            if cv.truthy() {
                eval_paths(ctx, t, env, cur, out)
            } else if let Some(e) = e {
                eval_paths(ctx, e, env, cur, out)
            } else {
                out(cur)
            }
        }),
        Ast::Alt(l, r) => {
            // As in evaluation: an error of `l` stands (gojq's `//` does not catch).
            let mut any = false;
            eval_paths(ctx, l, env, (path.clone(), value.clone()), &mut |pv| {
                if pv.1.truthy() {
                    any = true;
                    out(pv)?;
                }
                Ok(())
            })?;
            if any {
                Ok(())
            } else {
                eval_paths(ctx, r, env, (path, value), out)
            }
        }
        Ast::Defs(defs, body) => eval_paths(ctx, body, &push_defs(defs, env), (path, value), out),
        Ast::Bind(src, pats, body) => ctx.eval(src, env, value.clone(), &mut |v| {
            let pat = &pats[0];
            ctx.bind(pat, &v, env, &mut |ctx, env| {
                eval_paths(ctx, body, &env, (path.clone(), value.clone()), out)
            })
        }),
        Ast::Label(name, body) => {
            let id = ctx.fresh_id();
            let env = env.push(|next| Frame::Label(name, id, next));
            match eval_paths(ctx, body, &env, (path, value), out) {
                Err(Flow::Break(b)) if b == id => Ok(()),
                other => other,
            }
        }
        Ast::Break(_) => ctx.eval(ast, env, value, &mut |_| Ok(())),
        Ast::Reduce(..) | Ast::Foreach(..) => Err(err(
            "reduce and foreach are not supported in path expressions",
        )),
        Ast::Call(name, args, target) => {
            call_paths(ctx, name, args, *target, env, (path, value), out)
        }
        Ast::Lit(crate::jq::ast::Lit::Null) => out((path, Val::Null)),
        _ => not_a_path(&mut |out| ctx.eval(ast, env, value.clone(), out)),
    }
}

/// `..` (and `recurse`) in path mode: the value, then every value inside it, depth first.
pub fn recurse_paths(path: Vec<Val>, value: Val, out: PathOut) -> Res {
    out((path.clone(), value.clone()))?;
    match &value {
        Val::Arr(items) => items.iter().enumerate().try_for_each(|(i, x)| {
            recurse_paths(extend(&path, Val::Int(i as i64)), x.clone(), out)
        }),
        Val::Obj(m) => m.iter().try_for_each(|(k, x)| {
            recurse_paths(extend(&path, Val::Str(k.clone())), x.clone(), out)
        }),
        _ => Ok(()),
    }
}

fn try_paths<'p>(
    ctx: &Ctx<'p>,
    body: &'p Ast,
    catch: Option<&'p Ast>,
    env: &Env<'p>,
    cur: PathVal,
    out: PathOut,
) -> Res {
    let id = ctx.fresh_id();
    let r = eval_paths(ctx, body, env, cur.clone(), &mut |pv| {
        out(pv).map_err(|e| Flow::Pass(id, Box::new(e)))
    });
    match r {
        Ok(()) => Ok(()),
        Err(Flow::Pass(p, e)) if p == id => Err(*e),
        Err(Flow::Error(e)) => match catch {
            Some(handler) => eval_paths(ctx, handler, env, (cur.0, e), out),
            None => Ok(()),
        },
        Err(other) => Err(other),
    }
}

fn call_paths<'p>(
    ctx: &Ctx<'p>,
    name: &'p str,
    args: &'p [Ast],
    target: Target,
    env: &Env<'p>,
    cur: PathVal,
    out: PathOut,
) -> Res {
    if let Target::Native(n) = target {
        return native_paths(ctx, n, args, env, cur, out);
    }
    match ctx.callee(name, args.len(), target, env)? {
        Callee::Def(def, defenv) => {
            let input = cur.1.clone();
            ctx.bind_params(def, defenv, args, env, &input, &mut |ctx, env| {
                eval_paths(ctx, &def.body, &env, cur.clone(), out)
            })
        }
        Callee::Closure(body, cenv) => eval_paths(ctx, body, &cenv, cur, out),
        Callee::Value(v) => Err(invalid_path(&v)),
    }
}
