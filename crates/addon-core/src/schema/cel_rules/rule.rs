//! One `x-deckhouse-validations` rule: its expression parsed once and checked against the bounds
//! (length, names it may use), then evaluated with `self` and `oldSelf` under a cost bound.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use cel::common::ast::{EntryExpr, Expr};
use cel::{Context, ExecutionError, IdedExpr, Program};
use serde_json::Value;

use super::value::{longest_collection, to_cel};

/// The longest expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 4096;
/// The deepest nesting accepted (brackets, conditionals and chained unary operators together):
/// the parser recurses once per level, so this keeps it far from the end of a thread's stack.
pub const MAX_NESTING: usize = 32;
/// The stack of the thread that parses an expression: the parser takes about 130 KiB per level
/// of nesting in a debug build, so [`MAX_NESTING`] levels fit with room to spare.
pub const PARSE_STACK_BYTES: usize = 32 << 20;
/// The highest estimated cost of one evaluation: AST nodes times the longest list or map to the
/// power of the comprehension nesting plus one (one more because a single step may itself be
/// linear: `x in list`, list concatenation, list equality).
pub const MAX_COST: u128 = 10_000_000;

const SELF: &str = "self";
const OLD_SELF: &str = "oldSelf";
/// Names CEL's standard environment declares besides the two variables: type identifiers.
const TYPE_NAMES: [&str; 11] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

/// Why a rule list or a rule cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("not a list of {{expression, message}}")]
    NotAList,
    #[error("missing expression")]
    MissingExpression,
    #[error("missing message")]
    MissingMessage,
    #[error("more than {} rules in the schema", super::MAX_RULES)]
    TooMany,
    #[error("the expression is {len} bytes long, more than {MAX_EXPRESSION_BYTES}")]
    TooLong { len: usize },
    #[error("the expression nests {nesting} levels deep, more than {MAX_NESTING}")]
    TooDeep { nesting: usize },
    #[error("compile the '{expression}' rule: {message}")]
    Compile { expression: String, message: String },
    #[error("compile the '{expression}' rule: undeclared reference to '{name}'")]
    Undeclared { expression: String, name: String },
    #[error("start the thread that parses '{expression}': {message}")]
    Thread { expression: String, message: String },
    #[error("the expression '{expression}' crashed the parser")]
    Crashed { expression: String },
}

/// A rule ready to evaluate.
pub struct Rule {
    expression: String,
    message: String,
    program: Program,
    uses_old_self: bool,
    nodes: u128,
    loop_depth: u32,
    longest_literal: usize,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("expression", &self.expression)
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

/// What one evaluation found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass,
    /// The rule is false: its message.
    Fail(String),
    /// A transition rule without an old value, or a key the rule reads is missing.
    Skipped,
    /// The rule could not be evaluated (an error, not a boolean, too costly).
    Error(String),
}

impl Rule {
    /// Parses `expression`; the error says why it cannot be used.
    pub fn compile(expression: &str, message: &str) -> Result<Self, RuleError> {
        if expression.len() > MAX_EXPRESSION_BYTES {
            let len = expression.len();
            return Err(RuleError::TooLong { len });
        }
        let nesting = nesting(expression);
        if nesting > MAX_NESTING {
            return Err(RuleError::TooDeep { nesting });
        }
        let program = parse_on_big_stack(expression)?;
        let mut shape = Shape::default();
        shape.visit(program.expression(), 0);
        let unknown: Vec<&String> = (shape.idents.iter())
            .filter(|name| !shape.bound.contains(*name))
            .filter(|name| ![SELF, OLD_SELF].contains(&name.as_str()))
            .filter(|name| !TYPE_NAMES.contains(&name.as_str()))
            .collect();
        if let Some(name) = unknown.first() {
            return Err(RuleError::Undeclared {
                expression: expression.to_string(),
                name: name.to_string(),
            });
        }
        Ok(Self {
            expression: expression.to_string(),
            message: message.to_string(),
            uses_old_self: shape.idents.contains(OLD_SELF),
            program,
            nodes: shape.nodes,
            loop_depth: shape.loop_depth,
            longest_literal: shape.longest_literal,
        })
    }

