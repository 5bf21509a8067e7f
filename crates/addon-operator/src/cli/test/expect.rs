//! A case's expectations against what its run gave: the lines of the diff, and the
//! expectations `--update` writes from a run.

use serde_json::Value;

use super::matching::{Mode, diff, diff_list, shaped_like, short};
use super::run::Actual;
use super::spec::Expect;

/// The differences between `expect` and `actual`, one line each; empty when the case passes.
pub fn compare(expect: &Expect, actual: &Actual) -> Vec<String> {
    let mut out = Vec::new();
    match (&expect.error, &actual.error) {
        (Some(text), Some(error)) if error.contains(text.as_str()) => {}
        (Some(text), Some(error)) => out.push(format!(
            "error: expected a text containing {}, got {}",
            Value::String(text.clone()),
            Value::String(error.clone())
        )),
        (Some(text), None) => out.push(format!(
            "error: expected the run to fail with {}, it succeeded",
            Value::String(text.clone())
        )),
        (None, Some(error)) => {
            out.push(format!("error: the run failed: {error}"));
            return out;
        }
        (None, None) => {}
    }
    let mode = if expect.exact {
        Mode::Exact
    } else {
        Mode::Subset
    };
    if let Some(values) = &expect.values {
        out.extend(diff("values", values, &actual.values, mode));
    }
    if let Some(values) = &expect.config_values {
        out.extend(diff("configValues", values, &actual.config_values, mode));
    }
    let lists = [
        (
            "valuesPatch",
            &expect.values_patch,
            &actual.values_patch,
            Mode::Exact,
        ),
        (
            "configValuesPatch",
            &expect.config_values_patch,
            &actual.config_values_patch,
            Mode::Exact,
        ),
        (
            "kubernetesOperations",
            &expect.kubernetes_operations,
            &actual.kubernetes_operations,
            Mode::Subset,
        ),
        ("metrics", &expect.metrics, &actual.metrics, Mode::Subset),
    ];
    for (name, expected, actual, mode) in lists {
        if let Some(expected) = expected {
            out.extend(diff_list(name, expected, actual, mode));
        }
    }
    if let Some(enabled) = expect.enabled {
        match actual.enabled {
            Some(got) if got == enabled => {}
            got => out.push(format!(
                "enabled: expected {enabled}, got {}",
                got.map_or("no answer".to_string(), |g| g.to_string())
            )),
        }
    }
    if expect.unchanged && !actual.unchanged() {
        out.push(format!(
            "unchanged: expected no change, got {}",
            changes(actual)
        ));
    }
    out
}

/// What a run changed, in a few words.
fn changes(actual: &Actual) -> String {
    let parts = [
        ("valuesPatch", &actual.values_patch),
        ("configValuesPatch", &actual.config_values_patch),
        ("kubernetesOperations", &actual.kubernetes_operations),
        ("metrics", &actual.metrics),
    ];
    let named: Vec<String> = parts
        .iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(name, list)| format!("{name} {}", short(&Value::Array(list.to_vec()))))
        .collect();
    named.join(", ")
}

