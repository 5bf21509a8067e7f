//! The in-process fast path for jqFilters that only project (`.metadata.name`, `{name: .metadata.name}`, `[.a, .b]`): recognised at compile time, evaluated directly on `serde_json` values.
//!
//! A projection is built from `.`, literals (null, booleans, integers, strings), field access
//! by a literal name (`.a`, `."a"`, `.["a"]`), `?`, pipes, object construction with literal keys,
//! array construction (with `,` inside), `$__loc__`, and a `,` at the top level (several
//! outputs become an array, as [`super::JqFilter::apply`] does). It has no loops, calls or
//! variables and at most [`MAX_NODES`] nodes, so its cost is bounded by the size of the input it
//! copies. [`Projection::apply`] gives `None` whenever its result might differ from `apply`'s
//! (an error, a number that is not an `i64`, an output over the byte limit); the caller then
//! takes the normal path.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::ast::{Ast, Lit, ObjKey};
use super::{JqLimits, json_size};

/// The most syntax tree nodes a projection may have.
pub const MAX_NODES: usize = 64;
/// The most paths (`.`, `.a.b`) a projection may read.
pub const MAX_PATHS: usize = 16;

/// A compiled projection and how many outputs it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    root: Node,
    outputs: usize,
}

/// One node of a projection.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Field names walked from the input; empty for `.`.
    Path(Vec<Box<str>>),
    /// A value that does not depend on the input.
    Const(Value),
    /// The right side applied to the output of the left side.
    Pipe(Box<Node>, Box<Node>),
    /// Entries in the order written; a later duplicate key wins.
    Object(Vec<(Box<str>, Node)>),
    Array(Vec<Node>),
}

/// Counts nodes and paths while an [`Ast`] is translated.
#[derive(Default)]
struct Budget {
    nodes: usize,
    paths: usize,
}

impl Budget {
    fn node(&mut self) -> Option<()> {
        self.nodes += 1;
        (self.nodes <= MAX_NODES).then_some(())
    }

    fn path(&mut self, keys: Vec<Box<str>>) -> Option<Node> {
        self.paths += 1;
        (self.paths <= MAX_PATHS).then_some(Node::Path(keys))
    }
}

impl Projection {
    /// The projection `main` is, or `None` when it is anything else or over the caps.
    pub fn of(main: &Ast) -> Option<Self> {
        let mut budget = Budget::default();
        let mut nodes = outputs(main, &mut budget)?;
        let outputs = nodes.len();
        let root = match nodes.pop() {
            Some(only) if outputs == 1 => only,
            // Several outputs: `apply` collects them into an array.
            Some(last) => {
                nodes.push(last);
                Node::Array(nodes)
            }
            None => return None,
        };
        Some(Self { root, outputs })
    }

    /// The result `apply` gives on `input` under `limits`, or `None` when this path cannot
    /// tell it exactly (an error, a number that is not an `i64`, an output over the limits).
    pub fn apply(&self, input: &Value, limits: &JqLimits) -> Option<Value> {
        if self.outputs > limits.max_outputs {
            return None;
        }
        let result = owned(self.root.eval(input)?)?;
        // Several outputs are measured apart in `apply`: together with the brackets and commas
        // of the array they are never smaller, so this bound is never looser than `apply`'s.
        (json_size(&result) <= limits.max_output_bytes).then_some(result)
    }
}

impl Node {
    /// The value of the projection. Invariant: an owned value is already normalized (keys
    /// sorted, numbers checked); a borrowed one is part of the input or a constant, as it is.
    fn eval<'a>(&'a self, input: &'a Value) -> Option<Cow<'a, Value>> {
        match self {
            Self::Path(keys) => walk(input, keys).map(Cow::Borrowed),
            Self::Const(value) => Some(Cow::Borrowed(value)),
            Self::Pipe(left, right) => match left.eval(input)? {
                Cow::Borrowed(value) => right.eval(value),
                Cow::Owned(value) => Some(Cow::Owned(owned(right.eval(&value)?)?)),
            },
            Self::Object(entries) => object(entries, input).map(Cow::Owned),
            Self::Array(items) => items
                .iter()
                .map(|item| item.eval(input).and_then(owned))
                .collect::<Option<Vec<_>>>()
                .map(|items| Cow::Owned(Value::Array(items))),
        }
    }
}

/// The outputs of `ast`: one projection each, several for a `,`.
fn outputs(ast: &Ast, budget: &mut Budget) -> Option<Vec<Node>> {
    match ast {
        Ast::Comma(a, b) => {
            budget.node()?;
            let mut items = outputs(a, budget)?;
            items.extend(outputs(b, budget)?);
            Some(items)
        }
        other => single(other, budget).map(|p| vec![p]),
    }
}

