//! ConversionReview: reading the request, the hook's `$CONVERSION_RESPONSE_PATH` file, the review of one conversion step, and the review sent back.

use serde_json::{Value, json};

use super::WebhookError;
use super::admission::read_object;

/// A ConversionReview request.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversionRequest {
    /// `apiVersion` of the review (`apiextensions.k8s.io/v1` or `v1beta1`): the reply uses the same.
    pub api_version: String,
    pub uid: String,
    pub desired_api_version: String,
    pub objects: Vec<Value>,
}

impl ConversionRequest {
    /// Reads a ConversionReview body.
    pub fn parse(review: &Value) -> Result<Self, WebhookError> {
        let bad = |message: &str| WebhookError::BadReview {
            message: message.to_string(),
        };
        if review.get("kind").and_then(Value::as_str) != Some("ConversionReview") {
            return Err(bad("kind must be ConversionReview"));
        }
        let request = review
            .get("request")
            .filter(|r| r.is_object())
            .ok_or_else(|| bad("missing parameters: request"))?;
        let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default();
        let uid = text("uid").to_string();
        if uid.is_empty() {
            return Err(bad("request.uid is empty"));
        }
        let desired_api_version = text("desiredAPIVersion").to_string();
        if desired_api_version.is_empty() {
            return Err(bad("request.desiredAPIVersion is empty"));
        }
        let objects = match request.get("objects") {
            Some(Value::Array(items)) => items.clone(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Err(bad("request.objects must be an array")),
        };
        Ok(Self {
            api_version: review
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("apiextensions.k8s.io/v1")
                .to_string(),
            uid,
            desired_api_version,
            objects,
        })
    }

    /// The review a hook gets for one step: the same uid, `desiredAPIVersion` of the step and the
    /// objects to convert in it.
    pub fn step_review(&self, to_version: &str, objects: &[Value]) -> Value {
        json!({
            "apiVersion": self.api_version,
            "kind": "ConversionReview",
            "request": {
                "uid": self.uid,
                "desiredAPIVersion": to_version,
                "objects": objects,
            },
        })
    }

    /// The review sent back: the converted objects, or a failure with its message.
    pub fn reply(&self, outcome: ConversionResponse) -> Value {
        let response = match outcome {
            ConversionResponse::Converted(objects) => json!({
                "uid": self.uid,
                "convertedObjects": objects,
                "result": {"status": "Success"},
            }),
            ConversionResponse::Failed(message) => json!({
                "uid": self.uid,
                "convertedObjects": [],
                "result": {"status": "Failure", "message": message},
            }),
        };
        json!({
            "apiVersion": self.api_version,
            "kind": "ConversionReview",
            "response": response,
        })
    }
}

/// What a hook answered in `$CONVERSION_RESPONSE_PATH`.
#[derive(Debug, Clone, PartialEq)]
pub enum ConversionResponse {
    Converted(Vec<Value>),
    Failed(String),
}

impl ConversionResponse {
    /// Parses the response file: `{"failedMessage": "..."}` or `{"convertedObjects": [...]}`.
    /// The converted objects must be as many as `expected` and all of `to_version` (exactly, or
    /// the same version of any group when `to_version` has no group).
    pub fn parse(bytes: &[u8], expected: usize, to_version: &str) -> Result<Self, WebhookError> {
        const FILE: &str = "$CONVERSION_RESPONSE_PATH";
        let map = read_object(bytes, FILE)?;
        match map.get("failedMessage") {
            None | Some(Value::Null) => {}
            Some(Value::String(m)) if m.is_empty() => {}
            Some(Value::String(m)) => return Ok(Self::Failed(m.clone())),
            Some(_) => {
                return Err(WebhookError::BadResponseField {
                    file: FILE,
                    key: "failedMessage",
                    expected: "a string",
                });
            }
        }
        let objects = match map.get("convertedObjects") {
            Some(Value::Array(items)) => items.clone(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => {
                return Err(WebhookError::BadResponseField {
                    file: FILE,
                    key: "convertedObjects",
                    expected: "an array of objects",
                });
            }
        };
        if objects.len() != expected {
            return Err(WebhookError::BadConversion {
                message: format!("{} converted objects for {expected} objects", objects.len()),
            });
        }
        for (i, o) in objects.iter().enumerate() {
            let version = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            if !super::chain::versions_match(version, to_version) {
                return Err(WebhookError::BadConversion {
                    message: format!(
                        "convertedObjects[{i}] has apiVersion '{version}', expected '{to_version}'"
                    ),
                });
            }
        }
        Ok(Self::Converted(objects))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ConversionRequest {
        ConversionRequest::parse(&json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": "42f90c87-87f5-4686-8109-eba065c7fa6e",
                "desiredAPIVersion": "stable.example.com/v1beta1",
                "objects": [{"apiVersion": "unstable.crontab.io/v1beta1", "kind": "CronTab"}]
            }
        }))
        .unwrap()
    }