    /// Evaluates the rule with `self` = `value` and `oldSelf` = `old`; a rule that reads
    /// `oldSelf` is skipped when there is no old value.
    pub fn evaluate(&self, value: &Value, old: Option<&Value>) -> Verdict {
        if self.uses_old_self && old.is_none() {
            return Verdict::Skipped;
        }
        let longest = (longest_collection(value).max(old.map_or(0, longest_collection)))
            .max(self.longest_literal);
        let base = (longest as u128).max(2);
        let cost = base
            .checked_pow(self.loop_depth + 1)
            .and_then(|p| p.checked_mul(self.nodes))
            .unwrap_or(u128::MAX);
        if cost > MAX_COST {
            return Verdict::Error(format!(
                "the '{}' rule is too costly for these values (estimated {cost}, at most {MAX_COST})",
                self.expression
            ));
        }
        let mut ctx = Context::default();
        ctx.add_variable_from_value(SELF, to_cel(value));
        ctx.add_variable_from_value(OLD_SELF, old.map_or(cel::Value::Null, to_cel));
        let result = catch_unwind(AssertUnwindSafe(|| self.program.execute(&ctx)));
        match result {
            Ok(Ok(cel::Value::Bool(true))) => Verdict::Pass,
            Ok(Ok(cel::Value::Bool(false))) => Verdict::Fail(self.message.clone()),
            Ok(Ok(_)) => Verdict::Error(format!(
                "the '{}' rule should return a boolean",
                self.expression
            )),
            Ok(Err(ExecutionError::NoSuchKey(_))) => Verdict::Skipped,
            Ok(Err(e)) => Verdict::Error(format!(
                "evaluate the '{}' rule: {}",
                self.expression,
                describe(&e)
            )),
            Err(_) => Verdict::Error(format!(
                "the '{}' rule failed while evaluating",
                self.expression
            )),
        }
    }
}

/// An evaluation error by the types involved, never by the values (they may hold secrets, and
/// messages reach logs and the debug API).
fn describe(e: &ExecutionError) -> String {
    use ExecutionError as E;
    match e {
        E::NoSuchOverload(_)
        | E::UnexpectedType { .. }
        | E::UndeclaredReference(_)
        | E::InvalidArgumentCount { .. }
        | E::MissingArgumentOrTarget => e.to_string(),
        E::UnsupportedBinaryOperator(op, a, b) => format!(
            "no such overload for '{op}' applied to ({}, {})",
            a.type_of(),
            b.type_of()
        ),
        E::ValuesNotComparable(a, b) => {
            format!("a {} cannot be compared to a {}", a.type_of(), b.type_of())
        }
        E::UnsupportedIndex(i, v) => {
            format!("a {} cannot be indexed by a {}", v.type_of(), i.type_of())
        }
        E::UnsupportedTargetType { target } => {
            format!("invalid argument type {}", target.type_of())
        }
        E::NotSupportedAsMethod { method, target } => {
            format!(
                "method '{method}' not supported on type {}",
                target.type_of()
            )
        }
        E::UnsupportedKeyType(v) => format!("a {} cannot be a map key", v.type_of()),
        E::IndexOutOfBounds(_) => "index out of bounds".into(),
        E::DivisionByZero(_) => "division by zero".into(),
        E::RemainderByZero(_) => "remainder by zero".into(),
        E::Overflow(op, _, _) => format!("overflow in '{op}'"),
        E::DuplicateKey(_) => "repeated map key".into(),
        E::FunctionError { function, .. } => format!("function '{function}' failed"),
        _ => "evaluation failed".into(),
    }
}

/// Parses on a scoped thread with a [`PARSE_STACK_BYTES`] stack; a panic is an error.
fn parse_on_big_stack(expression: &str) -> Result<Program, RuleError> {
    let expression_text = || expression.to_string();
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("cel-parse".to_string())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(scope, || Program::compile(expression))
            .map_err(|e| RuleError::Thread {
                expression: expression_text(),
                message: e.to_string(),
            })?;
        let parsed = handle.join().map_err(|_| RuleError::Crashed {
            expression: expression_text(),
        })?;
        parsed.map_err(|e| RuleError::Compile {
            expression: expression_text(),
            message: e.to_string(),
        })
    })
}

