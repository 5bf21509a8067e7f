//! CRD conversion webhooks: a custom resource of a CRD with `spec.conversion.strategy: Webhook` is stored in the CRD's storage version; objects that cross versions go through the webhook as a `ConversionReview` (apiextensions.k8s.io/v1), as kube-apiserver does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::admission::post_review;
use crate::app::App;
use crate::request::ResourceRequest;
use crate::resources::ResKey;
use crate::status::ApiError;

/// How long a conversion webhook may take (kube-apiserver's fixed 30 s).
const CONVERSION_TIMEOUT: Duration = Duration::from_secs(30);

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// How a request in a version other than the storage version is converted.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// `apiVersion` of stored objects (`group/version`).
    pub storage: String,
    /// The storage version alone (`v1`).
    pub storage_version: String,
    /// `apiVersion` the client asked for.
    pub requested: String,
    kind: String,
    client_config: Value,
}

/// The conversion `req` needs: its resource's CRD converts by webhook and `req` names another
/// version than the storage one.
pub fn for_request(app: &App, req: &ResourceRequest) -> Option<Conversion> {
    if req.info.group.is_empty() {
        return None;
    }
    let crd_name = format!("{}.{}", req.info.plural, req.info.group);
    let crd = app.store.get(&ResKey::crds(), "", &crd_name)?;
    let spec = &crd["spec"];
    if spec["conversion"]["strategy"] != "Webhook" {
        return None;
    }
    let storage_version = spec["versions"]
        .as_array()?
        .iter()
        .find(|v| v["storage"] == true)?["name"]
        .as_str()?
        .to_string();
    if storage_version == req.version {
        return None;
    }
    Some(Conversion {
        storage: req.info.api_version(&storage_version),
        storage_version,
        requested: req.info.api_version(&req.version),
        kind: req.info.kind.clone(),
        client_config: spec["conversion"]["webhook"]["clientConfig"].clone(),
    })
}

impl Conversion {
    /// The objects in the storage version.
    pub async fn to_storage(&self, app: &App, objects: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        self.convert(app, objects, &self.storage).await
    }

    /// The objects in the version the client asked for.
    pub async fn to_requested(
        &self,
        app: &App,
        objects: Vec<Value>,
    ) -> Result<Vec<Value>, ApiError> {
        self.convert(app, objects, &self.requested).await
    }

    /// One object in the storage version.
    pub async fn one_to_storage(&self, app: &App, object: Value) -> Result<Value, ApiError> {
        single(self.to_storage(app, vec![object]).await?)
    }

    /// One object in the version the client asked for.
    pub async fn one_to_requested(&self, app: &App, object: Value) -> Result<Value, ApiError> {
        single(self.to_requested(app, vec![object]).await?)
    }

    /// Sends the objects not yet of `desired` through the webhook; the order is kept.
    async fn convert(
        &self,
        app: &App,
        mut objects: Vec<Value>,
        desired: &str,
    ) -> Result<Vec<Value>, ApiError> {
        let positions: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i]["apiVersion"] != desired)
            .collect();
        if positions.is_empty() {
            return Ok(objects);
        }
        let sent: Vec<Value> = positions.iter().map(|&i| objects[i].clone()).collect();
        let from = sent[0]["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let fail = |why: String| {
            ApiError::Internal(format!(
                "conversion webhook for {from}, Kind={} failed: {why}",
                self.kind
            ))
        };
        let review = review(desired, sent);
        let response = post_review(app, &self.client_config, &review, CONVERSION_TIMEOUT)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let converted = converted_objects(&response, positions.len(), desired)
            .map_err(|e| fail(e.to_string()))?;
        for (slot, object) in positions.into_iter().zip(converted) {
            objects[slot] = object;
        }
        Ok(objects)
    }
}

fn single(mut objects: Vec<Value>) -> Result<Value, ApiError> {
    objects
        .pop()
        .ok_or_else(|| ApiError::Internal("conversion returned no object".into()))
}

fn review(desired: &str, objects: Vec<Value>) -> Value {
    let uid = format!(
        "kube-emulator-conversion-{}",
        NEXT_UID.fetch_add(1, Ordering::Relaxed)
    );
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    })
}

/// A conversion answer that does not convert: a failure, or objects not as asked.
#[derive(Debug, thiserror::Error)]
enum AnswerError {
    #[error("{message}")]
    Failed { message: String },
    #[error("the response has no convertedObjects")]
    NoObjects,
    #[error("expected {expected} converted objects, got {got}")]
    Count { expected: usize, got: usize },
    #[error("converted object has apiVersion {got}, expected {expected}")]
    Version { got: Value, expected: String },
}

/// The answer's `convertedObjects`, checked: a `Success` result, as many objects as sent, each of
/// the desired version.
fn converted_objects(
    response: &Value,
    count: usize,
    desired: &str,
) -> Result<Vec<Value>, AnswerError> {
    let result = &response["result"];
    if result["status"] != "Success" {
        let message = result["message"].as_str().unwrap_or("no Success result");
        return Err(AnswerError::Failed {
            message: message.to_string(),
        });
    }
    let objects = response["convertedObjects"]
        .as_array()
        .ok_or(AnswerError::NoObjects)?;
    if objects.len() != count {
        return Err(AnswerError::Count {
            expected: count,
            got: objects.len(),
        });
    }
    if let Some(bad) = objects.iter().find(|o| o["apiVersion"] != desired) {
        return Err(AnswerError::Version {
            got: bad["apiVersion"].clone(),
            expected: desired.to_string(),
        });
    }
    Ok(objects.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_successful_answer_gives_its_objects_in_order() {
        let response = json!({"uid": "u", "result": {"status": "Success"},
            "convertedObjects": [{"apiVersion": "g/v1", "n": 1}, {"apiVersion": "g/v1", "n": 2}]});
        let objects = converted_objects(&response, 2, "g/v1").unwrap();
        assert_eq!(objects[1]["n"], 2);
    }

    #[test]
    fn a_failed_short_or_wrongly_versioned_answer_is_an_error() {
        let failed = json!({"result": {"status": "Failure", "message": "no way"}});
        assert_eq!(
            converted_objects(&failed, 1, "g/v1")
                .unwrap_err()
                .to_string(),
            "no way"
        );
        let short = json!({"result": {"status": "Success"}, "convertedObjects": []});
        assert!(converted_objects(&short, 1, "g/v1").is_err());
        let wrong =
            json!({"result": {"status": "Success"}, "convertedObjects": [{"apiVersion": "g/v2"}]});
        assert!(converted_objects(&wrong, 1, "g/v1").is_err());
    }

    #[test]
    fn the_review_asks_for_the_desired_version() {
        let review = review("g/v1", vec![json!({"apiVersion": "g/v1alpha1"})]);
        assert_eq!(review["kind"], "ConversionReview");
        assert_eq!(review["request"]["desiredAPIVersion"], "g/v1");
        assert_eq!(review["request"]["objects"][0]["apiVersion"], "g/v1alpha1");
    }
}