    #[test]
    fn the_documented_review_is_read() {
        let r = request();
        assert_eq!(r.uid, "42f90c87-87f5-4686-8109-eba065c7fa6e");
        assert_eq!(r.desired_api_version, "stable.example.com/v1beta1");
        assert_eq!(r.objects.len(), 1);
    }

    #[test]
    fn a_review_without_a_desired_version_is_rejected() {
        let err = ConversionRequest::parse(&json!({
            "kind": "ConversionReview",
            "request": {"uid": "u", "objects": []}
        }))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad review: request.desiredAPIVersion is empty"
        );
    }

    #[test]
    fn converted_objects_of_the_target_version_are_accepted() {
        let body = br#"{"convertedObjects": [{"apiVersion": "stable.example.com/v1beta1", "kind": "CronTab"}]}"#;
        let r = ConversionResponse::parse(body, 1, "stable.example.com/v1beta1").unwrap();
        assert!(matches!(r, ConversionResponse::Converted(ref o) if o.len() == 1));
        let bare = ConversionResponse::parse(body, 1, "v1beta1").unwrap();
        assert_eq!(r, bare);
    }

    #[test]
    fn a_failed_message_is_a_failure_whatever_the_objects() {
        let body = br#"{"failedMessage": "Conversion of crontabs.stable.example.com is failed"}"#;
        assert_eq!(
            ConversionResponse::parse(body, 3, "v1").unwrap(),
            ConversionResponse::Failed(
                "Conversion of crontabs.stable.example.com is failed".into()
            )
        );
    }

    #[test]
    fn wrong_counts_and_versions_and_garbage_are_errors() {
        let two = br#"{"convertedObjects": [{"apiVersion": "a/v1"}, {"apiVersion": "a/v1"}]}"#;
        assert_eq!(
            ConversionResponse::parse(two, 1, "a/v1")
                .unwrap_err()
                .to_string(),
            "conversion: 2 converted objects for 1 objects"
        );
        let old = br#"{"convertedObjects": [{"apiVersion": "a/v1alpha1"}]}"#;
        assert_eq!(
            ConversionResponse::parse(old, 1, "a/v1")
                .unwrap_err()
                .to_string(),
            "conversion: convertedObjects[0] has apiVersion 'a/v1alpha1', expected 'a/v1'"
        );
        assert_eq!(
            ConversionResponse::parse(b"", 1, "a/v1")
                .unwrap_err()
                .to_string(),
            "$CONVERSION_RESPONSE_PATH is empty"
        );
    }

    #[test]
    fn the_reply_echoes_the_uid_and_carries_the_result() {
        let r = request();
        let ok = r.reply(ConversionResponse::Converted(vec![
            json!({"apiVersion": "stable.example.com/v1beta1"}),
        ]));
        assert_eq!(ok["response"]["uid"], r.uid.as_str());
        assert_eq!(ok["response"]["result"]["status"], "Success");
        assert_eq!(ok["kind"], "ConversionReview");
        let failed = r.reply(ConversionResponse::Failed("no way".into()));
        assert_eq!(
            failed["response"]["result"],
            json!({"status": "Failure", "message": "no way"})
        );
        let step = r.step_review("stable.example.com/v1", &[json!({"a": 1})]);
        assert_eq!(
            step["request"]["desiredAPIVersion"],
            "stable.example.com/v1"
        );
        assert_eq!(step["request"]["uid"], r.uid.as_str());
    }
}
