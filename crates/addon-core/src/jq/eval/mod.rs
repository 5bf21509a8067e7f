//! The evaluator: runs an [`Ast`] on a value, passing each output to a callback (jq's backtracking as continuation calls).

use std::cell::Cell;
use std::rc::Rc;

use super::ast::{AssignOp, Ast, FuncDef, Lit, ObjKey, Pattern, StrPiece, Target};
pub(super) mod builtins;
mod ops;
mod path;

use super::value::{Map, Val};
use builtins::call_paths as native_paths;
use path::{PathOut, PathVal, eval_paths, not_a_path, recurse_paths};

/// Why evaluation stopped early.
#[derive(Debug, Clone)]
pub enum Flow {
    /// A jq error with its value (`error(v)`, a type error's message).
    Error(Val),
    /// `break $label`, by the label's run-time id.
    Break(usize),
    /// `halt`: ends the outputs.
    Halt,
    /// `halt_error`: ends the program with an error.
    HaltError(Val),
    /// A bound was exceeded (recursion depth); never caught by `try`.
    Limit(String),
    /// An error of the continuation passing through a `try` (by the try's id).
    Pass(usize, Box<Flow>),
}

pub type Res = Result<(), Flow>;
pub type Out<'a> = &'a mut dyn FnMut(Val) -> Res;

pub fn err(msg: impl Into<String>) -> Flow {
    Flow::Error(Val::Str(Rc::from(msg.into())))
}

/// The deepest nesting of evaluation calls: every call of a recursive function nests a few
/// levels. A debug build uses about 4.5 KB of stack a level, a release build far less; the
/// sandbox evaluates on a 64 MiB stack, so this bound is reached before the stack ends.
pub const MAX_DEPTH: usize = 10_000;

/// A lexical environment: variables, function definitions, closure parameters and labels.
#[derive(Clone, Default)]
pub struct Env<'p>(pub(super) Option<Rc<Frame<'p>>>);

pub enum Frame<'p> {
    Var(&'p str, Val, Env<'p>),
    Func(&'p FuncDef, Env<'p>),
    /// A filter argument: its body and the environment of the call site.
    Closure(&'p str, &'p Ast, Env<'p>, Env<'p>),
    /// A `$x` parameter also callable as `x`.
    ValueFn(&'p str, Val, Env<'p>),
    Label(&'p str, usize, Env<'p>),
}

impl<'p> Env<'p> {
    pub fn push(&self, frame: impl FnOnce(Env<'p>) -> Frame<'p>) -> Env<'p> {
        Env(Some(Rc::new(frame(self.clone()))))
    }

    pub fn bind(&self, name: &'p str, val: Val) -> Env<'p> {
        self.push(|next| Frame::Var(name, val, next))
    }

    fn var(&self, name: &str) -> Option<&Val> {
        let mut cur = self.0.as_deref();
        while let Some(frame) = cur {
            let next = match frame {
                Frame::Var(n, v, next) => {
                    if *n == name {
                        return Some(v);
                    }
                    next
                }
                Frame::Func(_, next)
                | Frame::Closure(_, _, _, next)
                | Frame::ValueFn(_, _, next)
                | Frame::Label(_, _, next) => next,
            };
            cur = next.0.as_deref();
        }
        None
    }

    fn label(&self, name: &str) -> Option<usize> {
        let mut cur = self.0.as_ref();
        while let Some(frame) = cur {
            let next = match &**frame {
                Frame::Label(n, id, next) => {
                    if *n == name {
                        return Some(*id);
                    }
                    next
                }
                Frame::Var(_, _, next)
                | Frame::Func(_, next)
                | Frame::Closure(_, _, _, next)
                | Frame::ValueFn(_, _, next) => next,
            };
            cur = next.0.as_ref();
        }
        None
    }

    /// The frame defining `name/arity`, innermost first.
    pub fn func_frame(&self, name: &str, arity: usize) -> Option<Rc<Frame<'p>>> {
        let mut cur = self.0.as_ref();
        while let Some(frame) = cur {
            let next = match &**frame {
                Frame::Func(def, next) => {
                    if &*def.name == name && def.params.len() == arity {
                        return Some(frame.clone());
                    }
                    next
                }
                Frame::Closure(n, _, _, next) | Frame::ValueFn(n, _, next) => {
                    if *n == name && arity == 0 {
                        return Some(frame.clone());
                    }
                    next
                }
                Frame::Var(_, _, next) | Frame::Label(_, _, next) => next,
            };
            cur = next.0.as_ref();
        }
        None
    }
}

