//! The jq parser: tokens to [`Ast`] with gojq's grammar and operator precedence.

use std::sync::Arc;

use super::ast::{AssignOp, Ast, BinOp, FuncDef, Lit, ObjKey, Pattern, StrPiece, Target};
use super::lex::{Lexer, StrPart, Tok};

/// A parse error with the text near where it happened.
#[derive(Debug)]
pub struct ParseError(pub String);

pub fn parse(src: &str) -> Result<Ast, ParseError> {
    let tokens = Lexer::new(src)
        .tokens(false)
        .map_err(|e| ParseError(format!("{} near '{}'", e.message, snippet(src, e.at))))?;
    let mut p = Parser {
        src,
        toks: tokens,
        pos: 0,
    };
    let ast = p.pipe()?;
    if p.pos < p.toks.len() {
        return Err(p.error("unexpected token"));
    }
    Ok(ast)
}

/// Parses a list of definitions (the jq-written standard library).
pub fn parse_defs(src: &str) -> Result<Vec<FuncDef>, ParseError> {
    let tokens = Lexer::new(src)
        .tokens(false)
        .map_err(|e| ParseError(e.message))?;
    let mut p = Parser {
        src,
        toks: tokens,
        pos: 0,
    };
    let mut defs = Vec::new();
    while p.pos < p.toks.len() {
        p.expect_keyword("def")?;
        defs.push(p.def()?);
    }
    Ok(defs)
}

fn snippet(src: &str, at: usize) -> String {
    let s: String = src.get(at..).unwrap_or("").chars().take(20).collect();
    if s.is_empty() {
        "end of input".to_string()
    } else {
        s
    }
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(Tok, usize)>,
    pos: usize,
}

