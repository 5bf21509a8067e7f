//! The syntax tree of a jq program. It holds only `Send + Sync` data, so a compiled filter is shared between threads.

use num_bigint::BigInt;

/// A literal number or string as written in the filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Big(BigInt),
    Str(Box<str>),
}

impl Lit {
    /// A number literal the way gojq reads one: an integer when it has no `.`/exponent and fits,
    /// a big integer when it does not fit, else a float.
    pub fn number(text: &str) -> Self {
        if !text.contains(['.', 'e', 'E']) {
            if let Ok(i) = text.parse::<i64>() {
                return Self::Int(i);
            }
            if let Ok(b) = text.parse::<BigInt>() {
                return Self::Big(b);
            }
        }
        Self::Float(text.parse::<f64>().unwrap_or(f64::INFINITY))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The assignment operators: `=`, `|=`, and the arithmetic ones (`+=` ... `//=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Update,
    Arith(BinOp),
    Alt,
}

/// A destructuring pattern of `as`, `reduce` and `foreach`.
#[derive(Debug, Clone)]
pub enum Pattern {
    Var(Box<str>),
    Array(Vec<Pattern>),
    Object(Vec<(ObjKey, Pattern)>),
}

/// The key of an object construction or object pattern entry.
#[derive(Debug, Clone)]
pub enum ObjKey {
    /// A plain name or a literal string.
    Name(Box<str>),
    /// `$name` in a pattern or `{$name}`: the key is the name, the value the variable.
    Var(Box<str>),
    /// An interpolated string or `(query)`.
    Expr(Box<Ast>),
}

#[derive(Debug, Clone)]
pub struct FuncDef {
    pub name: Box<str>,
    /// Parameter names; `$x` parameters keep their dollar.
    pub params: Vec<Box<str>>,
    pub body: Ast,
}

/// What a call refers to, decided when the filter is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A definition or a closure parameter in scope, looked up in the environment at run time.
    Local,
    /// A definition of the jq-written standard library.
    Prelude(usize),
    /// A function implemented in Rust.
    Native(Native),
}

#[derive(Debug, Clone)]
pub enum Ast {
    Identity,
    RecurseAll,
    Lit(Lit),
    /// A string with interpolations, with an optional `@format` applied to them.
    Str(Option<Box<str>>, Vec<StrPiece>),
    /// `@format` alone: the format applied to `.`.
    Format(Box<str>),
    Index(Box<Ast>, Box<Ast>),
    Slice(Box<Ast>, Option<Box<Ast>>, Option<Box<Ast>>),
    Iterate(Box<Ast>),
    /// `f?`: errors of `f` end its outputs silently.
    Optional(Box<Ast>),
    Array(Option<Box<Ast>>),
    Object(Vec<(ObjKey, Option<Ast>)>),
    Neg(Box<Ast>),
    Pipe(Box<Ast>, Box<Ast>),
    Comma(Box<Ast>, Box<Ast>),
    Bin(BinOp, Box<Ast>, Box<Ast>),
    And(Box<Ast>, Box<Ast>),
    Or(Box<Ast>, Box<Ast>),
    Alt(Box<Ast>, Box<Ast>),
    Assign(AssignOp, Box<Ast>, Box<Ast>),
    If(Box<Ast>, Box<Ast>, Option<Box<Ast>>),
    Try(Box<Ast>, Option<Box<Ast>>),
    Reduce(Box<Ast>, Pattern, Box<Ast>, Box<Ast>),
    Foreach(Box<Ast>, Pattern, Box<Ast>, Box<Ast>, Option<Box<Ast>>),
    /// Function definitions visible in the body.
    Defs(Vec<std::sync::Arc<FuncDef>>, Box<Ast>),
    Call(Box<str>, Vec<Ast>, Target),
    Var(Box<str>),
    /// `src as $p ?// $q | body`: the patterns are alternatives.
    Bind(Box<Ast>, Vec<Pattern>, Box<Ast>),
    Label(Box<str>, Box<Ast>),
    Break(Box<str>),
    Loc(usize),
}

#[derive(Debug, Clone)]
pub enum StrPiece {
    Text(Box<str>),
    Interp(Ast),
}

/// A native function (written in Rust): its index in the natives' table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Native(pub(crate) u16);