/// What a call of a definition in scope, a prelude function or a parameter refers to.
pub enum Callee<'p> {
    Def(&'p FuncDef, Env<'p>),
    Closure(&'p Ast, Env<'p>),
    Value(Val),
}

/// The state of one program run.
pub struct Ctx<'p> {
    pub prelude: &'p [FuncDef],
    next_id: Cell<usize>,
    depth: Cell<usize>,
}

impl<'p> Ctx<'p> {
    pub fn new(prelude: &'p [FuncDef]) -> Self {
        Self {
            prelude,
            next_id: Cell::new(0),
            depth: Cell::new(0),
        }
    }

    pub fn fresh_id(&self) -> usize {
        self.next_id.set(self.next_id.get() + 1);
        self.next_id.get()
    }

    pub fn enter(&self) -> Res {
        self.depth.set(self.depth.get() + 1);
        if self.depth.get() > MAX_DEPTH {
            self.depth.set(self.depth.get() - 1);
            return Err(Flow::Limit(format!(
                "evaluation nested deeper than {MAX_DEPTH} levels (a recursive function?)"
            )));
        }
        Ok(())
    }

    pub fn leave(&self) {
        self.depth.set(self.depth.get() - 1);
    }

    /// Runs `ast` on `input`, passing every output to `out`.
    pub fn eval(&self, ast: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
        self.enter()?;
        let r = self.eval_inner(ast, env, input, out);
        self.leave();
        r
    }