type Res<T> = Result<T, ParseError>;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).map(|(t, _)| t.clone());
        self.pos += 1;
        t
    }

    fn error(&self, what: &str) -> ParseError {
        let at = self
            .toks
            .get(self.pos)
            .map_or(self.src.len(), |(_, at)| *at);
        ParseError(format!("{what} near '{}'", snippet(self.src, at)))
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
    }

    fn is_keyword(&self, k: &str) -> bool {
        matches!(self.peek(), Some(Tok::Keyword(w)) if *w == k)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let hit = self.is_op(op);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn expect_op(&mut self, op: &str) -> Res<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{op}'")))
        }
    }

    fn expect_keyword(&mut self, k: &str) -> Res<()> {
        if self.is_keyword(k) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected '{k}'")))
        }
    }

    /// A whole query: definitions, `label`, bindings and `|` chains.
    fn pipe(&mut self) -> Res<Ast> {
        let lhs = self.binary(2)?;
        if self.eat_op("|") {
            let rhs = self.pipe()?;
            return Ok(Ast::Pipe(Box::new(lhs), Box::new(rhs)));
        }
        Ok(lhs)
    }

    fn binary(&mut self, min_prec: u8) -> Res<Ast> {
        let mut lhs = self.operand()?;
        while let Some((prec, right_assoc)) = self.peek().and_then(binop_prec) {
            if prec < min_prec {
                break;
            }
            let tok = self.next();
            let rhs = self.binary(if right_assoc { prec } else { prec + 1 })?;
            lhs = combine(tok, lhs, rhs);
        }
        Ok(lhs)
    }

    /// A term, or a form that takes the rest of the query as its body (`def`, `label`, `as`).
    fn operand(&mut self) -> Res<Ast> {
        if self.is_keyword("def") {
            let mut defs = Vec::new();
            while self.is_keyword("def") {
                self.pos += 1;
                defs.push(Arc::new(self.def()?));
            }
            let body = self.pipe()?;
            return Ok(Ast::Defs(defs, Box::new(body)));
        }
        if self.is_keyword("label") {
            self.pos += 1;
            let Some(Tok::Var(name)) = self.next() else {
                return Err(self.error("expected a $name after label"));
            };
            self.expect_op("|")?;
            let body = self.pipe()?;
            return Ok(Ast::Label(name.into(), Box::new(body)));
        }
        let term = self.unary()?;
        if self.is_keyword("as") {
            self.pos += 1;
            let mut patterns = vec![self.pattern()?];
            while self.eat_op("?//") {
                patterns.push(self.pattern()?);
            }
            self.expect_op("|")?;
            let body = self.pipe()?;
            return Ok(Ast::Bind(Box::new(term), patterns, Box::new(body)));
        }
        Ok(term)
    }

    fn unary(&mut self) -> Res<Ast> {
        if self.eat_op("-") {
            return Ok(Ast::Neg(Box::new(self.unary()?)));
        }
        if self.eat_op("+") {
            let t = self.unary()?;
            return Ok(Ast::Call("_plus".into(), vec![t], Target::Local));
        }
        self.postfix()
    }

    fn def(&mut self) -> Res<FuncDef> {
        let Some(Tok::Ident(name)) = self.next() else {
            return Err(self.error("expected a function name after def"));
        };
        let mut params = Vec::new();
        if self.eat_op("(") {
            loop {
                match self.next() {
                    Some(Tok::Ident(p)) => params.push(p.into()),
                    Some(Tok::Var(p)) => params.push(format!("${p}").into()),
                    _ => return Err(self.error("expected a parameter name")),
                }
                if !self.eat_op(";") {
                    break;
                }
            }
            self.expect_op(")")?;
        }
        self.expect_op(":")?;
        let body = self.pipe()?;
        self.expect_op(";")?;
        Ok(FuncDef {
            name: name.into(),
            params,
            body,
        })
    }

    /// A term and its suffixes: `.name`, `."name"`, `[...]`, `.[...]` and `?`.
    fn postfix(&mut self) -> Res<Ast> {
        let mut t = self.primary()?;
        // Whether the outermost node of `t` is a suffix of this loop (not the primary term or a `?`).
        let mut after_suffix = false;
        loop {
            match self.peek() {
                Some(Tok::Field(name)) => {
                    let key = Ast::Lit(Lit::Str(name.as_str().into()));
                    self.pos += 1;
                    t = Ast::Index(Box::new(t), Box::new(key));
                }
                Some(Tok::Op("?")) => {
                    self.pos += 1;
                    t = optional(t, after_suffix);
                    after_suffix = false;
                    continue;
                }
                Some(Tok::Op("[")) => t = self.bracket(t)?,
                Some(Tok::Op(".")) => match self.toks.get(self.pos + 1).map(|(t, _)| t) {
                    Some(Tok::Op("[")) => {
                        self.pos += 1;
                        t = self.bracket(t)?;
                    }
                    Some(Tok::Str(_)) => {
                        self.pos += 1;
                        let key = self.string(None)?;
                        t = Ast::Index(Box::new(t), Box::new(key));
                    }
                    _ => break,
                },
                _ => break,
            }
            after_suffix = true;
        }
        Ok(t)
    }

    /// `[]`, `[q]`, `[q:]`, `[:q]`, `[q:q]` after a term.
    fn bracket(&mut self, t: Ast) -> Res<Ast> {
        self.expect_op("[")?;
        if self.eat_op("]") {
            return Ok(Ast::Iterate(Box::new(t)));
        }
        if self.eat_op(":") {
            let to = self.pipe()?;
            self.expect_op("]")?;
            return Ok(Ast::Slice(Box::new(t), None, Some(Box::new(to))));
        }
        let idx = self.pipe()?;
        if self.eat_op(":") {
            if self.eat_op("]") {
                return Ok(Ast::Slice(Box::new(t), Some(Box::new(idx)), None));
            }
            let to = self.pipe()?;
            self.expect_op("]")?;
            return Ok(Ast::Slice(
                Box::new(t),
                Some(Box::new(idx)),
                Some(Box::new(to)),
            ));
        }
        self.expect_op("]")?;
        Ok(Ast::Index(Box::new(t), Box::new(idx)))
    }

    fn primary(&mut self) -> Res<Ast> {
        let at = self.pos;
        let Some(tok) = self.next() else {
            return Err(self.error("unexpected end of filter"));
        };
        Ok(match tok {
            Tok::Op(".") => match self.peek() {
                Some(Tok::Str(_)) => {
                    let key = self.string(None)?;
                    Ast::Index(Box::new(Ast::Identity), Box::new(key))
                }
                Some(Tok::Op("[")) => self.bracket(Ast::Identity)?,
                _ => Ast::Identity,
            },
            Tok::Op("..") => Ast::RecurseAll,
            Tok::Field(name) => Ast::Index(
                Box::new(Ast::Identity),
                Box::new(Ast::Lit(Lit::Str(name.into()))),
            ),
            Tok::Num(lit) => Ast::Lit(lit),
            Tok::Str(_) => {
                self.pos = at;
                self.string(None)?
            }
            Tok::Format(f) => {
                if matches!(self.peek(), Some(Tok::Str(_))) {
                    self.string(Some(f.into()))?
                } else {
                    Ast::Format(f.into())
                }
            }
            Tok::Op("(") => {
                let q = self.pipe()?;
                self.expect_op(")")?;
                q
            }
            Tok::Op("[") => {
                if self.eat_op("]") {
                    Ast::Array(None)
                } else {
                    let q = self.pipe()?;
                    self.expect_op("]")?;
                    Ast::Array(Some(Box::new(q)))
                }
            }
            Tok::Op("{") => self.object()?,
            Tok::Var(name) if name == "__loc__" => Ast::Loc(self.line_of(at)),
            Tok::Var(name) => Ast::Var(name.into()),
            Tok::Keyword("if") => self.if_rest()?,
            Tok::Keyword("try") => {
                let body = self.unary()?;
                let catch = if self.is_keyword("catch") {
                    self.pos += 1;
                    Some(Box::new(self.unary()?))
                } else {
                    None
                };
                Ast::Try(Box::new(body), catch)
            }
            Tok::Keyword("reduce") => {
                let src = self.postfix()?;
                self.expect_keyword("as")?;
                let pat = self.pattern()?;
                self.expect_op("(")?;
                let init = self.pipe()?;
                self.expect_op(";")?;
                let update = self.pipe()?;
                self.expect_op(")")?;
                Ast::Reduce(Box::new(src), pat, Box::new(init), Box::new(update))
            }
            Tok::Keyword("foreach") => self.foreach_rest()?,
            Tok::Ident(name) => self.ident(name)?,
            _ => {
                self.pos = at;
                return Err(self.error("unexpected token"));
            }
        })
    }

    fn line_of(&self, tok: usize) -> usize {
        let at = self.toks.get(tok).map_or(0, |(_, at)| *at);
        1 + self.src[..at].matches('\n').count()
    }

    fn ident(&mut self, name: String) -> Res<Ast> {
        match name.as_str() {
            "null" => return Ok(Ast::Lit(Lit::Null)),
            "true" => return Ok(Ast::Lit(Lit::Bool(true))),
            "false" => return Ok(Ast::Lit(Lit::Bool(false))),
            "break" => {
                let Some(Tok::Var(label)) = self.next() else {
                    return Err(self.error("expected a $label after break"));
                };
                return Ok(Ast::Break(label.into()));
            }
            _ => {}
        }
        let mut args = Vec::new();
        if self.eat_op("(") {
            loop {
                args.push(self.pipe()?);
                if !self.eat_op(";") {
                    break;
                }
            }
            self.expect_op(")")?;
        }
        Ok(Ast::Call(name.into(), args, Target::Local))
    }

    fn if_rest(&mut self) -> Res<Ast> {
        let cond = self.pipe()?;
        self.expect_keyword("then")?;
        let then = self.pipe()?;
        let otherwise = if self.is_keyword("elif") {
            self.pos += 1;
            Some(Box::new(self.if_rest()?))
        } else if self.is_keyword("else") {
            self.pos += 1;
            let e = self.pipe()?;
            self.expect_keyword("end")?;
            Some(Box::new(e))
        } else {
            self.expect_keyword("end")?;
            None
        };
        Ok(Ast::If(Box::new(cond), Box::new(then), otherwise))
    }

    fn foreach_rest(&mut self) -> Res<Ast> {
        let src = self.postfix()?;
        self.expect_keyword("as")?;
        let pat = self.pattern()?;
        self.expect_op("(")?;
        let init = self.pipe()?;
        self.expect_op(";")?;
        let update = self.pipe()?;
        let extract = if self.eat_op(";") {
            Some(Box::new(self.pipe()?))
        } else {
            None
        };
        self.expect_op(")")?;
        Ok(Ast::Foreach(
            Box::new(src),
            pat,
            Box::new(init),
            Box::new(update),
            extract,
        ))
    }

    fn pattern(&mut self) -> Res<Pattern> {
        match self.next() {
            Some(Tok::Var(name)) => Ok(Pattern::Var(name.into())),
            Some(Tok::Op("[")) => Ok(Pattern::Array(self.list("]", Self::pattern)?)),
            Some(Tok::Op("{")) => Ok(Pattern::Object(self.list("}", Self::object_pattern_entry)?)),
            _ => {
                self.pos = self.pos.saturating_sub(1);
                Err(self.error("expected a pattern"))
            }
        }
    }

    /// Items separated by `,` up to `close` (consumed).
    fn list<T>(&mut self, close: &str, item: fn(&mut Self) -> Res<T>) -> Res<Vec<T>> {
        let mut items = Vec::new();
        loop {
            items.push(item(self)?);
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(close)?;
        Ok(items)
    }

    fn object_pattern_entry(&mut self) -> Res<(ObjKey, Pattern)> {
        let at = self.pos;
        let key = match self.next() {
            Some(Tok::Var(name)) => {
                if self.eat_op(":") {
                    // `{$a: pattern}` binds $a to .a and destructures it too.
                    let inner = self.pattern()?;
                    return Ok((
                        ObjKey::Var(name.as_str().into()),
                        Pattern::Array(vec![Pattern::Var(name.into()), inner]),
                    ));
                }
                return Ok((
                    ObjKey::Name(name.as_str().into()),
                    Pattern::Var(name.into()),
                ));
            }
            Some(Tok::Ident(name)) => ObjKey::Name(name.into()),
            Some(Tok::Keyword(k)) => ObjKey::Name(k.into()),
            Some(Tok::Str(_)) => {
                self.pos = at;
                string_key(self.string(None)?)
            }
            Some(Tok::Op("(")) => {
                let q = self.pipe()?;
                self.expect_op(")")?;
                ObjKey::Expr(Box::new(q))
            }
            _ => {
                self.pos = at;
                return Err(self.error("expected an object pattern key"));
            }
        };
        self.expect_op(":")?;
        Ok((key, self.pattern()?))
    }

    fn object(&mut self) -> Res<Ast> {
        let mut entries = Vec::new();
        if self.eat_op("}") {
            return Ok(Ast::Object(entries));
        }
        loop {
            entries.push(self.object_entry()?);
            if !self.eat_op(",") {
                break;
            }
            if self.is_op("}") {
                break;
            }
        }
        self.expect_op("}")?;
        Ok(Ast::Object(entries))
    }

    fn object_entry(&mut self) -> Res<(ObjKey, Option<Ast>)> {
        let at = self.pos;
        let key = match self.next() {
            Some(Tok::Var(name)) if name == "__loc__" => {
                return Ok((
                    ObjKey::Name("__loc__".into()),
                    Some(Ast::Loc(self.line_of(at))),
                ));
            }
            Some(Tok::Var(name)) => ObjKey::Var(name.into()),
            Some(Tok::Ident(name)) => ObjKey::Name(name.into()),
            Some(Tok::Keyword(k)) => ObjKey::Name(k.into()),
            Some(Tok::Num(Lit::Int(i))) => ObjKey::Name(i.to_string().into()),
            Some(Tok::Str(_)) => {
                self.pos = at;
                string_key(self.string(None)?)
            }
            Some(Tok::Format(f)) if matches!(self.peek(), Some(Tok::Str(_))) => {
                string_key(self.string(Some(f.into()))?)
            }
            Some(Tok::Op("(")) => {
                let q = self.pipe()?;
                self.expect_op(")")?;
                ObjKey::Expr(Box::new(q))
            }
            _ => {
                self.pos = at;
                return Err(self.error("expected an object key"));
            }
        };
        if !self.eat_op(":") {
            return Ok((key, None));
        }
        let mut val = self.binary(3)?;
        while self.eat_op("|") {
            let rhs = self.binary(3)?;
            val = Ast::Pipe(Box::new(val), Box::new(rhs));
        }
        Ok((key, Some(val)))
    }

    /// The string token at the cursor, with its interpolations parsed.
    fn string(&mut self, format: Option<Box<str>>) -> Res<Ast> {
        let Some(Tok::Str(parts)) = self.next() else {
            return Err(self.error("expected a string"));
        };
        let mut pieces = Vec::new();
        for part in parts {
            match part {
                StrPart::Text(t) => pieces.push(StrPiece::Text(t.into())),
                StrPart::Interp(toks) => {
                    let mut inner = Parser {
                        src: self.src,
                        toks,
                        pos: 0,
                    };
                    let q = inner.pipe()?;
                    if inner.pos < inner.toks.len() {
                        return Err(inner.error("unexpected token in string interpolation"));
                    }
                    pieces.push(StrPiece::Interp(q));
                }
            }
        }
        if format.is_none()
            && let [StrPiece::Text(t)] = pieces.as_slice()
        {
            return Ok(Ast::Lit(Lit::Str(t.clone())));
        }
        Ok(Ast::Str(format, pieces))
    }
}

