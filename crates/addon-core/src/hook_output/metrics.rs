//! `$METRICS_PATH`: a stream of JSON metric operations (`set`, `add`, `observe`, `expire`), validated into [`MetricOperation`]s.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A metrics file that could not be read or holds an invalid operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    #[error("read $METRICS_PATH: operation {index} (line {line}): {message}")]
    ReadOperation {
        index: usize,
        line: usize,
        message: String,
    },
    #[error("$METRICS_PATH operation {index} (line {line}): {reason}")]
    ValidateOperation {
        index: usize,
        line: usize,
        reason: InvalidMetric,
    },
}

/// Why one metric operation is invalid (the field it is about, as written in the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidMetric {
    #[error("must be a JSON object")]
    NotObject,
    #[error("'{key}' must be a string")]
    NotString { key: String },
    #[error("'{key}' must be a number")]
    NotNumber { key: String },
    #[error("'value' is required for action '{action}'")]
    ValueRequired { action: String },
    #[error("unsupported action '{action}' without 'group': use set, add or observe")]
    ActionWithoutGroup { action: String },
    #[error("unsupported action '{action}' with 'group': use expire, set or add")]
    ActionWithGroup { action: String },
    #[error("'name' is required when action is not 'expire'")]
    NameRequired,
    #[error("'set' and 'add' cannot be used together")]
    SetAndAdd,
    #[error("one of: 'action', 'set' or 'add' is required")]
    ActionRequired,
    #[error("label '{key}' must be a string")]
    LabelNotString { key: String },
    #[error("'labels' must be an object of strings")]
    LabelsNotObject,
    #[error("'buckets' is required for action 'observe'")]
    BucketsRequired,
    #[error("'buckets' must hold numbers")]
    BucketsNotNumbers,
}

impl MetricsError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::ReadOperation { .. } => "metrics_read",
            Self::ValidateOperation { .. } => "metrics_invalid",
        }
    }
}

/// What to do with the series.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricAction {
    /// Gauge: set to the value.
    Set(f64),
    /// Counter: add the value.
    Add(f64),
    /// Histogram: observe the value with these bucket bounds.
    Observe { value: f64, buckets: Vec<f64> },
    /// Drop every series of the group.
    Expire,
}

/// One line of the metrics file.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricOperation {
    /// Metric name as written (empty for `expire`).
    pub name: String,
    pub group: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub action: MetricAction,
}

/// Parses a stream of JSON objects (one per line by convention). An empty file has no operations.
/// Linear in the size of the text: line numbers for errors are counted as the stream advances.
pub fn parse(text: &str) -> Result<Vec<MetricOperation>, MetricsError> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut start = 0;
    let mut lines = LineCounter::default();
    loop {
        let index = out.len();
        let line = lines.line_at(text, start + leading_space(&text[start..]));
        let Some(next) = stream.next() else { break };
        let value = next.map_err(|e| MetricsError::ReadOperation {
            index,
            line,
            message: e.to_string(),
        })?;
        start = stream.byte_offset();
        let op = parse_operation(&value).map_err(|reason| MetricsError::ValidateOperation {
            index,
            line,
            reason,
        })?;
        out.push(op);
    }
    Ok(out)
}

