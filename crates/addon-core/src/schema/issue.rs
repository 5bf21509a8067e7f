//! Describes a schema violation by what the schema expects, never by quoting the offending value
//! (values may hold secrets, and messages reach logs and the debug API).

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

/// What the schema expected at the error's location, in a few words.
pub fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    match e.kind() {
        ValidationErrorKind::Type { kind } => format!("expected type {}", type_names(kind)),
        ValidationErrorKind::Required { property } => {
            format!("required property {} is missing", short(property))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => format!(
            "propert{} {} not allowed by the schema",
            if unexpected.len() == 1 { "y" } else { "ies" },
            unexpected
                .iter()
                .map(|p| format!("'{p}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ValidationErrorKind::Enum { .. } => "not one of the values the schema allows".into(),
        ValidationErrorKind::Constant { .. } => "not the value the schema requires".into(),
        ValidationErrorKind::Pattern { pattern } => format!("does not match pattern '{pattern}'"),
        ValidationErrorKind::Format { format } => format!("not a valid '{format}'"),
        ValidationErrorKind::MinLength { limit } => format!("shorter than {limit} characters"),
        ValidationErrorKind::MaxLength { limit } => format!("longer than {limit} characters"),
        ValidationErrorKind::MinItems { limit } => format!("fewer than {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("more than {limit} items"),
        ValidationErrorKind::MinProperties { limit } => format!("fewer than {limit} properties"),
        ValidationErrorKind::MaxProperties { limit } => format!("more than {limit} properties"),
        ValidationErrorKind::Minimum { limit } => format!("less than the minimum {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("greater than the maximum {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("not greater than {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("not less than {limit}"),
        ValidationErrorKind::UniqueItems => "items are not unique".into(),
        ValidationErrorKind::Custom { message, .. } => message.clone(),
        other => format!("fails the schema's '{}'", other.keyword()),
    }
}

/// True when `e` is a missing `required` property that `fallback` has at the same location.
pub fn required_present_in(e: &jsonschema::ValidationError<'_>, fallback: &Value) -> bool {
    let ValidationErrorKind::Required { property } = e.kind() else {
        return false;
    };
    let Some(name) = property.as_str() else {
        return false;
    };
    fallback
        .pointer(e.instance_path().as_str())
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(name))
}

fn type_names(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => t.to_string(),
        TypeKind::Multiple(set) => set
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// A property name from the schema, cut short if a schema author wrote a novel.
fn short(property: &Value) -> String {
    let text = property
        .as_str()
        .map_or_else(|| property.to_string(), str::to_string);
    if text.chars().count() > 64 {
        format!("'{}…'", text.chars().take(64).collect::<String>())
    } else {
        format!("'{text}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(schema: Value, value: Value) -> Vec<String> {
        let v = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .build(&schema)
            .unwrap();
        v.iter_errors(&value).map(|e| describe(&e)).collect()
    }

    #[test]
    fn messages_name_the_expectation_and_never_the_value() {
        let schema = json!({"type": "object", "additionalProperties": false, "required": ["r"],
            "properties": {"r": {}, "n": {"type": "integer"}, "e": {"enum": ["a", "b"]},
                           "p": {"type": "string", "pattern": "^x"}}});
        let got = messages(
            schema,
            json!({"n": "s3cr3t-token", "e": "s3cr3t-token", "p": "s3cr3t-token", "s3cr3tkey": 1}),
        );
        let all = got.join("\n");
        assert!(all.contains("expected type integer"), "{all}");
        assert!(all.contains("required property 'r' is missing"), "{all}");
        assert!(all.contains("not one of the values"), "{all}");
        assert!(all.contains("does not match pattern '^x'"), "{all}");
        assert!(!all.contains("s3cr3t-token"), "{all}");
    }

    #[test]
    fn multiple_types_are_listed() {
        let got = messages(json!({"type": ["string", "null"]}), json!(1));
        assert_eq!(got, ["expected type null or string"]);
    }
}