/// `t?` with gojq's scope (its `compileTermSuffix`): after an index, slice or `[]` suffix the `?`
/// covers that one suffix, applied to each output of the term before it (`.items[]?.x[]?` is
/// `.items | try .[] | .x | try .[]`), so an error on one item ends only that item's outputs; a
/// key or bound inside the brackets then reads that output, not the term's input (`.a[.k]?` is
/// `.a | try .[.k]`). After anything else (a primary term such as `.a`, `(...)` or `f(x)`, or
/// another `?`) it covers the whole term.
fn optional(t: Ast, after_suffix: bool) -> Ast {
    let attempt = |suffix: Ast| Box::new(Ast::Optional(Box::new(suffix)));
    let here = || Box::new(Ast::Identity);
    match t {
        Ast::Index(base, key) if after_suffix => Ast::Pipe(base, attempt(Ast::Index(here(), key))),
        Ast::Slice(base, from, to) if after_suffix => {
            Ast::Pipe(base, attempt(Ast::Slice(here(), from, to)))
        }
        Ast::Iterate(base) if after_suffix => Ast::Pipe(base, attempt(Ast::Iterate(here()))),
        other => Ast::Optional(Box::new(other)),
    }
}

fn string_key(ast: Ast) -> ObjKey {
    match ast {
        Ast::Lit(Lit::Str(s)) => ObjKey::Name(s),
        other => ObjKey::Expr(Box::new(other)),
    }
}