fn leading_space(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// The 1-based line of increasing offsets, counting each byte of the text once.
#[derive(Default)]
struct LineCounter {
    offset: usize,
    newlines: usize,
}

impl LineCounter {
    fn line_at(&mut self, text: &str, offset: usize) -> usize {
        if let Some(skipped) = text.as_bytes().get(self.offset..offset) {
            self.newlines += skipped.iter().filter(|b| **b == b'\n').count();
            self.offset = offset;
        }
        self.newlines + 1
    }
}

fn parse_operation(value: &Value) -> Result<MetricOperation, InvalidMetric> {
    let Value::Object(map) = value else {
        return Err(InvalidMetric::NotObject);
    };
    let name = opt_string(map, "name")?.unwrap_or_default();
    let group = opt_string(map, "group")?.filter(|g| !g.is_empty());
    let labels = read_labels(map)?;
    let action = read_action(map)?;
    let value = |action: &str| -> Result<f64, InvalidMetric> {
        opt_number(map, "value")?.ok_or_else(|| InvalidMetric::ValueRequired {
            action: action.to_string(),
        })
    };
    let action = match (action.as_str(), &group) {
        ("set", _) => MetricAction::Set(shortcut(map, "set")?.map_or_else(|| value("set"), Ok)?),
        ("add", _) => MetricAction::Add(shortcut(map, "add")?.map_or_else(|| value("add"), Ok)?),
        ("observe", None) => MetricAction::Observe {
            value: value("observe")?,
            buckets: read_buckets(map)?,
        },
        ("expire", Some(_)) => MetricAction::Expire,
        (other, None) => {
            return Err(InvalidMetric::ActionWithoutGroup {
                action: other.to_string(),
            });
        }
        (other, Some(_)) => {
            return Err(InvalidMetric::ActionWithGroup {
                action: other.to_string(),
            });
        }
    };
    if name.is_empty() && action != MetricAction::Expire {
        return Err(InvalidMetric::NameRequired);
    }
    Ok(MetricOperation {
        name,
        group,
        labels,
        action,
    })
}

/// `action`, or the deprecated shortcuts `"set": N` / `"add": N`.
fn read_action(map: &Map<String, Value>) -> Result<String, InvalidMetric> {
    if let Some(action) = opt_string(map, "action")?.filter(|a| !a.is_empty()) {
        return Ok(action);
    }
    match (map.contains_key("set"), map.contains_key("add")) {
        (true, true) => Err(InvalidMetric::SetAndAdd),
        (true, false) => Ok("set".into()),
        (false, true) => Ok("add".into()),
        (false, false) => Err(InvalidMetric::ActionRequired),
    }
}

fn shortcut(map: &Map<String, Value>, key: &str) -> Result<Option<f64>, InvalidMetric> {
    if map
        .get("action")
        .and_then(Value::as_str)
        .is_some_and(|a| !a.is_empty())
    {
        return Ok(None);
    }
    opt_number(map, key)
}

fn opt_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, InvalidMetric> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(InvalidMetric::NotString {
            key: key.to_string(),
        }),
    }
}

fn opt_number(map: &Map<String, Value>, key: &str) -> Result<Option<f64>, InvalidMetric> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| InvalidMetric::NotNumber {
                key: key.to_string(),
            }),
    }
}

fn read_labels(map: &Map<String, Value>) -> Result<BTreeMap<String, String>, InvalidMetric> {
    match map.get("labels") {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(labels)) => labels
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(InvalidMetric::LabelNotString { key: k.clone() }),
            })
            .collect(),
        Some(_) => Err(InvalidMetric::LabelsNotObject),
    }
}