/// How deep the parser will recurse, over-estimated: the deepest bracket nesting plus every
/// `?` plus the longest run of unary operators, outside string literals.
fn nesting(expression: &str) -> usize {
    let (mut depth, mut deepest, mut conditionals) = (0usize, 0usize, 0usize);
    let (mut unary_run, mut longest_run) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in expression.chars() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '?' => conditionals += 1,
            _ => {}
        }
        deepest = deepest.max(depth);
        match c {
            '!' | '-' => unary_run += 1,
            _ if c.is_whitespace() => {}
            _ => unary_run = 0,
        }
        longest_run = longest_run.max(unary_run);
    }
    deepest + conditionals + longest_run
}

/// What the cost bound and the name check read from an expression's tree.
#[derive(Default)]
struct Shape {
    nodes: u128,
    loop_depth: u32,
    longest_literal: usize,
    idents: BTreeSet<String>,
    /// Variables comprehensions declare.
    bound: BTreeSet<String>,
}

impl Shape {
    /// Walks the tree; its depth is bounded by the parser's recursion limit.
    fn visit(&mut self, e: &IdedExpr, loops: u32) {
        self.nodes += 1;
        self.loop_depth = self.loop_depth.max(loops);
        match &e.expr {
            Expr::Ident(name) => {
                self.idents.insert(name.clone());
            }
            Expr::Call(call) => {
                if let Some(t) = &call.target {
                    self.visit(t, loops);
                }
                call.args.iter().for_each(|a| self.visit(a, loops));
            }
            Expr::Select(s) => self.visit(&s.operand, loops),
            Expr::List(l) => {
                self.longest_literal = self.longest_literal.max(l.elements.len());
                l.elements.iter().for_each(|a| self.visit(a, loops));
            }
            Expr::Map(m) => {
                self.longest_literal = self.longest_literal.max(m.entries.len());
                m.entries.iter().for_each(|en| self.entry(&en.expr, loops));
            }
            Expr::Struct(s) => s.entries.iter().for_each(|en| self.entry(&en.expr, loops)),
            Expr::Comprehension(c) => {
                self.bound.insert(c.iter_var.clone());
                self.bound.extend(c.iter_var2.clone());
                self.bound.insert(c.accu_var.clone());
                self.visit(&c.iter_range, loops);
                self.visit(&c.accu_init, loops);
                for inner in [&c.loop_cond, &c.loop_step, &c.result] {
                    self.visit(inner, loops + 1);
                }
            }
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }

    fn entry(&mut self, e: &EntryExpr, loops: u32) {
        match e {
            EntryExpr::MapEntry(m) => {
                self.visit(&m.key, loops);
                self.visit(&m.value, loops);
            }
            EntryExpr::StructField(f) => self.visit(&f.value, loops),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(expression: &str) -> Rule {
        Rule::compile(expression, "msg").unwrap()
    }

    #[test]
    fn a_false_rule_gives_its_message_and_a_true_one_passes() {
        assert_eq!(
            rule("self.a == 1").evaluate(&json!({"a": 2}), None),
            Verdict::Fail("msg".into())
        );
        assert_eq!(
            rule("self.a == 1").evaluate(&json!({"a": 1}), None),
            Verdict::Pass
        );
    }

    #[test]
    fn a_missing_key_skips_the_rule() {
        assert_eq!(
            rule("self.b == 1").evaluate(&json!({"a": 1}), None),
            Verdict::Skipped
        );
    }

    #[test]
    fn a_transition_rule_without_an_old_value_is_skipped() {
        let r = rule("self == oldSelf");
        assert_eq!(r.evaluate(&json!(1), None), Verdict::Skipped);
        assert_eq!(
            r.evaluate(&json!(1), Some(&json!(2))),
            Verdict::Fail("msg".into())
        );
    }

    #[test]
    fn numbers_are_doubles_as_upstream_sees_them() {
        let r = rule("self + 1 == 2");
        assert!(matches!(r.evaluate(&json!(1), None), Verdict::Error(_)));
        assert_eq!(rule("self < 1.5").evaluate(&json!(1), None), Verdict::Pass);
    }

    #[test]
    fn time_functions_are_not_available_and_fail_the_rule() {
        let got = rule("timestamp('2020-01-01T00:00:00Z') == timestamp('2020-01-01T00:00:00Z')")
            .evaluate(&json!(1), None);
        assert!(
            matches!(&got, Verdict::Error(m) if m.contains("timestamp")),
            "{got:?}"
        );
    }

    #[test]
    fn evaluation_errors_name_types_never_values() {
        for expression in [
            "self.a + 1 == 2",
            "self.a < 's3cr3t'",
            "self.l[5] == 1",
            "int(self.s) == 1",
            "self.s.matches('(')",
        ] {
            let got = rule(expression)
                .evaluate(&json!({"a": 12345.5, "l": ["s3cr3t"], "s": "s3cr3t"}), None);
            let Verdict::Error(m) = &got else {
                panic!("{expression}: {got:?}")
            };
            assert!(
                !m.replace(expression, "").contains("12345")
                    && !m.replace(expression, "").contains("s3cr3t"),
                "{m}"
            );
        }
    }

    #[test]
    fn a_rule_that_is_not_boolean_is_an_error() {
        let got = rule("self.a").evaluate(&json!({"a": "x"}), None);
        assert!(
            matches!(&got, Verdict::Error(m) if m.contains("boolean")),
            "{got:?}"
        );
    }

    #[test]
    fn unparsable_or_unknown_names_or_long_expressions_do_not_compile() {
        assert!(Rule::compile("self.a ==", "m").is_err());
        let err = Rule::compile("other == 1", "m").unwrap_err().to_string();
        assert!(err.contains("undeclared reference to 'other'"), "{err}");
        assert!(Rule::compile(&"1 + ".repeat(2000), "m").is_err());
        assert!(Rule::compile("self.all(k, [k].exists(x, x == k))", "m").is_ok());
        assert!(Rule::compile("type(self) == map", "m").is_ok());
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        for (open, close) in [("(", ")"), ("[", "]"), ("!", ""), ("true ? 1 : ", "")] {
            let deep = format!("{}self{}", open.repeat(500), close.repeat(500));
            assert!(Rule::compile(&deep, "m").is_err(), "{open}");
        }
        let at_limit = format!("{}self{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        let r = Rule::compile(&at_limit, "m").unwrap();
        assert!(matches!(r.evaluate(&json!(1), None), Verdict::Error(_)));
        let deep_true = format!(
            "{}true{}",
            "[".repeat(MAX_NESTING / 2),
            "][0]".repeat(MAX_NESTING / 2)
        );
        assert_eq!(
            Rule::compile(&deep_true, "m")
                .unwrap()
                .evaluate(&json!(1), None),
            Verdict::Pass
        );
        assert!(Rule::compile("'((((((((((((((((((((((((((((((((((' != self", "m").is_ok());
    }

    #[test]
    fn nested_comprehensions_over_long_lists_are_too_costly() {
        let r = rule("self.all(a, self.all(b, self.all(c, self.all(d, a + b + c + d >= 0.0))))");
        let long: Vec<i32> = (0..200).collect();
        let got = r.evaluate(&json!(long), None);
        assert!(
            matches!(&got, Verdict::Error(m) if m.contains("too costly")),
            "{got:?}"
        );
        assert_eq!(r.evaluate(&json!([1, 2]), None), Verdict::Pass);
    }

    #[test]
    fn a_linear_step_inside_one_comprehension_counts_as_a_second_level() {
        let r = rule("self.all(x, x in oldSelf)");
        let long: Vec<i32> = (0..2000).collect();
        let got = r.evaluate(&json!(long), Some(&json!(long)));
        assert!(
            matches!(&got, Verdict::Error(m) if m.contains("too costly")),
            "{got:?}"
        );
        let short: Vec<i32> = (0..200).collect();
        assert_eq!(
            r.evaluate(&json!(short), Some(&json!(short))),
            Verdict::Pass
        );
    }
}