/// The expectations of a case after `--update`: what it states is rewritten from `actual` (a
/// subset expectation keeps its shape); a case that states nothing gets the run's outputs, or
/// `unchanged`; a failed run gets its `error`.
pub fn updated(expect: &Expect, actual: &Actual) -> Expect {
    if let Some(error) = &actual.error {
        return Expect {
            error: Some(error.clone()),
            ..Expect::default()
        };
    }
    let fresh = *expect == Expect::default() || expect.error.is_some();
    let mut out = Expect {
        exact: expect.exact,
        ..Expect::default()
    };
    let tree = |expected: &Value, actual: &Value| {
        if expect.exact {
            actual.clone()
        } else {
            shaped_like(expected, actual)
        }
    };
    out.values = expect.values.as_ref().map(|v| tree(v, &actual.values));
    out.config_values = expect
        .config_values
        .as_ref()
        .map(|v| tree(v, &actual.config_values));
    let list = |stated: bool, actual: &Vec<Value>| {
        (stated || (!actual.is_empty() && (fresh || expect.unchanged))).then(|| actual.clone())
    };
    out.values_patch = list(expect.values_patch.is_some(), &actual.values_patch);
    out.config_values_patch = list(
        expect.config_values_patch.is_some(),
        &actual.config_values_patch,
    );
    out.kubernetes_operations = list(
        expect.kubernetes_operations.is_some(),
        &actual.kubernetes_operations,
    );
    out.metrics = list(expect.metrics.is_some(), &actual.metrics);
    out.enabled = actual.enabled.filter(|_| fresh || expect.enabled.is_some());
    out.unchanged = actual.unchanged() && actual.enabled.is_none() && (fresh || expect.unchanged);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn actual() -> Actual {
        Actual {
            values: json!({"web": {"a": 1, "b": 2}}),
            values_patch: vec![json!({"op": "add", "path": "/web/b", "value": 2})],
            kubernetes_operations: vec![json!({"operation": "Delete", "kind": "Pod", "name": "x"})],
            ..Actual::default()
        }
    }

    #[test]
    fn a_matching_case_has_no_diff() {
        let expect = Expect {
            values: Some(json!({"web": {"b": 2}})),
            kubernetes_operations: Some(vec![json!({"operation": "Delete"})]),
            ..Expect::default()
        };
        assert!(compare(&expect, &actual()).is_empty());
    }

    #[test]
    fn each_difference_is_a_line() {
        let expect = Expect {
            values: Some(json!({"web": {"b": 3}})),
            values_patch: Some(vec![]),
            unchanged: true,
            ..Expect::default()
        };
        let lines = compare(&expect, &actual());
        assert_eq!(lines[0], "values.web.b: expected 3, got 2");
        assert!(
            lines[1].starts_with("valuesPatch[0]: unexpected"),
            "{lines:?}"
        );
        assert!(
            lines[2].starts_with("unchanged: expected no change, got valuesPatch"),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn a_failed_run_fails_unless_its_error_is_expected() {
        let failed = Actual {
            error: Some("hook 'h' failed (exit status 2): boom".into()),
            ..Actual::default()
        };
        let lines = compare(&Expect::default(), &failed);
        assert_eq!(
            lines,
            vec!["error: the run failed: hook 'h' failed (exit status 2): boom"]
        );
        let expect = Expect {
            error: Some("exit status 2".into()),
            ..Expect::default()
        };
        assert!(compare(&expect, &failed).is_empty());
        let lines = compare(&expect, &actual());
        assert!(lines[0].contains("it succeeded"), "{lines:?}");
    }

    #[test]
    fn the_enabled_answer_is_compared() {
        let run = Actual {
            enabled: Some(false),
            ..Actual::default()
        };
        let expect = Expect {
            enabled: Some(true),
            ..Expect::default()
        };
        assert_eq!(
            compare(&expect, &run),
            vec!["enabled: expected true, got false"]
        );
    }

    #[test]
    fn an_update_fills_a_fresh_case_with_the_outputs() {
        let new = updated(&Expect::default(), &actual());
        assert_eq!(new.values_patch, Some(actual().values_patch));
        assert_eq!(
            new.kubernetes_operations,
            Some(actual().kubernetes_operations)
        );
        assert_eq!(new.values, None);
        assert!(!new.unchanged);
        assert!(compare(&new, &actual()).is_empty());
        let quiet = updated(&Expect::default(), &Actual::default());
        assert!(quiet.unchanged);
    }

    #[test]
    fn an_update_rewrites_what_the_case_states_only() {
        let expect = Expect {
            values: Some(json!({"web": {"b": 7}})),
            ..Expect::default()
        };
        let new = updated(&expect, &actual());
        assert_eq!(new.values, Some(json!({"web": {"b": 2}})));
        assert_eq!(new.values_patch, None);
        assert!(compare(&new, &actual()).is_empty());
    }
}
