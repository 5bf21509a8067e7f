//! CEL rules of a schema (`x-deckhouse-validations`): compiled once when the schema loads, then
//! evaluated on values node by node (through `properties`, the way upstream walks), each rule
//! with `self` (the value at its node) and `oldSelf` (the previous value there, if any).

pub mod rule;
pub mod value;

use serde_json::Value;

pub use rule::{Rule, RuleError, Verdict};

/// The schema keyword that holds the rules.
pub const KEYWORD: &str = "x-deckhouse-validations";
/// The most rules one schema may hold.
pub const MAX_RULES: usize = 1024;

/// A rule list that cannot be used; `node` is a JSON pointer into the schema document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{KEYWORD} at '{node}'")]
pub struct CelRuleError {
    pub node: String,
    #[source]
    pub problem: RuleError,
}

/// A value that fails a rule (or a rule that could not be evaluated on it); `path` is a JSON
/// pointer into the validated value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelIssue {
    pub path: String,
    pub message: String,
}

/// The rules of one schema, as a tree of the schema nodes that hold some.
#[derive(Debug, Default)]
pub struct CelRules {
    root: Option<Node>,
}

#[derive(Debug)]
struct Node {
    rules: Vec<Rule>,
    properties: Vec<(String, Node)>,
}

impl CelRules {
    /// Reads and compiles every rule list under `properties` of `schema`.
    pub fn compile(schema: &Value) -> Result<Self, CelRuleError> {
        let mut count = 0;
        Ok(Self {
            root: compile_node(schema, "", &mut count)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Evaluates the rules on `values`; `old` is the previous value of the same document
    /// (`None`: no previous value, transition rules are skipped). Nested nodes come first, then
    /// the node's own rules, in schema order.
    pub fn check(&self, values: &Value, old: Option<&Value>) -> Vec<CelIssue> {
        let mut out = Vec::new();
        if let Some(root) = &self.root {
            check_node(root, values, old.filter(|v| !v.is_null()), "", &mut out);
        }
        out
    }
}

fn compile_node(
    schema: &Value,
    pointer: &str,
    count: &mut usize,
) -> Result<Option<Node>, CelRuleError> {
    let rules = match schema.get(KEYWORD) {
        Some(list) => compile_list(list, &format!("{pointer}/{KEYWORD}"), count)?,
        None => Vec::new(),
    };
    let mut properties = Vec::new();
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, sub) in props {
            let at = format!("{pointer}/properties/{}", escape(name));
            if let Some(node) = compile_node(sub, &at, count)? {
                properties.push((name.clone(), node));
            }
        }
    }
    if rules.is_empty() && properties.is_empty() {
        return Ok(None);
    }
    Ok(Some(Node { rules, properties }))
}

/// A list of `{expression, message}`, both non-empty strings.
fn compile_list(list: &Value, at: &str, count: &mut usize) -> Result<Vec<Rule>, CelRuleError> {
    let fail = |node: String, problem: RuleError| CelRuleError { node, problem };
    let Value::Array(entries) = list else {
        return Err(fail(at.into(), RuleError::NotAList));
    };
    let mut rules = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let node = format!("{at}/{i}");
        *count += 1;
        if *count > MAX_RULES {
            return Err(fail(node, RuleError::TooMany));
        }
        let text = |key: &str| {
            entry
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let Some(expression) = text("expression") else {
            return Err(fail(node, RuleError::MissingExpression));
        };
        let Some(message) = text("message") else {
            return Err(fail(node, RuleError::MissingMessage));
        };
        rules.push(Rule::compile(expression, message).map_err(|p| fail(node, p))?);
    }
    Ok(rules)
}

fn check_node(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<CelIssue>,
) {
    if let Value::Object(map) = value {
        let old_map = old.and_then(Value::as_object);
        for (name, child) in &node.properties {
            let Some(v) = map.get(name) else { continue };
            let old_v = old_map.and_then(|m| m.get(name)).filter(|v| !v.is_null());
            check_node(child, v, old_v, &format!("{path}/{}", escape(name)), out);
        }
    }
    for rule in &node.rules {
        let message = match rule.evaluate(value, old) {
            Verdict::Pass | Verdict::Skipped => continue,
            Verdict::Fail(m) | Verdict::Error(m) => m,
        };
        out.push(CelIssue {
            path: path.to_string(),
            message,
        });
    }
}

/// A JSON pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_of_nested_properties_report_the_path_of_their_value() {
        let schema = json!({"properties": {"a": {"properties": {"b": {
            "x-deckhouse-validations": [{"expression": "self > 1", "message": "b too small"}]}}}}});
        let rules = CelRules::compile(&schema).unwrap();
        let got = rules.check(&json!({"a": {"b": 1}}), None);
        assert_eq!(
            got,
            [CelIssue {
                path: "/a/b".into(),
                message: "b too small".into()
            }]
        );
        assert!(rules.check(&json!({"a": {}}), None).is_empty());
    }

    #[test]
    fn a_bad_rule_names_the_schema_node() {
        let schema = json!({"properties": {"a": {
            "x-deckhouse-validations": [{"expression": "self >", "message": "m"}]}}});
        let err = CelRules::compile(&schema).unwrap_err();
        assert_eq!(err.node, "/properties/a/x-deckhouse-validations/0");
        let schema = json!({"x-deckhouse-validations": [{"expression": "self"}]});
        assert_eq!(
            CelRules::compile(&schema).unwrap_err().problem,
            RuleError::MissingMessage
        );
    }

    #[test]
    fn a_schema_may_hold_at_most_max_rules() {
        let rule = json!({"expression": "true", "message": "m"});
        let schema = json!({KEYWORD: vec![rule; MAX_RULES + 1]});
        assert_eq!(
            CelRules::compile(&schema).unwrap_err().problem,
            RuleError::TooMany
        );
    }

    #[test]
    fn a_schema_without_rules_has_an_empty_tree() {
        let rules = CelRules::compile(&json!({"properties": {"a": {"type": "string"}}})).unwrap();
        assert!(rules.is_empty());
    }
}