    fn eval_inner(&self, ast: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
        match ast {
            Ast::Identity => out(input),
            Ast::RecurseAll => recurse_values(input, out),
            Ast::Lit(lit) => out(lit_val(lit)),
            Ast::Str(fmt, pieces) => self.string(fmt.as_deref(), pieces, env, input, out),
            Ast::Format(f) => out(builtins::format(f, &input)?),
            Ast::Index(t, k) if matches!(**k, Ast::Lit(Lit::Str(_))) => {
                // `.name`: index by the literal without making a value of it.
                let Ast::Lit(Lit::Str(name)) = &**k else {
                    return Ok(());
                };
                self.eval(t, env, input, &mut |v| out(ops::index_str(&v, name)?))
            }
            Ast::Index(t, k) => self.eval(k, env, input.clone(), &mut |key| {
                self.eval(t, env, input.clone(), &mut |v| out(ops::index(&v, &key)?))
            }),
            Ast::Slice(t, from, to) => {
                self.slice_bounds(from, to, env, &input, &mut |this, f, e| {
                    this.eval(t, env, input.clone(), &mut |v| out(ops::slice(&v, &f, &e)?))
                })
            }
            Ast::Iterate(t) => self.eval(t, env, input, &mut |v| ops::iterate(&v, out)),
            Ast::Optional(t) => self.try_catch(t, None, env, input, out),
            Ast::Try(t, catch) => self.try_catch(t, catch.as_deref(), env, input, out),
            Ast::Array(None) => out(Val::arr(Vec::new())),
            Ast::Array(Some(q)) => {
                let mut items = Vec::new();
                self.eval(q, env, input, &mut |v| {
                    items.push(v);
                    Ok(())
                })?;
                out(Val::arr(items))
            }
            Ast::Object(entries) => self.object(entries, 0, Map::new(), env, &input, out),
            Ast::Neg(t) => self.eval(t, env, input, &mut |v| out(ops::negate(&v)?)),
            Ast::Pipe(a, b) => self.eval(a, env, input, &mut |v| self.eval(b, env, v, out)),
            Ast::Comma(a, b) => {
                self.eval(a, env, input.clone(), out)?;
                self.eval(b, env, input, out)
            }
            Ast::Bin(op, l, r) => self.eval(r, env, input.clone(), &mut |rv| {
                self.eval(l, env, input.clone(), &mut |lv| {
                    out(ops::binop(*op, &lv, &rv)?)
                })
            }),
            Ast::And(l, r) => self.eval(l, env, input.clone(), &mut |lv| {
                if !lv.truthy() {
                    return out(Val::Bool(false));
                }
                self.eval(r, env, input.clone(), &mut |rv| out(Val::Bool(rv.truthy())))
            }),
            Ast::Or(l, r) => self.eval(l, env, input.clone(), &mut |lv| {
                if lv.truthy() {
                    return out(Val::Bool(true));
                }
                self.eval(r, env, input.clone(), &mut |rv| out(Val::Bool(rv.truthy())))
            }),
            Ast::Alt(l, r) => self.alternative(l, r, env, input, out),
            Ast::Assign(op, lhs, rhs) => self.assign(*op, lhs, rhs, env, input, out),
            Ast::If(c, t, e) => self.eval(c, env, input.clone(), &mut |cv| {
                if cv.truthy() {
                    self.eval(t, env, input.clone(), out)
                } else if let Some(e) = e {
                    self.eval(e, env, input.clone(), out)
                } else {
                    out(input.clone())
                }
            }),
            Ast::Reduce(src, pat, init, update) => {
                self.reduce(src, pat, init, update, env, input, out)
            }
            Ast::Foreach(src, pat, init, update, extract) => {
                self.foreach(src, pat, init, update, extract.as_deref(), env, input, out)
            }
            Ast::Defs(defs, body) => {
                let env = push_defs(defs, env);
                self.eval(body, &env, input, out)
            }
            Ast::Call(name, args, target) => self.call(name, args, *target, env, input, out),
            Ast::Var(name) => out(self.var(name, env)?),
            Ast::Bind(src, pats, body) => self.eval(src, env, input.clone(), &mut |v| {
                self.bind_alternatives(pats, 0, &v, env, &mut |this, env| {
                    this.eval(body, &env, input.clone(), out)
                })
            }),
            Ast::Label(name, body) => {
                let id = self.fresh_id();
                let env = env.push(|next| Frame::Label(name, id, next));
                match self.eval(body, &env, input, out) {
                    Err(Flow::Break(b)) if b == id => Ok(()),
                    other => other,
                }
            }
            Ast::Break(name) => match env.label(name) {
                Some(id) => Err(Flow::Break(id)),
                None => Err(err(format!("$*label-{name} is not defined"))),
            },
            Ast::Loc(line) => {
                let mut m = Map::new();
                m.insert(Rc::from("file"), Val::str("<stdin>"));
                m.insert(Rc::from("line"), Val::Int(*line as i64));
                out(Val::obj(m))
            }
        }
    }

    pub fn var(&self, name: &str, env: &Env<'p>) -> Result<Val, Flow> {
        match env.var(name) {
            Some(v) => Ok(v.clone()),
            None if name == "ENV" => Ok(Val::obj(Map::new())),
            None => Err(err(format!("variable not defined: ${name}"))),
        }
    }

