//! Label, field, name and namespace selectors of kubernetes bindings: parsing, validation and the query strings for the API server.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::reader::{Obj, Problems, index, type_name};

/// A Kubernetes label selector (`matchLabels` and `matchExpressions`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<LabelRequirement>,
}

/// One `matchExpressions` item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelRequirement {
    pub key: String,
    pub operator: LabelOperator,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelSelector {
    /// The selector in the API server's query syntax (`app=web,tier in (cache)`); empty selects all.
    pub fn to_query(&self) -> String {
        let mut parts: Vec<String> = self
            .match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for r in &self.match_expressions {
            parts.push(match r.operator {
                LabelOperator::In => format!("{} in ({})", r.key, r.values.join(",")),
                LabelOperator::NotIn => format!("{} notin ({})", r.key, r.values.join(",")),
                LabelOperator::Exists => r.key.clone(),
                LabelOperator::DoesNotExist => format!("!{}", r.key),
            });
        }
        parts.join(",")
    }

    /// Whether an object with `labels` is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let labels_match = self
            .match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v));
        labels_match
            && self.match_expressions.iter().all(|r| {
                let value = labels.get(&r.key);
                match r.operator {
                    LabelOperator::In => value.is_some_and(|v| r.values.contains(v)),
                    LabelOperator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                    LabelOperator::Exists => value.is_some(),
                    LabelOperator::DoesNotExist => value.is_none(),
                }
            })
    }
}

/// A field selector: every requirement must hold (server side).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldSelector {
    pub match_expressions: Vec<FieldRequirement>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FieldOperator {
    Equals,
    NotEquals,
}

