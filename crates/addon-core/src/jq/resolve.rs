//! Name resolution at compile time: every call is bound to a definition in scope, the prelude or a native, and undefined names are compile errors as in gojq.

use std::sync::{Arc, OnceLock};

use super::ast::{Ast, FuncDef, ObjKey, Pattern, StrPiece, Target};
use super::eval::builtins;
use super::parse;

const PRELUDE: &str = include_str!("prelude.jq");

/// A name nothing in scope defines, or a prelude that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("function not defined: {name}/{arity}")]
    UndefinedFunction { name: String, arity: usize },
    #[error("variable not defined: ${name}")]
    UndefinedVariable { name: String },
    #[error("prelude: {message}")]
    Prelude { message: String },
}

/// The jq-written standard library, parsed and resolved once per process.
pub fn prelude() -> Result<Arc<Vec<FuncDef>>, ResolveError> {
    static CELL: OnceLock<Result<Arc<Vec<FuncDef>>, ResolveError>> = OnceLock::new();
    CELL.get_or_init(|| {
        let defs =
            parse::parse_defs(PRELUDE).map_err(|e| ResolveError::Prelude { message: e.0 })?;
        let sigs: Vec<(Box<str>, usize)> = defs
            .iter()
            .map(|d| (d.name.clone(), d.params.len()))
            .collect();
        let mut resolved = Vec::with_capacity(defs.len());
        for mut def in defs {
            let mut scope = Scope {
                prelude: &sigs,
                items: Vec::new(),
            };
            scope.params(&def.params);
            scope.ast(&mut def.body)?;
            resolved.push(def);
        }
        Ok(Arc::new(resolved))
    })
    .clone()
}

/// Resolves the calls and variables of a user's filter.
pub fn resolve(ast: &mut Ast, prelude: &[FuncDef]) -> Result<(), ResolveError> {
    let sigs: Vec<(Box<str>, usize)> = prelude
        .iter()
        .map(|d| (d.name.clone(), d.params.len()))
        .collect();
    Scope {
        prelude: &sigs,
        items: Vec::new(),
    }
    .ast(ast)
}

enum Item {
    Func(Box<str>, usize),
    Var(Box<str>),
}

struct Scope<'a> {
    prelude: &'a [(Box<str>, usize)],
    items: Vec<Item>,
}