    /// Evaluates the optional bounds of a slice (`null` when left out); the end varies slowest.
    pub fn slice_bounds(
        &self,
        from: &'p Option<Box<Ast>>,
        to: &'p Option<Box<Ast>>,
        env: &Env<'p>,
        input: &Val,
        f: &mut dyn FnMut(&Self, Val, Val) -> Res,
    ) -> Res {
        let each =
            |this: &Self, q: &'p Option<Box<Ast>>, g: &mut dyn FnMut(&Self, Val) -> Res| match q {
                None => g(this, Val::Null),
                Some(q) => {
                    let mut vals = Vec::new();
                    this.eval(q, env, input.clone(), &mut |v| {
                        vals.push(v);
                        Ok(())
                    })?;
                    vals.into_iter().try_for_each(|v| g(this, v))
                }
            };
        each(self, to, &mut |this, e| {
            each(this, from, &mut |this, s| f(this, s, e.clone()))
        })
    }

    fn try_catch(
        &self,
        body: &'p Ast,
        catch: Option<&'p Ast>,
        env: &Env<'p>,
        input: Val,
        out: Out,
    ) -> Res {
        let id = self.fresh_id();
        let r = self.eval(body, env, input, &mut |v| {
            out(v).map_err(|e| Flow::Pass(id, Box::new(e)))
        });
        match r {
            Ok(()) => Ok(()),
            Err(Flow::Pass(p, e)) if p == id => Err(*e),
            Err(Flow::Error(e)) => match catch {
                Some(handler) => self.eval(handler, env, e, out),
                None => Ok(()),
            },
            Err(other) => Err(other),
        }
    }

    /// `l // r`: the truthy outputs of `l`, or else (none) the outputs of `r`. An error of `l`
    /// stands, after the truthy outputs before it, as in gojq (whose `//` forks without catching;
    /// jq's suppresses the error).
    fn alternative(&self, l: &'p Ast, r: &'p Ast, env: &Env<'p>, input: Val, out: Out) -> Res {
        let mut any = false;
        self.eval(l, env, input.clone(), &mut |v| {
            if v.truthy() {
                any = true;
                out(v)?;
            }
            Ok(())
        })?;
        if any {
            Ok(())
        } else {
            self.eval(r, env, input, out)
        }
    }

    fn string(
        &self,
        fmt: Option<&str>,
        pieces: &'p [StrPiece],
        env: &Env<'p>,
        input: Val,
        out: Out,
    ) -> Res {
        // The last interpolation varies slowest, as in gojq's chain of additions.
        fn go<'p>(
            this: &Ctx<'p>,
            fmt: Option<&str>,
            pieces: &'p [StrPiece],
            env: &Env<'p>,
            input: &Val,
            suffix: String,
            out: Out,
        ) -> Res {
            let Some((last, rest)) = pieces.split_last() else {
                return out(Val::str(suffix));
            };
            match last {
                StrPiece::Text(t) => go(this, fmt, rest, env, input, format!("{t}{suffix}"), out),
                StrPiece::Interp(q) => this.eval(q, env, input.clone(), &mut |v| {
                    let text = match fmt {
                        None => builtins::tostring(&v),
                        Some(f) => match builtins::format(f, &v)? {
                            Val::Str(s) => s.to_string(),
                            other => builtins::tostring(&other),
                        },
                    };
                    go(this, fmt, rest, env, input, format!("{text}{suffix}"), out)
                }),
            }
        }
        go(self, fmt, pieces, env, &input, String::new(), out)
    }

    fn object(
        &self,
        entries: &'p [(ObjKey, Option<Ast>)],
        at: usize,
        acc: Map,
        env: &Env<'p>,
        input: &Val,
        out: Out,
    ) -> Res {
        let Some((key, value)) = entries.get(at) else {
            return out(Val::obj(acc));
        };
        self.object_key(key, env, input, &mut |this, k| {
            let mut with_value = |this: &Self, v: Val| {
                let mut acc = acc.clone();
                acc.insert(k.clone(), v);
                this.object(entries, at + 1, acc, env, input, out)
            };
            match (key, value) {
                (_, Some(q)) => this.eval(q, env, input.clone(), &mut |v| with_value(this, v)),
                (ObjKey::Var(name), None) => {
                    let v = this.var(name, env)?;
                    with_value(this, v)
                }
                (_, None) => {
                    let v = ops::index(input, &Val::Str(k.clone()))?;
                    with_value(this, v)
                }
            }
        })
    }

    fn object_key(
        &self,
        key: &'p ObjKey,
        env: &Env<'p>,
        input: &Val,
        f: &mut dyn FnMut(&Self, Rc<str>) -> Res,
    ) -> Res {
        match key {
            ObjKey::Name(n) | ObjKey::Var(n) => f(self, Rc::from(&**n)),
            ObjKey::Expr(q) => self.eval(q, env, input.clone(), &mut |k| match k {
                Val::Str(s) => f(self, s),
                other => Err(err(format!(
                    "expected a string for object key but got: {}",
                    builtins::describe(&other)
                ))),
            }),
        }
    }

    fn assign(
        &self,
        op: AssignOp,
        lhs: &'p Ast,
        rhs: &'p Ast,
        env: &Env<'p>,
        input: Val,
        out: Out,
    ) -> Res {
        match op {
            AssignOp::Update => {
                let result = path::modify(self, lhs, env, input, &mut |this, v, out| {
                    this.eval(rhs, env, v, out)
                })?;
                out(result)
            }
            AssignOp::Set => self.eval(rhs, env, input.clone(), &mut |v| {
                let paths = path::collect(self, lhs, env, input.clone())?;
                let mut acc = input.clone();
                for p in paths {
                    acc = ops::setpath(&acc, &p, v.clone())?;
                }
                out(acc)
            }),
            AssignOp::Arith(bin) => self.eval(rhs, env, input.clone(), &mut |v| {
                let result = path::modify(self, lhs, env, input.clone(), &mut |_, x, out| {
                    out(ops::binop(bin, &x, &v)?)
                })?;
                out(result)
            }),
            AssignOp::Alt => self.eval(rhs, env, input.clone(), &mut |v| {
                let result = path::modify(self, lhs, env, input.clone(), &mut |_, x, out| {
                    out(if x.truthy() { x } else { v.clone() })
                })?;
                out(result)
            }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce(
        &self,
        src: &'p Ast,
        pat: &'p Pattern,
        init: &'p Ast,
        update: &'p Ast,
        env: &Env<'p>,
        input: Val,
        out: Out,
    ) -> Res {
        self.eval(init, env, input.clone(), &mut |start| {
            let mut acc = start;
            self.eval(src, env, input.clone(), &mut |item| {
                self.bind(pat, &item, env, &mut |this, env| {
                    let mut last = None;
                    this.eval(update, &env, acc.clone(), &mut |v| {
                        last = Some(v);
                        Ok(())
                    })?;
                    if let Some(v) = last {
                        acc = v;
                    }
                    Ok(())
                })
            })?;
            out(acc)
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn foreach(
        &self,
        src: &'p Ast,
        pat: &'p Pattern,
        init: &'p Ast,
        update: &'p Ast,
        extract: Option<&'p Ast>,
        env: &Env<'p>,
        input: Val,
        out: Out,
    ) -> Res {
        self.eval(init, env, input.clone(), &mut |start| {
            let mut state = start;
            self.eval(src, env, input.clone(), &mut |item| {
                self.bind(pat, &item, env, &mut |this, env| {
                    this.eval(update, &env, state.clone(), &mut |v| {
                        state = v.clone();
                        match extract {
                            None => out(v),
                            Some(x) => this.eval(x, &env, v, out),
                        }
                    })
                })
            })
        })
    }

    /// Binds `pat` to `val` and calls `f` with the new environment for every way it binds.
    pub fn bind(
        &self,
        pat: &'p Pattern,
        val: &Val,
        env: &Env<'p>,
        f: &mut dyn FnMut(&Self, Env<'p>) -> Res,
    ) -> Res {
        match pat {
            Pattern::Var(name) => f(self, env.bind(name, val.clone())),
            Pattern::Array(items) => {
                if !matches!(val, Val::Arr(_) | Val::Null) {
                    return Err(err(format!(
                        "expected an array but got: {}",
                        builtins::describe(val)
                    )));
                }
                self.bind_items(items, 0, val, env.clone(), f)
            }
            Pattern::Object(entries) => self.bind_entries(entries, 0, val, env.clone(), f),
        }
    }

    fn bind_items(
        &self,
        items: &'p [Pattern],
        at: usize,
        val: &Val,
        env: Env<'p>,
        f: &mut dyn FnMut(&Self, Env<'p>) -> Res,
    ) -> Res {
        let Some(p) = items.get(at) else {
            return f(self, env);
        };
        let item = ops::index(val, &Val::Int(at as i64))?;
        self.bind(p, &item, &env, &mut |this, env| {
            this.bind_items(items, at + 1, val, env, f)
        })
    }

    fn bind_entries(
        &self,
        entries: &'p [(ObjKey, Pattern)],
        at: usize,
        val: &Val,
        env: Env<'p>,
        f: &mut dyn FnMut(&Self, Env<'p>) -> Res,
    ) -> Res {
        let Some((key, p)) = entries.get(at) else {
            return f(self, env);
        };
        let input = val.clone();
        self.object_key(key, &env.clone(), &input, &mut |this, k| {
            if !matches!(val, Val::Obj(_) | Val::Null) {
                return Err(err(format!(
                    "expected an object but got: {}",
                    builtins::describe(val)
                )));
            }
            let item = ops::index(val, &Val::Str(k))?;
            this.bind(p, &item, &env, &mut |this, env| {
                this.bind_entries(entries, at + 1, val, env, f)
            })
        })
    }

    /// `?//`: tries each pattern in turn; an error with one (in binding or in the body) moves
    /// to the next, the last one's error stands. Every variable of every pattern is bound.
    fn bind_alternatives(
        &self,
        pats: &'p [Pattern],
        at: usize,
        val: &Val,
        env: &Env<'p>,
        f: &mut dyn FnMut(&Self, Env<'p>) -> Res,
    ) -> Res {
        let mut env = env.clone();
        if pats.len() > 1 {
            for p in pats {
                for name in pattern_vars(p) {
                    env = env.bind(name, Val::Null);
                }
            }
        }
        let Some(pat) = pats.get(at) else {
            return Ok(());
        };
        if at + 1 == pats.len() {
            return self.bind(pat, val, &env, f);
        }
        let id = self.fresh_id();
        let r = self.bind(pat, val, &env, &mut |this, env| {
            f(this, env).map_err(|e| match e {
                Flow::Error(_) => e,
                other => Flow::Pass(id, Box::new(other)),
            })
        });
        match r {
            Err(Flow::Error(_)) => self.bind_alternatives(pats, at + 1, val, &env, f),
            Err(Flow::Pass(p, e)) if p == id => Err(*e),
            other => other,
        }
    }

    fn call(
        &self,
        name: &'p str,
        args: &'p [Ast],
        target: Target,
        env: &Env<'p>,
        input: Val,
        out: Out,
    ) -> Res {
        match target {
            Target::Native(n) => builtins::call(self, n, args, env, input, out),
            _ => match self.callee(name, args.len(), target, env)? {
                Callee::Def(def, defenv) => {
                    self.bind_params(def, defenv, args, env, &input, &mut |this, env| {
                        this.eval(&def.body, &env, input.clone(), out)
                    })
                }
                Callee::Closure(body, cenv) => self.eval(body, &cenv, input, out),
                Callee::Value(v) => out(v),
            },
        }
    }

    /// The definition, closure or `$x` value a non-native call refers to.
    pub fn callee(
        &self,
        name: &str,
        arity: usize,
        target: Target,
        env: &Env<'p>,
    ) -> Result<Callee<'p>, Flow> {
        let undefined = || err(format!("function not defined: {name}/{arity}"));
        if let Target::Prelude(i) = target {
            return Ok(Callee::Def(&self.prelude[i], Env::default()));
        }
        let frame = env.func_frame(name, arity).ok_or_else(undefined)?;
        match &*frame {
            Frame::Func(def, _) => Ok(Callee::Def(def, Env(Some(frame.clone())))),
            Frame::Closure(_, body, cenv, _) => Ok(Callee::Closure(body, cenv.clone())),
            Frame::ValueFn(_, v, _) => Ok(Callee::Value(v.clone())),
            _ => Err(undefined()),
        }
    }

    /// Binds a definition's parameters: filter parameters become closures over the caller's
    /// environment, `$x` parameters each output of their argument in turn (the last varying
    /// slowest); `f` runs once per binding.
    pub fn bind_params(
        &self,
        def: &'p FuncDef,
        defenv: Env<'p>,
        args: &'p [Ast],
        caller: &Env<'p>,
        input: &Val,
        f: &mut dyn FnMut(&Self, Env<'p>) -> Res,
    ) -> Res {
        let mut env = defenv;
        let mut values = Vec::new();
        for (param, arg) in def.params.iter().zip(args) {
            match param.strip_prefix('$') {
                Some(var) => values.push((var, arg)),
                None => {
                    let caller = caller.clone();
                    env = env.push(|next| Frame::Closure(param, arg, caller, next));
                }
            }
        }
        self.bind_values(&values, env, caller, input, f)
    }

    fn bind_values(
        &self,
        values: &[(&'p str, &'p Ast)],
        env: Env<'p>,
        caller: &Env<'p>,
        input: &Val,
        f: &mut dyn FnMut(&Self, Env<'p>) -> Res,
    ) -> Res {
        let Some(((name, arg), rest)) = values.split_last() else {
            return f(self, env);
        };
        self.eval(arg, caller, input.clone(), &mut |v| {
            let env = env
                .bind(name, v.clone())
                .push(|next| Frame::ValueFn(name, v, next));
            self.bind_values(rest, env, caller, input, f)
        })
    }

    /// Evaluates each argument and calls `f` with every combination, the last argument
    /// varying slowest (gojq's order).
    pub fn cartesian(
        &self,
        args: &'p [Ast],
        env: &Env<'p>,
        input: &Val,
        f: &mut dyn FnMut(&Self, &[Val]) -> Res,
    ) -> Res {
        let mut vals = vec![Val::Null; args.len()];
        self.cartesian_from(args, args.len(), env, input, &mut vals, f)
    }

    fn cartesian_from(
        &self,
        args: &'p [Ast],
        n: usize,
        env: &Env<'p>,
        input: &Val,
        vals: &mut Vec<Val>,
        f: &mut dyn FnMut(&Self, &[Val]) -> Res,
    ) -> Res {
        if n == 0 {
            return f(self, vals);
        }
        let mut outs = Vec::new();
        self.eval(&args[n - 1], env, input.clone(), &mut |v| {
            outs.push(v);
            Ok(())
        })?;
        for v in outs {
            vals[n - 1] = v;
            self.cartesian_from(args, n - 1, env, input, vals, f)?;
        }
        Ok(())
    }

    /// The outputs of `ast` collected.
    pub fn collect(&self, ast: &'p Ast, env: &Env<'p>, input: Val) -> Result<Vec<Val>, Flow> {
        let mut outs = Vec::new();
        self.eval(ast, env, input, &mut |v| {
            outs.push(v);
            Ok(())
        })?;
        Ok(outs)
    }
}

pub fn push_defs<'p>(defs: &'p [std::sync::Arc<FuncDef>], env: &Env<'p>) -> Env<'p> {
    defs.iter().fold(env.clone(), |env, def| {
        env.push(|next| Frame::Func(def, next))
    })
}

fn pattern_vars(p: &Pattern) -> Vec<&str> {
    match p {
        Pattern::Var(n) => vec![n],
        Pattern::Array(items) => items.iter().flat_map(pattern_vars).collect(),
        Pattern::Object(entries) => entries.iter().flat_map(|(_, p)| pattern_vars(p)).collect(),
    }
}

pub fn lit_val(lit: &Lit) -> Val {
    match lit {
        Lit::Null => Val::Null,
        Lit::Bool(b) => Val::Bool(*b),
        Lit::Int(i) => Val::Int(*i),
        Lit::Float(f) => Val::Float(*f),
        Lit::Big(b) => Val::big(b.clone()),
        Lit::Str(s) => Val::Str(Rc::from(&**s)),
    }
}

/// `..`: the value, then every value inside it, depth first.
pub fn recurse_values(v: Val, out: Out) -> Res {
    out(v.clone())?;
    match &v {
        Val::Arr(items) => items
            .iter()
            .try_for_each(|x| recurse_values(x.clone(), out)),
        Val::Obj(map) => map
            .values()
            .try_for_each(|x| recurse_values(x.clone(), out)),
        _ => Ok(()),
    }
}