impl FieldSelector {
    /// The selector in query syntax (`status.phase=Pending,metadata.name!=x`).
    pub fn to_query(&self) -> String {
        self.match_expressions
            .iter()
            .map(|r| match r.operator {
                FieldOperator::Equals => format!("{}={}", r.field, r.value),
                FieldOperator::NotEquals => format!("{}!={}", r.field, r.value),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    pub(crate) fn mentions_name(&self) -> bool {
        self.match_expressions
            .iter()
            .any(|r| r.field == "metadata.name")
    }
}

/// Which namespaces a binding watches. With both selectors set the label selector wins (as upstream).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_selector: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// Reads `{matchNames: [...]}`.
pub(crate) fn read_name_selector(obj: &Obj<'_>, p: &mut Problems) -> Option<Vec<String>> {
    obj.reject_unknown(&["matchNames"], p);
    obj.required("matchNames", |o, k, p| o.string_list(k, 0, p), p)
}

/// Reads a label selector; `matchExpressions` items may spell the operator `operator` or (as in
/// the old documentation) `operation`.
pub(crate) fn read_label_selector(obj: &Obj<'_>, p: &mut Problems) -> Option<LabelSelector> {
    let before = p.len();
    obj.reject_unknown(&["matchLabels", "matchExpressions"], p);
    obj.require_min_fields(1, "matchLabels or matchExpressions", p);
    let match_labels = obj.string_map("matchLabels", p).unwrap_or_default();
    for (k, v) in &match_labels {
        let path = obj.path_of(&format!("matchLabels.{k}"));
        if let Err(e) = validate_label_key(k) {
            p.push(path.clone(), format!("labelSelector is invalid: key {e}"));
        }
        if let Err(e) = validate_label_value(v) {
            p.push(path, format!("labelSelector is invalid: value {e}"));
        }
    }
    let mut match_expressions = Vec::new();
    if let Some(items) = obj.array("matchExpressions", 0, p) {
        let path = obj.path_of("matchExpressions");
        for (i, item) in items.iter().enumerate() {
            if let Some(r) =
                Obj::new(item, index(&path, i), p).and_then(|o| read_label_requirement(&o, p))
            {
                match_expressions.push(r);
            }
        }
    }
    (p.len() == before).then_some(LabelSelector {
        match_labels,
        match_expressions,
    })
}

fn read_label_requirement(obj: &Obj<'_>, p: &mut Problems) -> Option<LabelRequirement> {
    obj.reject_unknown(&["key", "operator", "operation", "values"], p);
    let key = obj.required("key", |o, k, p| o.string(k, p), p);
    let op_key = if obj.get("operator").is_some() || obj.get("operation").is_none() {
        "operator"
    } else {
        "operation"
    };
    let op_text = obj.required(op_key, |o, k, p| o.string(k, p), p);
    let values = obj.string_list("values", 0, p).unwrap_or_default();
    let operator = match op_text.as_deref() {
        Some("In") => LabelOperator::In,
        Some("NotIn") => LabelOperator::NotIn,
        Some("Exists") => LabelOperator::Exists,
        Some("DoesNotExist") => LabelOperator::DoesNotExist,
        Some(other) => {
            p.push(
                obj.path_of(op_key),
                format!("should be one of [In NotIn Exists DoesNotExist], got '{other}'"),
            );
            return None;
        }
        None => return None,
    };
    let key = key?;
    if let Err(e) = validate_label_key(&key) {
        p.push(
            obj.path_of("key"),
            format!("labelSelector is invalid: key {e}"),
        );
    }
    let needs_values = matches!(operator, LabelOperator::In | LabelOperator::NotIn);
    if needs_values && values.is_empty() {
        p.push(
            obj.path_of("values"),
            "labelSelector is invalid: values must not be empty for In and NotIn",
        );
    }
    if !needs_values && !values.is_empty() {
        p.push(
            obj.path_of("values"),
            "labelSelector is invalid: values must be empty for Exists and DoesNotExist",
        );
    }
    for v in &values {
        if let Err(e) = validate_label_value(v) {
            p.push(
                obj.path_of("values"),
                format!("labelSelector is invalid: value {e}"),
            );
        }
    }
    Some(LabelRequirement {
        key,
        operator,
        values,
    })
}

/// Reads `{matchExpressions: [{field, operator, value}]}`.
pub(crate) fn read_field_selector(obj: &Obj<'_>, p: &mut Problems) -> Option<FieldSelector> {
    let before = p.len();
    obj.reject_unknown(&["matchExpressions"], p);
    let items = obj.required("matchExpressions", |o, k, p| o.array(k, 0, p), p)?;
    let path = obj.path_of("matchExpressions");
    let mut match_expressions = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(item) = Obj::new(item, index(&path, i), p) else {
            continue;
        };
        item.reject_unknown(&["field", "operator", "value"], p);
        let field = item.required("field", |o, k, p| o.non_empty_string(k, p), p);
        let op = item.required("operator", |o, k, p| o.string(k, p), p);
        let value = item.required("value", |o, k, p| o.string(k, p), p);
        let operator = match op.as_deref() {
            Some("=" | "==" | "Equals") => Some(FieldOperator::Equals),
            Some("!=" | "NotEquals") => Some(FieldOperator::NotEquals),
            Some(other) => {
                p.push(
                    item.path_of("operator"),
                    format!("should be one of [= == Equals != NotEquals], got '{other}'"),
                );
                None
            }
            None => None,
        };
        if let (Some(field), Some(operator), Some(value)) = (field, operator, value) {
            match_expressions.push(FieldRequirement {
                field,
                operator,
                value,
            });
        }
    }
    (p.len() == before).then_some(FieldSelector { match_expressions })
}

/// Reads `namespace: {nameSelector, labelSelector}` (at least one).
pub(crate) fn read_namespace_selector(
    obj: &Obj<'_>,
    p: &mut Problems,
) -> Option<NamespaceSelector> {
    let before = p.len();
    obj.reject_unknown(&["nameSelector", "labelSelector"], p);
    obj.require_min_fields(1, "nameSelector or labelSelector", p);
    let name_selector = obj
        .object("nameSelector", p)
        .and_then(|o| read_name_selector(&o, p));
    let label_selector = obj
        .object("labelSelector", p)
        .and_then(|o| read_label_selector(&o, p));
    (p.len() == before).then_some(NamespaceSelector {
        name_selector,
        label_selector,
    })
}

/// A label key or value of a selector that Kubernetes would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error("'{key}': prefix must be a DNS subdomain")]
    KeyPrefix { key: String },
    #[error(
        "'{key}': name must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
    )]
    KeyName { key: String },
    #[error(
        "'{value}': must be at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
    )]
    Value { value: String },
}