impl Scope<'_> {
    fn params(&mut self, params: &[Box<str>]) {
        for p in params {
            match p.strip_prefix('$') {
                Some(v) => {
                    self.items.push(Item::Var(v.into()));
                    self.items.push(Item::Func(v.into(), 0));
                }
                None => self.items.push(Item::Func(p.clone(), 0)),
            }
        }
    }

    fn has_func(&self, name: &str, arity: usize) -> bool {
        self.items
            .iter()
            .rev()
            .any(|i| matches!(i, Item::Func(n, a) if &**n == name && *a == arity))
    }

    fn has_var(&self, name: &str) -> bool {
        self.items
            .iter()
            .rev()
            .any(|i| matches!(i, Item::Var(n) if &**n == name))
    }

    fn target(&self, name: &str, arity: usize) -> Result<Target, ResolveError> {
        if self.has_func(name, arity) {
            return Ok(Target::Local);
        }
        if let Some(i) = self
            .prelude
            .iter()
            .position(|(n, a)| &**n == name && *a == arity)
        {
            return Ok(Target::Prelude(i));
        }
        builtins::lookup(name, arity)
            .map(Target::Native)
            .ok_or_else(|| ResolveError::UndefinedFunction {
                name: name.to_string(),
                arity,
            })
    }

    /// Runs `f` with the variables of `pats` in scope, then drops them.
    fn with_patterns(
        &mut self,
        pats: &mut [Pattern],
        f: impl FnOnce(&mut Self) -> Result<(), ResolveError>,
    ) -> Result<(), ResolveError> {
        let mark = self.items.len();
        for p in pats.iter_mut() {
            self.pattern(p)?;
        }
        let r = f(self);
        self.items.truncate(mark);
        r
    }

    fn pattern(&mut self, p: &mut Pattern) -> Result<(), ResolveError> {
        match p {
            Pattern::Var(n) => self.items.push(Item::Var(n.clone())),
            Pattern::Array(items) => {
                for x in items {
                    self.pattern(x)?;
                }
            }
            Pattern::Object(entries) => {
                for (k, x) in entries {
                    if let ObjKey::Expr(q) = k {
                        self.ast(q)?;
                    }
                    self.pattern(x)?;
                }
            }
        }
        Ok(())
    }

    fn def(&mut self, def: &mut FuncDef) -> Result<(), ResolveError> {
        let mark = self.items.len();
        self.params(&def.params);
        let r = self.ast(&mut def.body);
        self.items.truncate(mark);
        r
    }

    fn ast(&mut self, ast: &mut Ast) -> Result<(), ResolveError> {
        match ast {
            Ast::Identity | Ast::RecurseAll | Ast::Lit(_) | Ast::Format(_) | Ast::Loc(_) => Ok(()),
            Ast::Break(_) => Ok(()),
            Ast::Var(name) => {
                if self.has_var(name) || &**name == "ENV" {
                    Ok(())
                } else {
                    Err(ResolveError::UndefinedVariable {
                        name: name.to_string(),
                    })
                }
            }
            Ast::Str(_, pieces) => {
                for p in pieces {
                    if let StrPiece::Interp(q) = p {
                        self.ast(q)?;
                    }
                }
                Ok(())
            }
            Ast::Index(a, b)
            | Ast::Pipe(a, b)
            | Ast::Comma(a, b)
            | Ast::Bin(_, a, b)
            | Ast::And(a, b)
            | Ast::Or(a, b)
            | Ast::Alt(a, b)
            | Ast::Assign(_, a, b) => {
                self.ast(a)?;
                self.ast(b)
            }
            Ast::Slice(t, from, to) => {
                self.ast(t)?;
                for x in [from, to].into_iter().flatten() {
                    self.ast(x)?;
                }
                Ok(())
            }
            Ast::Iterate(t) | Ast::Optional(t) | Ast::Neg(t) | Ast::Label(_, t) => self.ast(t),
            Ast::Array(q) => q.as_deref_mut().map_or(Ok(()), |q| self.ast(q)),
            Ast::Object(entries) => {
                for (k, v) in entries {
                    match k {
                        ObjKey::Expr(q) => self.ast(q)?,
                        ObjKey::Var(n) if v.is_none() && !self.has_var(n) => {
                            return Err(ResolveError::UndefinedVariable {
                                name: n.to_string(),
                            });
                        }
                        _ => {}
                    }
                    if let Some(v) = v {
                        self.ast(v)?;
                    }
                }
                Ok(())
            }
            Ast::If(c, t, e) => {
                self.ast(c)?;
                self.ast(t)?;
                e.as_deref_mut().map_or(Ok(()), |e| self.ast(e))
            }
            Ast::Try(b, c) => {
                self.ast(b)?;
                c.as_deref_mut().map_or(Ok(()), |c| self.ast(c))
            }
            Ast::Reduce(src, pat, init, update) => {
                self.ast(src)?;
                self.ast(init)?;
                self.with_patterns(std::slice::from_mut(pat), |s| s.ast(update))
            }
            Ast::Foreach(src, pat, init, update, extract) => {
                self.ast(src)?;
                self.ast(init)?;
                self.with_patterns(std::slice::from_mut(pat), |s| {
                    s.ast(update)?;
                    extract.as_deref_mut().map_or(Ok(()), |x| s.ast(x))
                })
            }
            Ast::Bind(src, pats, body) => {
                self.ast(src)?;
                self.with_patterns(pats, |s| s.ast(body))
            }
            Ast::Defs(defs, body) => {
                let mark = self.items.len();
                for def in defs.iter_mut() {
                    self.items
                        .push(Item::Func(def.name.clone(), def.params.len()));
                    let def = Arc::make_mut(def);
                    self.def(def)?;
                }
                let r = self.ast(body);
                self.items.truncate(mark);
                r
            }
            Ast::Call(name, args, target) => {
                for a in args.iter_mut() {
                    self.ast(a)?;
                }
                *target = self.target(name, args.len())?;
                Ok(())
            }
        }
    }
}