fn read_buckets(map: &Map<String, Value>) -> Result<Vec<f64>, InvalidMetric> {
    let Some(Value::Array(items)) = map.get("buckets") else {
        return Err(InvalidMetric::BucketsRequired);
    };
    items
        .iter()
        .map(|b| b.as_f64().ok_or(InvalidMetric::BucketsNotNumbers))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn documented_examples_parse() {
        let text = r#"{"name":"metric_name","action":"add","value":1,"labels":{"label1":"value1"}}
{"name":"metric_name","action":"set","value":33,"labels":{"label1":"value1"}}
{"name":"metric_name","action":"observe","value":42, "buckets": [1,2,5,10,20,50], "labels":{"label1":"value1"}}
{"name":"metric_name","add":1,"labels":{"label1":"value1"}}
{"group":"group1", "name":"hook_metric_count",  "action":"add", "value":1, "labels":{"label1":"value1"}}
{"group":"group_name_1", "action":"expire"}
"#;
        let ops = parse(text).unwrap();
        assert_eq!(ops.len(), 6);
        assert_eq!(ops[0].action, MetricAction::Add(1.0));
        assert_eq!(ops[0].labels, labels(&[("label1", "value1")]));
        assert_eq!(ops[1].action, MetricAction::Set(33.0));
        assert_eq!(
            ops[2].action,
            MetricAction::Observe {
                value: 42.0,
                buckets: vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
            }
        );
        assert_eq!(ops[3].action, MetricAction::Add(1.0));
        assert_eq!(ops[4].group.as_deref(), Some("group1"));
        assert_eq!(
            ops[5],
            MetricOperation {
                name: String::new(),
                group: Some("group_name_1".into()),
                labels: BTreeMap::new(),
                action: MetricAction::Expire
            }
        );
    }

    #[test]
    fn empty_file_has_no_operations() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("\n\n").unwrap().is_empty());
    }

    #[test]
    fn set_shortcut_sets_the_gauge() {
        let ops = parse(r#"{"name":"m","set":2.5}"#).unwrap();
        assert_eq!(ops[0].action, MetricAction::Set(2.5));
    }

    #[test]
    fn invalid_operations_name_their_index_and_line() {
        let text = "{\"name\":\"ok\",\"action\":\"set\",\"value\":1}\n\n{\"name\":\"bad\",\"action\":\"set\"}\n";
        let e = parse(text).unwrap_err();
        assert_eq!(
            e,
            MetricsError::ValidateOperation {
                index: 1,
                line: 3,
                reason: InvalidMetric::ValueRequired {
                    action: "set".into()
                }
            }
        );
        assert_eq!(
            e.to_string(),
            "$METRICS_PATH operation 1 (line 3): 'value' is required for action 'set'"
        );
    }

    #[test]
    fn line_numbers_stay_right_across_many_and_multiline_operations() {
        let good = r#"{"name": "m", "action": "set", "value": 1}"#;
        let mut text = format!("{good}\n").repeat(50_000);
        text.push_str("{\n  \"name\": \"m\",\n  \"set\": 2\n}\n\n");
        text.push_str(r#"{"name": "m", "action": "bad"}"#);
        let e = parse(&text).unwrap_err();
        assert_eq!(
            e,
            MetricsError::ValidateOperation {
                index: 50_001,
                line: 50_006,
                reason: InvalidMetric::ActionWithoutGroup {
                    action: "bad".into()
                },
            }
        );
    }

    #[test]
    fn broken_json_is_a_read_error_with_its_line() {
        let e = parse("{\"name\":\"a\",\"set\":1}\n{\"name\": \n").unwrap_err();
        assert_eq!(e.category(), "metrics_read");
        assert!(e.to_string().contains("operation 1 (line 2)"), "{e}");
    }

    #[test]
    fn validation_rules_match_the_contract() {
        let cases = [
            (
                r#"{"name":"m"}"#,
                "one of: 'action', 'set' or 'add' is required",
            ),
            (r#"{"name":"m","set":1,"add":1}"#, "cannot be used together"),
            (
                r#"{"action":"set","value":1}"#,
                "'name' is required when action is not 'expire'",
            ),
            (
                r#"{"name":"m","action":"expire"}"#,
                "unsupported action 'expire' without 'group'",
            ),
            (
                r#"{"name":"m","action":"observe","value":1,"buckets":[1],"group":"g"}"#,
                "unsupported action 'observe' with 'group'",
            ),
            (
                r#"{"name":"m","action":"observe","value":1}"#,
                "'buckets' is required",
            ),
            (
                r#"{"name":"m","action":"inc","value":1}"#,
                "unsupported action 'inc'",
            ),
            (
                r#"{"name":"m","action":"set","value":"1"}"#,
                "'value' must be a number",
            ),
            (
                r#"{"name":"m","action":"set","value":1,"labels":{"a":1}}"#,
                "label 'a' must be a string",
            ),
            ("[1]", "must be a JSON object"),
        ];
        for (text, expected) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{text}: {e}");
        }
    }
}
