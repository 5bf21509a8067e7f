//! Label and field selectors as the list and watch query parameters spell them.

use serde_json::Value;

use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// One parsed label requirement.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    /// An operator the API does not know: never holds.
    Never,
}

/// A parsed `labelSelector` (all requirements must hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (f,g),h notin (i),j,!k`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        split_top_level(text)
            .into_iter()
            .map(|part| parse_requirement(part.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    /// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`), as webhooks'
    /// `objectSelector` and `namespaceSelector` spell it; absent parts select everything.
    pub fn from_object(selector: &Value) -> Self {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let labels = (selector["matchLabels"].as_object().into_iter().flatten())
            .map(|(k, v)| Requirement::Equals(k.clone(), text(v)));
        let expressions = (selector["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten())
        .map(|e| {
            let key = text(&e["key"]);
            let values = || {
                e["values"]
                    .as_array()
                    .map_or_else(Vec::new, |vs| vs.iter().map(text).collect())
            };
            match e["operator"].as_str() {
                Some("In") => Requirement::In(key, values()),
                Some("NotIn") => Requirement::NotIn(key, values()),
                Some("Exists") => Requirement::Exists(key),
                Some("DoesNotExist") => Requirement::NotExists(key),
                _ => Requirement::Never,
            }
        });
        Self(labels.chain(expressions).collect())
    }

    /// Whether it selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        self.matches_labels(object.pointer("/metadata/labels"))
    }

    /// Whether `labels` (an object's `metadata.labels`) satisfy every requirement.
    pub fn matches_labels(&self, labels: Option<&Value>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|req| match req {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::Never => false,
        })
    }
}

/// Splits on commas that are not inside parentheses, dropping empty parts.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

fn parse_requirement(part: &str) -> Result<Requirement, ApiError> {
    let invalid = || ApiError::BadRequest(format!("unable to parse requirement: {part:?}"));
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::NotExists(key.trim().to_string()));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(k.trim().into(), v.trim().into()));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Requirement::Equals(k.trim().into(), v.trim().into()));
    }
    for (word, negate) in [(" notin ", true), (" in ", false)] {
        if let Some((k, set)) = part.split_once(word) {
            let set = set
                .trim()
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'));
            let values: Vec<String> = set
                .ok_or_else(invalid)?
                .split(',')
                .map(|v| v.trim().to_string())
                .collect();
            let key = k.trim().to_string();
            return Ok(if negate {
                Requirement::NotIn(key, values)
            } else {
                Requirement::In(key, values)
            });
        }
    }
    if part.contains(|c: char| c.is_whitespace() || c == '(' || c == ')') {
        return Err(invalid());
    }
    Ok(Requirement::Exists(part.to_string()))
}

/// A parsed `fieldSelector`: `path=value` and `path!=value` terms on dotted field paths.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (path, equal, value) = if let Some((p, v)) = part.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (p, true, v)
            } else {
                return Err(ApiError::BadRequest(format!(
                    "invalid field selector: {part:?}"
                )));
            };
            terms.push((path.trim().to_string(), equal, value.trim().to_string()));
        }
        Ok(Self(terms))
    }

    /// Whether it selects everything (no term).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `400 BadRequest` for the first term on a field `info`'s kind cannot be selected by.
    pub fn check_supported(&self, info: &ResourceInfo) -> Result<(), ApiError> {
        match self
            .0
            .iter()
            .find(|(path, ..)| !field_label_supported(info, path))
        {
            Some((path, ..)) => Err(ApiError::BadRequest(format!(
                "field label not supported: {path}"
            ))),
            None => Ok(()),
        }
    }

    /// Whether the object satisfies every term (missing fields read as empty strings).
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }
}

/// The field labels the API server lets a kind be selected by.
fn field_label_supported(info: &ResourceInfo, path: &str) -> bool {
    if matches!(path, "metadata.name" | "metadata.namespace") {
        return true;
    }
    let fields: &[&str] = match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("events.k8s.io", "events") => &[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        ],
        ("", "namespaces") => &["status.phase"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "secrets") => &["type"],
        ("", "services") => &["spec.clusterIP", "spec.type"],
        ("apps", "replicasets") => &["status.replicas"],
        ("batch", "jobs") => &["status.successful"],
        _ => &[],
    };
    fields.contains(&path) || info.selectable_fields.iter().any(|f| f == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_kinds_field_labels_select() {
        let reg = crate::resources::Registry::new(std::iter::empty());
        let secrets = reg.find("", "v1", "secrets").unwrap();
        let ok = FieldSelector::parse("type=Opaque,metadata.name!=a").unwrap();
        assert!(ok.check_supported(secrets).is_ok());
        let data = FieldSelector::parse("data.x=1").unwrap();
        assert_eq!(data.check_supported(secrets).unwrap_err().code(), 400);
    }

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}, "type": "Opaque"})
    }

    #[test]
    fn every_label_operator_is_understood() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        for (sel, want) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (db, web)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing,app=web,tier in (front)", true),
            ("missing notin (x)", true),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&o),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn a_webhooks_selector_object_selects_as_its_query_form_does() {
        let selector = json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "skip", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
            ]
        });
        let selector = LabelSelector::from_object(&selector);
        assert!(selector.matches(&obj(json!({"app": "web", "tier": "a"}))));
        assert!(!selector.matches(&obj(json!({"app": "web", "tier": "c"}))));
        assert!(!selector.matches(&obj(json!({"app": "web", "tier": "a", "skip": "1"}))));
        assert!(!selector.matches(&obj(json!({"app": "web", "tier": "a", "env": "prod"}))));
        assert!(LabelSelector::from_object(&Value::Null).matches(&obj(json!({}))));
        let unknown = json!({"matchExpressions": [{"key": "a", "operator": "Gt"}]});
        assert!(!LabelSelector::from_object(&unknown).matches(&obj(json!({"a": "1"}))));
    }

    #[test]
    fn field_selector_compares_dotted_paths() {
        let o = obj(json!({}));
        assert!(
            FieldSelector::parse("metadata.name=a,metadata.namespace!=x")
                .unwrap()
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("metadata.name==b")
                .unwrap()
                .matches(&o)
        );
        assert!(FieldSelector::parse("type=Opaque").unwrap().matches(&o));
        assert!(FieldSelector::parse("bogus").is_err());
    }
}