/// The projection of `ast` when it gives exactly one output (or fails).
fn single(ast: &Ast, budget: &mut Budget) -> Option<Node> {
    budget.node()?;
    match ast {
        Ast::Identity => budget.path(Vec::new()),
        Ast::Lit(lit) => literal(lit).map(Node::Const),
        Ast::Loc(line) => Some(Node::Const(location(*line))),
        Ast::Index(base, key) => index(base, key, budget),
        // Errors make the projection give `None`, so `?` changes nothing that it returns.
        Ast::Optional(inner) => single(inner, budget),
        Ast::Pipe(left, right) => pipe(single(left, budget)?, single(right, budget)?),
        Ast::Array(None) => Some(Node::Const(Value::Array(Vec::new()))),
        Ast::Array(Some(body)) => outputs(body, budget).map(Node::Array),
        Ast::Object(entries) => object_entries(entries, budget).map(Node::Object),
        _ => None,
    }
}

/// `.key` on `base`; only a literal string key.
fn index(base: &Ast, key: &Ast, budget: &mut Budget) -> Option<Node> {
    let Ast::Lit(Lit::Str(name)) = key else {
        return None;
    };
    budget.node()?;
    if matches!(base, Ast::Identity) {
        budget.node()?;
        return budget.path(vec![name.clone()]);
    }
    let base = single(base, budget)?;
    pipe(base, Node::Path(vec![name.clone()]))
}

/// `left | right`, with paths joined (`.a | .b` is `.a.b`).
fn pipe(left: Node, right: Node) -> Option<Node> {
    Some(match (left, right) {
        (Node::Path(mut outer), Node::Path(inner)) => {
            outer.extend(inner);
            Node::Path(outer)
        }
        (left, right) => Node::Pipe(Box::new(left), Box::new(right)),
    })
}

/// Entries with literal keys; `{name}` is `{name: .name}`.
fn object_entries(
    entries: &[(ObjKey, Option<Ast>)],
    budget: &mut Budget,
) -> Option<Vec<(Box<str>, Node)>> {
    entries
        .iter()
        .map(|(key, value)| {
            let ObjKey::Name(name) = key else {
                return None;
            };
            let value = match value {
                Some(value) => single(value, budget)?,
                None => budget.path(vec![name.clone()])?,
            };
            Some((name.clone(), value))
        })
        .collect()
}

/// A literal as `apply` outputs it; floats and big integers are left to `apply`.
fn literal(lit: &Lit) -> Option<Value> {
    match lit {
        Lit::Null => Some(Value::Null),
        Lit::Bool(b) => Some(Value::Bool(*b)),
        Lit::Int(i) => Some(Value::from(*i)),
        Lit::Str(s) => Some(Value::String(s.to_string())),
        Lit::Float(_) | Lit::Big(_) => None,
    }
}

/// `$__loc__`: the file and line as the evaluator gives them.
fn location(line: usize) -> Value {
    let mut map = Map::new();
    map.insert("file".to_string(), Value::from("<stdin>"));
    map.insert("line".to_string(), Value::from(line as i64));
    Value::Object(map)
}

/// `.k1.k2...` on `input`: null on null and on a missing key, `None` (an error in `apply`) on
/// anything but an object or null.
fn walk<'a>(input: &'a Value, keys: &[Box<str>]) -> Option<&'a Value> {
    static NULL: Value = Value::Null;
    let mut at = input;
    for key in keys {
        at = match at {
            Value::Null => &NULL,
            Value::Object(map) => map.get(&**key).unwrap_or(&NULL),
            _ => return None,
        };
    }
    Some(at)
}

/// An object built from `entries`, keys sorted.
fn object(entries: &[(Box<str>, Node)], input: &Value) -> Option<Value> {
    let mut built = std::collections::BTreeMap::new();
    for (key, value) in entries {
        built.insert(key.to_string(), owned(value.eval(input)?)?);
    }
    Some(Value::Object(built.into_iter().collect()))
}

/// The normalized value of an evaluation result.
fn owned(value: Cow<'_, Value>) -> Option<Value> {
    match value {
        Cow::Borrowed(raw) => normalized(raw),
        Cow::Owned(done) => Some(done),
    }
}

/// A copy of `value` as `apply` outputs it: object keys sorted at every level; `None` when a
/// number is not an `i64` (`apply` reads wider integers as floats and prints floats its own way).
fn normalized(value: &Value) -> Option<Value> {
    Some(match value {
        Value::Number(n) if !n.is_i64() => return None,
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect::<Option<_>>()?),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            let mut sorted = Map::with_capacity(entries.len());
            for (key, item) in entries {
                sorted.insert(key.clone(), normalized(item)?);
            }
            Value::Object(sorted)
        }
        scalar => scalar.clone(),
    })
}
