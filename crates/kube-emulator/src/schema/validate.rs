//! Validation of a custom resource against its OpenAPI v3 schema: types, `required`, `enum`,
//! bounds, lengths, `pattern`, item and property counts, `uniqueItems`, `allOf`, `anyOf`,
//! `oneOf` and `not`, each failure a cause with the field's path, as the API server words them.

use serde_json::Value;

use super::member_schema;
use crate::status::Cause;

/// Every failed field of `obj` (sorted by path); empty when it validates.
pub fn validate(obj: &Value, schema: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    check(obj, schema, "", &mut causes);
    causes.sort_by(|a, b| a.field.cmp(&b.field));
    causes
}

fn check(value: &Value, schema: &Value, field: &str, out: &mut Vec<Cause>) {
    if !type_matches(value, schema, field, out) {
        return;
    }
    constraints(value, schema, field, out);
    combinators(value, schema, field, out);
    match value {
        Value::Object(map) => {
            for required in strings(schema.get("required")) {
                if !map.contains_key(required) {
                    out.push(Cause::new(
                        "FieldValueRequired",
                        join(field, required),
                        "Required value",
                    ));
                }
            }
            for (key, child) in map {
                if let Some(child_schema) = member_schema(schema, key) {
                    check(child, child_schema, &join(field, key), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    check(item, item_schema, &format!("{field}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_string()
    } else {
        format!("{field}.{key}")
    }
}

fn strings(list: Option<&Value>) -> impl Iterator<Item = &str> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The JSON type of a value, as the errors name it.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(value: &Value, schema: &Value, field: &str, out: &mut Vec<Cause>) -> bool {
    let actual = type_name(value);
    let nullable = schema.get("nullable") == Some(&Value::Bool(true));
    let int_or_string = schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    let ok = match schema.get("type").and_then(Value::as_str) {
        _ if actual == "null" => nullable,
        _ if int_or_string => matches!(actual, "integer" | "string"),
        None => true,
        Some("number") => matches!(actual, "integer" | "number"),
        Some(wanted) => wanted == actual,
    };
    if !ok {
        let wanted = schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("object");
        let message = format!(
            "Invalid value: \"{actual}\": {field} in body must be of type {wanted}: \"{actual}\""
        );
        out.push(Cause::new("FieldValueTypeInvalid", field, message));
    }
    ok
}

fn constraints(value: &Value, schema: &Value, field: &str, out: &mut Vec<Cause>) {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        let message = format!(
            "Unsupported value: {value}: supported values: {}",
            list.join(", ")
        );
        out.push(Cause::new("FieldValueNotSupported", field, message));
    }
    let mut invalid = |reason: &'static str, detail: String| {
        out.push(Cause::new(reason, field, detail));
    };
    match value {
        Value::Number(n) => number(
            n.as_f64().unwrap_or_default(),
            value,
            schema,
            field,
            &mut invalid,
        ),
        Value::String(s) => string(s, schema, field, &mut invalid),
        Value::Array(items) => array(items, schema, field, &mut invalid),
        Value::Object(map) => {
            let n = map.len() as u64;
            if let Some(max) = uint(schema, "maxProperties").filter(|m| n > *m) {
                invalid(
                    "FieldValueTooMany",
                    format!("Too many: {n}: must have at most {max} items"),
                );
            }
            if let Some(min) = uint(schema, "minProperties").filter(|m| n < *m) {
                invalid(
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {n}: {field} in body should have at least {min} properties"
                    ),
                );
            }
        }
        _ => {}
    }
}

fn uint(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

fn number(
    n: f64,
    value: &Value,
    schema: &Value,
    field: &str,
    invalid: &mut impl FnMut(&'static str, String),
) {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let exclusive = |key: &str| schema.get(key) == Some(&Value::Bool(true));
    let shown = |limit: f64| {
        Value::from(limit)
            .to_string()
            .trim_end_matches(".0")
            .to_string()
    };
    if let Some(max) = bound("maximum") {
        let (bad, words) = if exclusive("exclusiveMaximum") {
            (n >= max, "less than")
        } else {
            (n > max, "less than or equal to")
        };
        if bad {
            let limit = shown(max);
            invalid(
                "FieldValueInvalid",
                format!("Invalid value: {value}: {field} in body should be {words} {limit}"),
            );
        }
    }
    if let Some(min) = bound("minimum") {
        let (bad, words) = if exclusive("exclusiveMinimum") {
            (n <= min, "greater than")
        } else {
            (n < min, "greater than or equal to")
        };
        if bad {
            let limit = shown(min);
            invalid(
                "FieldValueInvalid",
                format!("Invalid value: {value}: {field} in body should be {words} {limit}"),
            );
        }
    }
    if let Some(factor) = bound("multipleOf").filter(|f| *f != 0.0)
        && (n / factor).fract() != 0.0
    {
        let factor = shown(factor);
        invalid(
            "FieldValueInvalid",
            format!("Invalid value: {value}: {field} in body should be a multiple of {factor}"),
        );
    }
}

fn string(s: &str, schema: &Value, field: &str, invalid: &mut impl FnMut(&'static str, String)) {
    let length = s.chars().count() as u64;
    if let Some(max) = uint(schema, "maxLength").filter(|m| length > *m) {
        invalid(
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} bytes"),
        );
    }
    if let Some(min) = uint(schema, "minLength").filter(|m| length < *m) {
        invalid(
            "FieldValueInvalid",
            format!("Invalid value: \"{s}\": {field} in body should be at least {min} chars long"),
        );
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(s))
    {
        invalid(
            "FieldValueInvalid",
            format!("Invalid value: \"{s}\": {field} in body should match '{pattern}'"),
        );
    }
}

fn array(
    items: &[Value],
    schema: &Value,
    field: &str,
    invalid: &mut impl FnMut(&'static str, String),
) {
    let n = items.len() as u64;
    if let Some(max) = uint(schema, "maxItems").filter(|m| n > *m) {
        invalid(
            "FieldValueTooMany",
            format!("Too many: {n}: must have at most {max} items"),
        );
    }
    if let Some(min) = uint(schema, "minItems").filter(|m| n < *m) {
        invalid(
            "FieldValueInvalid",
            format!("Invalid value: {n}: {field} in body should have at least {min} items"),
        );
    }
    let unique = schema.get("uniqueItems") == Some(&Value::Bool(true));
    if let Some(duplicate) = items
        .iter()
        .enumerate()
        .find(|(i, item)| unique && items[..*i].contains(item))
    {
        invalid(
            "FieldValueDuplicate",
            format!("Duplicate value: {}", duplicate.1),
        );
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`: value validations only (structural schemas keep
/// their properties at the top).
fn combinators(value: &Value, schema: &Value, field: &str, out: &mut Vec<Cause>) {
    let branches = |key: &str| {
        schema.get(key).and_then(Value::as_array).map(|list| {
            list.iter()
                .map(|s| {
                    let mut causes = Vec::new();
                    check(value, s, field, &mut causes);
                    causes
                })
                .collect::<Vec<_>>()
        })
    };
    if let Some(all) = branches("allOf") {
        out.extend(all.into_iter().flatten());
    }
    let passing = |results: &[Vec<Cause>]| results.iter().filter(|c| c.is_empty()).count();
    if let Some(any) = branches("anyOf").filter(|r| passing(r) == 0) {
        out.push(Cause::new(
            "FieldValueInvalid",
            field,
            format!(
                "Invalid value: {value}: {field} in body must validate at least one schema (anyOf)"
            ),
        ));
        out.extend(any.into_iter().flatten());
    }
    if let Some(one) = branches("oneOf").filter(|r| passing(r) != 1) {
        out.push(Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {value}: {field} in body must validate one and only one schema (oneOf)"),
        ));
        if passing(&one) == 0 {
            out.extend(one.into_iter().flatten());
        }
    }
    if let Some(not) = schema.get("not") {
        let mut causes = Vec::new();
        check(value, not, field, &mut causes);
        if causes.is_empty() {
            out.push(Cause::new(
                "FieldValueInvalid",
                field,
                format!("Invalid value: {value}: {field} in body should not validate the schema"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["size"],
            "properties": {"size": {"type": "integer", "minimum": 1, "maximum": 10},
                           "color": {"type": "string", "enum": ["red", "green"]},
                           "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                           "tags": {"type": "array", "maxItems": 1, "items": {"type": "string"}}}}}})
    }

    fn reasons(obj: Value) -> Vec<(String, &'static str)> {
        validate(&obj, &schema())
            .into_iter()
            .map(|c| (c.field, c.reason))
            .collect()
    }

    #[test]
    fn each_failed_field_is_a_cause_with_the_api_servers_reason() {
        assert!(reasons(json!({"spec": {"size": 3, "color": "red"}})).is_empty());
        assert_eq!(
            reasons(json!({"spec": {"size": "big"}})),
            [("spec.size".to_string(), "FieldValueTypeInvalid")]
        );
        assert_eq!(
            reasons(json!({"spec": {"size": 20, "color": "blue"}})),
            [
                ("spec.color".to_string(), "FieldValueNotSupported"),
                ("spec.size".to_string(), "FieldValueInvalid")
            ]
        );
        assert_eq!(
            reasons(json!({"spec": {"name": "ABCDEFG", "tags": ["a", "b"], "size": 1}})),
            [
                ("spec.name".to_string(), "FieldValueTooLong"),
                ("spec.name".to_string(), "FieldValueInvalid"),
                ("spec.tags".to_string(), "FieldValueTooMany")
            ]
        );
        assert_eq!(
            reasons(json!({"spec": {}})),
            [("spec.size".to_string(), "FieldValueRequired")]
        );
    }
}
