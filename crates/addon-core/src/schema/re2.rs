//! `pattern` with RE2 syntax, as the Go operator reads it (`(?P<name>…)`): the `regex` crate
//! checks it, because the JSON Schema library's meta-schema only knows ECMA regular expressions.

use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

use super::transform::walk_mut;

/// The name `pattern` is compiled under.
pub const KEYWORD: &str = "x-re2-pattern";

/// Renames every string `pattern` of the schema to [`KEYWORD`] (on a copy used for compiling).
pub fn hide_patterns(schema: &mut Value) {
    walk_mut(schema, &mut |map| {
        if let Some(pattern @ Value::String(_)) = map.remove("pattern") {
            map.insert(KEYWORD.into(), pattern);
        }
    });
}

/// The keyword factory for [`KEYWORD`]: an invalid expression fails the schema.
pub fn factory<'a>(
    _parent: &'a Map<String, Value>,
    value: &'a Value,
    _path: jsonschema::paths::Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let pattern = value.as_str().unwrap_or_default();
    let regex = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ValidationError::custom(format!("invalid RE2 pattern '{pattern}': {e}")))?;
    Ok(Box::new(Re2Pattern {
        regex,
        pattern: pattern.to_string(),
    }))
}

struct Re2Pattern {
    regex: regex::Regex,
    pattern: String,
}

impl<'i> Keyword<'i> for Re2Pattern {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(ValidationError::custom(format!(
                "does not match pattern '{}'",
                self.pattern
            )))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        instance.as_str().is_none_or(|s| self.regex.is_match(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator(
        schema: &Value,
    ) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
        let mut schema = schema.clone();
        hide_patterns(&mut schema);
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .with_keyword(KEYWORD, factory)
            .build(&schema)
    }

    #[test]
    fn named_groups_compile_and_match() {
        let v = validator(&json!({"properties": {"v": {
            "pattern": "^(?P<major>0|[1-9]\\d*)\\.(?P<minor>\\d+)$"}}}))
        .unwrap();
        assert!(v.is_valid(&json!({"v": "1.20"})));
        assert!(!v.is_valid(&json!({"v": "v1"})));
        assert!(v.is_valid(&json!({"v": 5})), "only strings are matched");
    }

    #[test]
    fn an_invalid_expression_fails_the_schema() {
        let err = validator(&json!({"pattern": "(unclosed"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid RE2 pattern"), "{err}");
    }
}