/// Precedence and right-associativity of a binary operator token.
fn binop_prec(tok: &Tok) -> Option<(u8, bool)> {
    Some(match tok {
        Tok::Op(",") => (2, false),
        Tok::Op("//") => (3, true),
        Tok::Op("=" | "|=" | "+=" | "-=" | "*=" | "/=" | "%=" | "//=") => (4, false),
        Tok::Keyword("or") => (5, false),
        Tok::Keyword("and") => (6, false),
        Tok::Op("==" | "!=" | "<" | "<=" | ">" | ">=") => (7, false),
        Tok::Op("+" | "-") => (8, false),
        Tok::Op("*" | "/" | "%") => (9, false),
        _ => return None,
    })
}

fn combine(tok: Option<Tok>, l: Ast, r: Ast) -> Ast {
    let (l, r) = (Box::new(l), Box::new(r));
    let op = match tok {
        Some(Tok::Keyword("or")) => return Ast::Or(l, r),
        Some(Tok::Keyword("and")) => return Ast::And(l, r),
        Some(Tok::Op(op)) => op,
        _ => ",",
    };
    match op {
        "," => Ast::Comma(l, r),
        "//" => Ast::Alt(l, r),
        "=" => Ast::Assign(AssignOp::Set, l, r),
        "|=" => Ast::Assign(AssignOp::Update, l, r),
        "//=" => Ast::Assign(AssignOp::Alt, l, r),
        "+=" | "-=" | "*=" | "/=" | "%=" => Ast::Assign(AssignOp::Arith(bin_op(&op[..1])), l, r),
        _ => Ast::Bin(bin_op(op), l, r),
    }
}

fn bin_op(op: &str) -> BinOp {
    match op {
        "==" => BinOp::Eq,
        "!=" => BinOp::Ne,
        "<" => BinOp::Lt,
        "<=" => BinOp::Le,
        ">" => BinOp::Gt,
        ">=" => BinOp::Ge,
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        _ => BinOp::Mod,
    }
}
