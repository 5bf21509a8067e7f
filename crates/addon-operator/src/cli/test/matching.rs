//! Comparing what a case expects with what a run gave: JSON trees path by path (a subset or
//! exactly), and lists of operations one by one, as lines of a readable diff.

use serde_json::Value;

/// How a tree is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every key of an expected object is in the actual one with a matching value; arrays have
    /// the same length and match item by item.
    Subset,
    /// Equal.
    Exact,
}

/// The differences between `expected` and `actual` under `path`, one line each
/// (`values.web.replicas: expected 2, got 3`). Empty when they match.
pub fn diff(path: &str, expected: &Value, actual: &Value, mode: Mode) -> Vec<String> {
    let mut out = Vec::new();
    walk(path, expected, Some(actual), mode, &mut out);
    out
}

fn walk(path: &str, expected: &Value, actual: Option<&Value>, mode: Mode, out: &mut Vec<String>) {
    let Some(actual) = actual else {
        out.push(format!("{path}: expected {}, got nothing", short(expected)));
        return;
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                walk(&join(path, key), value, a.get(key), mode, out);
            }
            if mode == Mode::Exact {
                for (key, value) in a.iter().filter(|(k, _)| !e.contains_key(*k)) {
                    out.push(format!("{}: unexpected {}", join(path, key), short(value)));
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                walk(&format!("{path}[{i}]"), ev, Some(av), mode, out);
            }
        }
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => {}
        _ if expected == actual => {}
        _ => out.push(format!(
            "{path}: expected {}, got {}",
            short(expected),
            short(actual)
        )),
    }
}

/// `path.key`, or `path["a.b"]` for a key that is not a plain word.
fn join(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

/// The most characters of a value shown in a diff line.
const SHOWN_CHARS: usize = 200;

/// A value as compact JSON, cut to [`SHOWN_CHARS`].
pub fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= SHOWN_CHARS {
        return text;
    }
    let cut: String = text.chars().take(SHOWN_CHARS).collect();
    format!("{cut}…")
}

/// A list compared item by item, each item in `mode`: a different length is one line naming the
/// missing or extra items, then each pair that differs.
pub fn diff_list(path: &str, expected: &[Value], actual: &[Value], mode: Mode) -> Vec<String> {
    let mut out = Vec::new();
    for (i, e) in expected.iter().enumerate() {
        match actual.get(i) {
            Some(a) => out.extend(diff(&format!("{path}[{i}]"), e, a, mode)),
            None => out.push(format!("{path}[{i}]: expected {}, got nothing", short(e))),
        }
    }
    for (i, a) in actual.iter().enumerate().skip(expected.len()) {
        out.push(format!("{path}[{i}]: unexpected {}", short(a)));
    }
    out
}

/// `actual` cut to the shape of `expected`: the keys an expected object names (that the actual
/// one has), whole values elsewhere. Used by `--update` to refresh a subset expectation.
pub fn shaped_like(expected: &Value, actual: &Value) -> Value {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => Value::Object(
            e.iter()
                .filter_map(|(k, ev)| a.get(k).map(|av| (k.clone(), shaped_like(ev, av))))
                .collect(),
        ),
        _ => actual.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subset_matches_when_every_expected_key_matches() {
        let actual = json!({"web": {"a": 1, "b": [1, {"x": 2, "y": 3}]}, "global": {}});
        let expected = json!({"web": {"b": [1, {"x": 2}]}});
        assert!(diff("values", &expected, &actual, Mode::Subset).is_empty());
        assert!(!diff("values", &expected, &actual, Mode::Exact).is_empty());
    }

    #[test]
    fn differences_are_named_path_by_path() {
        let actual = json!({"web": {"a": 1, "c": "x"}});
        let expected = json!({"web": {"a": 2, "b": true}});
        assert_eq!(
            diff("values", &expected, &actual, Mode::Exact),
            vec![
                "values.web.a: expected 2, got 1",
                "values.web.b: expected true, got nothing",
                "values.web.c: unexpected \"x\"",
            ]
        );
    }

    #[test]
    fn odd_keys_are_quoted_and_numbers_compare_by_value() {
        let actual = json!({"a.b": 1.0});
        assert_eq!(
            diff("v", &json!({"a.b": 2}), &actual, Mode::Subset),
            vec!["v[\"a.b\"]: expected 2, got 1.0"]
        );
        assert!(diff("v", &json!({"a.b": 1}), &actual, Mode::Subset).is_empty());
    }

    #[test]
    fn lists_are_compared_item_by_item() {
        let actual = vec![json!({"operation": "Delete", "name": "a"}), json!({"x": 1})];
        let expected = vec![json!({"operation": "Create"})];
        assert_eq!(
            diff_list("ops", &expected, &actual, Mode::Subset),
            vec![
                "ops[0].operation: expected \"Create\", got \"Delete\"",
                "ops[1]: unexpected {\"x\":1}",
            ]
        );
        let shorter = diff_list("ops", &[json!(1), json!(2)], &[json!(1)], Mode::Exact);
        assert_eq!(shorter, vec!["ops[1]: expected 2, got nothing"]);
    }

    #[test]
    fn long_values_are_cut() {
        let long = json!("x".repeat(500));
        assert!(short(&long).chars().count() <= SHOWN_CHARS + 1);
    }

    #[test]
    fn an_update_keeps_the_shape_of_a_subset_expectation() {
        let expected = json!({"web": {"a": 1}, "gone": 1});
        let actual = json!({"web": {"a": 5, "b": 2}, "global": {}});
        assert_eq!(shaped_like(&expected, &actual), json!({"web": {"a": 5}}));
    }
}