/// A qualified label key: optional DNS-subdomain prefix and `/`, then a name of at most 63
/// alphanumerics, `-`, `_`, `.` starting and ending alphanumeric.
fn validate_label_key(key: &str) -> Result<(), LabelError> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !ok {
            return Err(LabelError::KeyPrefix {
                key: key.to_string(),
            });
        }
    }
    if name.is_empty() || !is_label_name(name) {
        return Err(LabelError::KeyName {
            key: key.to_string(),
        });
    }
    Ok(())
}

fn validate_label_value(value: &str) -> Result<(), LabelError> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(LabelError::Value {
            value: value.to_string(),
        })
    }
}

fn is_label_name(s: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    s.len() <= 63
        && edge_ok(s.chars().next())
        && edge_ok(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Converts a v0 `selector` (same shape as a label selector) for a v0 binding.
pub(crate) fn read_v0_selector(
    value: &Value,
    path: String,
    p: &mut Problems,
) -> Option<LabelSelector> {
    match value {
        Value::Object(map) if map.is_empty() => Some(LabelSelector::default()),
        Value::Object(_) => Obj::new(value, path, p).and_then(|o| read_label_selector(&o, p)),
        other => {
            p.push(path, format!("must be an object, got {}", type_name(other)));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_errors_name_the_key_or_value_and_the_rule() {
        let prefix = validate_label_key("Bad_Prefix/app").unwrap_err();
        assert_eq!(
            prefix.to_string(),
            "'Bad_Prefix/app': prefix must be a DNS subdomain"
        );
        let name = validate_label_key("-app").unwrap_err();
        assert_eq!(name, LabelError::KeyName { key: "-app".into() });
        assert!(
            name.to_string()
                .starts_with("'-app': name must be 1-63 alphanumerics")
        );
        let value = validate_label_value("a b").unwrap_err();
        assert!(
            value.to_string().starts_with("'a b': must be at most 63"),
            "{value}"
        );
        assert_eq!(validate_label_value(""), Ok(()));
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn read(value: Value) -> (Option<LabelSelector>, Problems) {
        let mut p = Problems::default();
        let obj = Obj::new(&value, "labelSelector", &mut p);
        let sel = obj.and_then(|o| read_label_selector(&o, &mut p));
        (sel, p)
    }

    #[test]
    fn label_selector_renders_the_api_query() {
        let (sel, p) = read(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["cache", "db"]},
                {"key": "env", "operation": "NotIn", "values": ["dev"]},
                {"key": "a", "operator": "Exists"},
                {"key": "b", "operator": "DoesNotExist"}
            ]
        }));
        assert!(p.items.is_empty(), "{:?}", p.items);
        assert_eq!(
            sel.unwrap().to_query(),
            "app=web,tier in (cache,db),env notin (dev),a,!b"
        );
    }

    #[test]
    fn label_selector_matches_like_kubernetes() {
        let (sel, _) = read(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]
        }));
        let sel = sel.unwrap();
        assert!(sel.matches(&labels(&[("app", "web")])));
        assert!(sel.matches(&labels(&[("app", "web"), ("tier", "cache")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!sel.matches(&labels(&[("app", "api")])));
    }

    #[test]
    fn in_without_values_and_exists_with_values_are_invalid() {
        let (_, p) = read(json!({"matchExpressions": [
            {"key": "a", "operator": "In", "values": []},
            {"key": "b", "operator": "Exists", "values": ["x"]}
        ]}));
        assert_eq!(p.items.len(), 2, "{:?}", p.items);
    }

    #[test]
    fn bad_label_keys_are_invalid() {
        let (_, p) = read(json!({"matchLabels": {"-bad": "x", "example.com/ok": "y"}}));
        assert_eq!(p.items.len(), 1, "{:?}", p.items);
        assert!(p.items[0].0.contains("-bad"));
    }

    #[test]
    fn field_selector_renders_equals_and_not_equals() {
        let value = json!({"matchExpressions": [
            {"field": "status.phase", "operator": "Equals", "value": "Pending"},
            {"field": "metadata.namespace", "operator": "!=", "value": "kube-system"}
        ]});
        let mut p = Problems::default();
        let obj = Obj::new(&value, "fieldSelector", &mut p).unwrap();
        let sel = read_field_selector(&obj, &mut p).unwrap();
        assert_eq!(
            sel.to_query(),
            "status.phase=Pending,metadata.namespace!=kube-system"
        );
        assert!(!sel.mentions_name());
    }
}
