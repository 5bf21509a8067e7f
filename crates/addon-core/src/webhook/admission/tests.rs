//! Tests of AdmissionReview reading, response files and replies, against shell-operator's documented JSON.

use base64::Engine as _;
use serde_json::json;

use super::*;

fn review() -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
            "resource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
            "name": "my-crontab",
            "namespace": "my-namespace",
            "operation": "CREATE",
            "object": {"apiVersion": "stable.example.com/v1", "kind": "CronTab"},
            "dryRun": false
        }
    })
}

#[test]
fn the_documented_request_is_read() {
    let r = AdmissionRequest::parse(&review()).unwrap();
    assert_eq!(r.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(r.api_version, "admission.k8s.io/v1");
    assert_eq!(r.operation, "CREATE");
    assert_eq!(r.kind, "CronTab");
    assert_eq!(
        (r.namespace.as_str(), r.name.as_str()),
        ("my-namespace", "my-crontab")
    );
}

#[test]
fn a_review_without_a_request_is_rejected_as_shell_operator_does() {
    let err = AdmissionRequest::parse(&json!({"kind": "AdmissionReview"})).unwrap_err();
    assert_eq!(err.to_string(), "bad review: missing parameters: request");
    let err = AdmissionRequest::parse(&json!({"kind": "Pod", "request": {}})).unwrap_err();
    assert_eq!(err.to_string(), "bad review: kind must be AdmissionReview");
}

#[test]
fn shell_operators_response_files_parse() {
    let allow = AdmissionResponse::parse(br#"{"allowed":true}"#).unwrap();
    assert!(allow.allowed && allow.message.is_empty() && allow.patch.is_none());
    let warn =
        AdmissionResponse::parse(br#"{"allowed":true, "warnings": ["Warning 1", "Warning 2"]}"#)
            .unwrap();
    assert_eq!(warn.warnings, vec!["Warning 1", "Warning 2"]);
    let deny = AdmissionResponse::parse(br#"{"allowed":false,"message": "Denied"}"#).unwrap();
    assert!(!deny.allowed);
    assert_eq!(deny.message, "Denied");
    let quiet = AdmissionResponse::parse(br#"{"allowed":false}"#).unwrap();
    assert!(!quiet.allowed && quiet.message.is_empty());
}

#[test]
fn a_base64_patch_as_in_example_206_and_a_plain_array_both_parse() {
    let ops = r#"[{"op": "add", "path": "/spec/replicas", "value": 333 }]"#;
    let encoded = base64::engine::general_purpose::STANDARD.encode(ops);
    let body = format!(r#"{{"allowed":true, "patch": "{encoded}"}}"#);
    let from_base64 = AdmissionResponse::parse(body.as_bytes()).unwrap();
    let body = format!(r#"{{"allowed":true, "patch": {ops}}}"#);
    let from_array = AdmissionResponse::parse(body.as_bytes()).unwrap();
    assert_eq!(from_base64.patch, Some(serde_json::from_str(ops).unwrap()));
    assert_eq!(from_base64, from_array);
}

#[test]
fn garbage_gives_errors_that_say_what_is_wrong() {
    let cases: [(&[u8], &str); 6] = [
        (b"", "$VALIDATING_RESPONSE_PATH is empty"),
        (b"  \n", "$VALIDATING_RESPONSE_PATH is empty"),
        (
            b"[1]",
            "$VALIDATING_RESPONSE_PATH must be a JSON object, got an array",
        ),
        (
            br#"{"allowed": "yes"}"#,
            "$VALIDATING_RESPONSE_PATH: 'allowed' must be a boolean",
        ),
        (
            br#"{"allowed": true, "patch": "!!!"}"#,
            "patch in $VALIDATING_RESPONSE_PATH is not base64: Invalid symbol 33, offset 0.",
        ),
        (
            br#"{"allowed": true, "patch": [{"op": "jump"}]}"#,
            "patch in $VALIDATING_RESPONSE_PATH is not a JSON patch: unknown variant `jump`, expected one of `add`, `remove`, `replace`, `move`, `copy`, `test`",
        ),
    ];
    for (body, message) in cases {
        let err = AdmissionResponse::parse(body).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    let not_json = AdmissionResponse::parse(b"allowed: true").unwrap_err();
    assert!(
        not_json
            .to_string()
            .starts_with("$VALIDATING_RESPONSE_PATH not JSON:"),
        "{not_json}"
    );
}

#[test]
fn a_too_large_file_is_refused_before_parsing() {
    let big = vec![b' '; MAX_RESPONSE_BYTES + 1];
    assert!(matches!(
        AdmissionResponse::parse(&big),
        Err(WebhookError::ResponseTooLarge { .. })
    ));
}

#[test]
fn a_denial_reply_carries_403_and_the_message() {
    let request = AdmissionRequest::parse(&review()).unwrap();
    let reply = AdmissionResponse::deny("You cannot do this because it is Tuesday")
        .to_review(&request, AdmissionKind::Validating);
    assert_eq!(
        reply,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "allowed": false,
                "status": {"code": 403, "message": "You cannot do this because it is Tuesday"}
            }
        })
    );
}

#[test]
fn only_a_mutating_reply_carries_the_patch() {
    let request = AdmissionRequest::parse(&review()).unwrap();
    let response = AdmissionResponse::parse(
        br#"{"allowed": true, "warnings": ["w"], "patch": [{"op": "add", "path": "/spec/replicas", "value": 333}]}"#,
    )
    .unwrap();
    let mutating = response.to_review(&request, AdmissionKind::Mutating);
    assert_eq!(mutating["response"]["patchType"], "JSONPatch");
    let encoded = mutating["response"]["patch"].as_str().unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&decoded).unwrap(),
        json!([{"op": "add", "path": "/spec/replicas", "value": 333}])
    );
    assert_eq!(mutating["response"]["warnings"], json!(["w"]));
    let validating = response.to_review(&request, AdmissionKind::Validating);
    assert!(validating["response"].get("patch").is_none());
    assert!(validating["response"].get("status").is_none());
}
