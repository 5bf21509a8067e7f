//! YAML reading with the YAML 1.1 scalars Go and Helm accept (`yes`, `on`, ...), into JSON values.

use serde_json::Value;

/// A YAML document that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// The parser's message, with line and column where it knows them.
    pub message: String,
}

/// Parses one YAML (or JSON) document into a JSON value. An empty document is `null`.
pub fn parse(text: &str) -> Result<Value, YamlError> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_saphyr::from_str::<Value>(text).map_err(|e| YamlError {
        message: e.to_string(),
    })
}

/// Renders a JSON value as YAML text (used for Helm values files and the config file).
pub fn to_string(value: &Value) -> Result<String, YamlError> {
    serde_saphyr::to_string(value).map_err(|e| YamlError {
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_1_1_booleans_are_booleans() {
        let v = parse("a: yes\nb: no\nc: on\nd: off\ne: true\nf: \"yes\"").unwrap();
        assert_eq!(
            v,
            json!({"a": true, "b": false, "c": true, "d": false, "e": true, "f": "yes"})
        );
    }

    #[test]
    fn json_is_yaml() {
        let v = parse(r#"{"onStartup": 10, "schedule": [{"crontab": "* * * * *"}]}"#).unwrap();
        assert_eq!(v["onStartup"], json!(10));
        assert_eq!(v["schedule"][0]["crontab"], json!("* * * * *"));
    }

    #[test]
    fn empty_document_is_null() {
        assert_eq!(parse("  \n").unwrap(), Value::Null);
    }

    #[test]
    fn broken_yaml_is_an_error_with_position() {
        let err = parse("a: [1, 2\nb: c").unwrap_err();
        assert!(!err.message.is_empty());
    }

    #[test]
    fn integers_stay_integers_round_trip() {
        let v = parse("param1: 100\nparam2: \"Yes\"\nf: 1.5").unwrap();
        assert_eq!(v, json!({"param1": 100, "param2": "Yes", "f": 1.5}));
        let back = parse(&to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
    }
}

#[cfg(test)]
mod round_trip_tests {
    use super::*;
    use serde_json::json;

    /// Helm reads the values file with YAML 1.1 rules: strings that look like booleans, numbers
    /// or null must be quoted when written, or a chart would see another type.
    #[test]
    fn strings_that_look_like_other_scalars_stay_strings() {
        let v = json!({
            "yes": "yes", "on": "on", "off": "OFF", "y": "y", "n": "N", "true": "true",
            "null": "null", "tilde": "~", "int": "1", "float": "1.5", "hex": "0x10",
            "octal": "0755", "exp": "1e3", "empty": "", "colon": "a: b", "dash": "- x",
            "hash": "#x", "date": "2026-11-21", "inf": ".inf", "nan": ".NaN"
        });
        let text = to_string(&v).unwrap();
        assert_eq!(parse(&text).unwrap(), v, "{text}");
    }
}
