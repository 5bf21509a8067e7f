//! Natives about paths: the ones that make paths in path expressions (`empty`, `error`, `getpath`, `recurse`, `first`, `last`, `limit`, `skip`) and `getpath`, `setpath`, `delpaths` on values.

use super::super::{Ctx, Env, Flow, PathOut, PathVal, Res, err, eval_paths, ops};
use super::{call, entry, type_error1};
use crate::jq::ast::{Ast, Native};
use crate::jq::encode::describe;
use crate::jq::value::Val;

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
        ("recurse", []) => super::super::recurse_paths(path, value, out),
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
        _ => super::super::not_a_path(&mut |out| call(ctx, n, args, env, value.clone(), out)),
    }
}

pub(super) fn recurse_paths_with<'p>(
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

pub(super) fn getpath(v: &Val, p: &Val) -> Result<Val, Flow> {
    match p {
        Val::Arr(path) => ops::getpath(v, path),
        _ => Err(type_error1("getpath", v, p)),
    }
}

pub(super) fn setpath(v: &Val, p: &Val, x: &Val) -> Result<Val, Flow> {
    match p {
        Val::Arr(path) => ops::setpath(v, path, x.clone()),
        _ => Err(type_error1("setpath", v, p)),
    }
}

pub(super) fn delpaths(v: &Val, p: &Val) -> Result<Val, Flow> {
    match p {
        Val::Arr(paths) => ops::delpaths(v, paths),
        _ => Err(type_error1("delpaths", v, p)),
    }
}
