//! `kubernetesValidating`, `kubernetesMutating` and `kubernetesCustomResourceConversion` bindings: parsing with shell-operator's schema and defaults into [`AdmissionBinding`] and [`ConversionBinding`].

use serde::Serialize;
use serde_json::Value;

use super::reader::{Obj, Problems, index};
use super::selector::{LabelSelector, read_label_selector};

/// `failurePolicy` when a binding does not set one (shell-operator's and Kubernetes' default).
pub const DEFAULT_FAILURE_POLICY: FailurePolicy = FailurePolicy::Fail;
/// `timeoutSeconds` when a binding does not set one.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 10;
/// The largest `timeoutSeconds` the API server accepts.
pub const MAX_TIMEOUT_SECONDS: u32 = 30;

/// Which admission webhook a binding defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum AdmissionKind {
    Validating,
    Mutating,
}

impl AdmissionKind {
    /// The config key (`kubernetesValidating` / `kubernetesMutating`).
    pub fn config_key(self) -> &'static str {
        match self {
            Self::Validating => "kubernetesValidating",
            Self::Mutating => "kubernetesMutating",
        }
    }

    /// The binding context `type` (`Validating` / `Mutating`).
    pub fn context_type(self) -> &'static str {
        match self {
            Self::Validating => "Validating",
            Self::Mutating => "Mutating",
        }
    }
}

/// What the API server does when the webhook cannot be reached or errs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

impl FailurePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "Fail",
            Self::Ignore => "Ignore",
        }
    }

    /// `Fail` or `Ignore`, as in the flag and the config.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "Fail" => Some(Self::Fail),
            "Ignore" => Some(Self::Ignore),
            _ => None,
        }
    }
}

/// `sideEffects` of an admission webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SideEffects {
    None,
    NoneOnDryRun,
}

/// One `rules` item (a `RuleWithOperations` of admissionregistration.k8s.io/v1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookRule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    /// `Cluster`, `Namespaced` or `*` (the API server's default when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// One `matchConditions` item (a CEL expression evaluated by the API server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatchCondition {
    pub name: String,
    pub expression: String,
}

/// One `kubernetesValidating` or `kubernetesMutating` item with every default applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionBinding {
    pub kind: AdmissionKind,
    /// The webhook name: a domain of at least three segments, unique in the configuration.
    pub name: String,
    pub rules: Vec<WebhookRule>,
    /// `None`: the operator's `--validating-webhook-failure-policy` applies.
    pub failure_policy: Option<FailurePolicy>,
    pub side_effects: SideEffects,
    pub timeout_seconds: u32,
    /// `labelSelector`: the webhook's `objectSelector`.
    pub object_selector: Option<LabelSelector>,
    /// `namespace.labelSelector`: the webhook's `namespaceSelector`.
    pub namespace_selector: Option<LabelSelector>,
    pub match_conditions: Vec<MatchCondition>,
    pub group: Option<String>,
    /// Kubernetes binding names whose snapshots the context carries, after adding the group's bindings.
    pub include_snapshots_from: Vec<String>,
}

impl AdmissionBinding {
    /// The URL path the webhook is served at: `/hooks/<name made URL-safe>`, as shell-operator.
    pub fn path(&self) -> String {
        format!(
            "/{ADMISSION_CONFIGURATION_ID}/{}",
            safe_url_segment(&self.name)
        )
    }
}

/// The first path segment of every admission webhook URL (shell-operator's `DefaultConfigurationId`).
pub const ADMISSION_CONFIGURATION_ID: &str = "hooks";

/// shell-operator's `SafeURLString`: an upper-case letter becomes `-` and its lower case, any
/// other character outside `[a-z0-9-/]` becomes `-`, runs of `-` become one.
pub fn safe_url_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let push = |c: char, out: &mut String| {
        if c == '-' && out.ends_with('-') {
            return;
        }
        out.push(c);
    };
    for c in text.chars() {
        if c.is_ascii_uppercase() {
            push('-', &mut out);
            push(c.to_ascii_lowercase(), &mut out);
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '/' || c == '-' {
            push(c, &mut out);
        } else {
            push('-', &mut out);
        }
    }
    out
}

/// One `conversions` item: a hook converts objects of `from_version` into `to_version`. A version
/// is `group/version` or a bare `version` that matches any group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionRule {
    pub from_version: String,
    pub to_version: String,
}

/// One `kubernetesCustomResourceConversion` item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionBinding {
    pub name: String,
    /// The CRD whose `spec.conversion` points at the operator (`crontabs.stable.example.com`).
    pub crd_name: String,
    pub conversions: Vec<ConversionRule>,
    pub group: Option<String>,
    pub include_snapshots_from: Vec<String>,
}

impl ConversionBinding {
    /// The URL path the CRD's conversion webhook is served at: `/<crdName>`, as shell-operator.
    pub fn path(&self) -> String {
        format!("/{}", self.crd_name)
    }
}

const ADMISSION_FIELDS: &[&str] = &[
    "name",
    "group",
    "includeSnapshotsFrom",
    "failurePolicy",
    "sideEffects",
    "timeoutSeconds",
    "matchConditions",
    "labelSelector",
    "namespace",
    "rules",
];

const RULE_FIELDS: &[&str] = &[
    "apiVersions",
    "apiGroups",
    "resources",
    "operations",
    "scope",
];

const OPERATIONS: &[&str] = &["CREATE", "UPDATE", "DELETE", "CONNECT", "*"];
const SCOPES: &[&str] = &["Cluster", "Namespaced", "*"];

/// Reads a `kubernetesValidating` or `kubernetesMutating` array.
pub(crate) fn read_admission(
    kind: AdmissionKind,
    items: &[Value],
    p: &mut Problems,
) -> Vec<AdmissionBinding> {
    let bindings: Vec<AdmissionBinding> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let obj = Obj::new(item, index(kind.config_key(), i), p)?;
            read_admission_item(kind, &obj, p)
        })
        .collect();
    for (i, b) in bindings.iter().enumerate() {
        if bindings[..i].iter().any(|other| other.name == b.name) {
            p.push(
                kind.config_key(),
                format!("webhook name '{}' is used twice", b.name),
            );
        }
    }
    bindings
}

fn read_admission_item(
    kind: AdmissionKind,
    obj: &Obj<'_>,
    p: &mut Problems,
) -> Option<AdmissionBinding> {
    let before = p.len();
    obj.reject_unknown(ADMISSION_FIELDS, p);
    let name = obj.required("name", |o, k, p| o.non_empty_string(k, p), p);
    if let Some(problem) = name.as_deref().and_then(fully_qualified_problem) {
        p.push(obj.path_of("name"), problem);
    }
    let rules = obj
        .required("rules", |o, k, p| o.array(k, 1, p), p)
        .map(|items| read_rules(&obj.path_of("rules"), items, p))
        .unwrap_or_default();
    let failure_policy = obj
        .string("failurePolicy", p)
        .and_then(|text| enum_value(obj, "failurePolicy", &text, FailurePolicy::parse, p));
    let side_effects = obj
        .string("sideEffects", p)
        .and_then(|text| enum_value(obj, "sideEffects", &text, parse_side_effects, p))
        .unwrap_or(SideEffects::None);
    let timeout_seconds = read_timeout(obj, p).unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    let object_selector = obj
        .object("labelSelector", p)
        .and_then(|o| read_label_selector(&o, p));
    let namespace_selector = obj.object("namespace", p).and_then(|ns| {
        ns.reject_unknown(&["labelSelector"], p);
        ns.required("labelSelector", |o, k, p| o.object(k, p), p)
            .and_then(|o| read_label_selector(&o, p))
    });
    let match_conditions = read_match_conditions(obj, p);
    let group = obj.optional_string("group", p);
    let include_snapshots_from = obj
        .string_list("includeSnapshotsFrom", 1, p)
        .unwrap_or_default();
    (p.len() == before).then(|| AdmissionBinding {
        kind,
        name: name.unwrap_or_default(),
        rules,
        failure_policy,
        side_effects,
        timeout_seconds,
        object_selector,
        namespace_selector,
        match_conditions,
        group,
        include_snapshots_from,
    })
}

fn parse_side_effects(text: &str) -> Option<SideEffects> {
    match text {
        "None" => Some(SideEffects::None),
        "NoneOnDryRun" => Some(SideEffects::NoneOnDryRun),
        _ => None,
    }
}

fn enum_value<T>(
    obj: &Obj<'_>,
    key: &str,
    text: &str,
    parse: impl Fn(&str) -> Option<T>,
    p: &mut Problems,
) -> Option<T> {
    let value = parse(text);
    if value.is_none() {
        let allowed = match key {
            "failurePolicy" => "Fail, Ignore",
            _ => "None, NoneOnDryRun",
        };
        p.push(
            obj.path_of(key),
            format!("unknown value '{text}' (allowed: {allowed})"),
        );
    }
    value
}

fn read_timeout(obj: &Obj<'_>, p: &mut Problems) -> Option<u32> {
    let n = obj.number("timeoutSeconds", p)?;
    if n.fract() != 0.0 || !(1.0..=f64::from(MAX_TIMEOUT_SECONDS)).contains(&n) {
        p.push(
            obj.path_of("timeoutSeconds"),
            format!("must be a whole number of seconds from 1 to {MAX_TIMEOUT_SECONDS}, got {n}"),
        );
        return None;
    }
    Some(n as u32)
}

fn read_rules(path: &str, items: &[Value], p: &mut Problems) -> Vec<WebhookRule> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let obj = Obj::new(item, index(path, i), p)?;
            read_rule(&obj, p)
        })
        .collect()
}

fn read_rule(obj: &Obj<'_>, p: &mut Problems) -> Option<WebhookRule> {
    let before = p.len();
    obj.reject_unknown(RULE_FIELDS, p);
    let list = |key: &str, p: &mut Problems| {
        obj.required(key, |o, k, p| o.string_list(k, 1, p), p)
            .unwrap_or_default()
    };
    let operations = list("operations", p);
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            p.push(
                index(&obj.path_of("operations"), i),
                format!(
                    "unknown operation '{op}' (allowed: {})",
                    OPERATIONS.join(", ")
                ),
            );
        }
    }
    let api_groups = list("apiGroups", p);
    let api_versions = list("apiVersions", p);
    let resources = list("resources", p);
    let scope = obj.string("scope", p);
    if let Some(scope) = scope.as_deref().filter(|s| !SCOPES.contains(s)) {
        p.push(
            obj.path_of("scope"),
            format!("unknown scope '{scope}' (allowed: {})", SCOPES.join(", ")),
        );
    }
    (p.len() == before).then_some(WebhookRule {
        operations,
        api_groups,
        api_versions,
        resources,
        scope,
    })
}

fn read_match_conditions(obj: &Obj<'_>, p: &mut Problems) -> Vec<MatchCondition> {
    let Some(items) = obj.array("matchConditions", 0, p) else {
        return Vec::new();
    };
    let path = obj.path_of("matchConditions");
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let c = Obj::new(item, index(&path, i), p)?;
            c.reject_unknown(&["name", "expression"], p);
            let name = c.required("name", |o, k, p| o.non_empty_string(k, p), p);
            let expression = c.required("expression", |o, k, p| o.non_empty_string(k, p), p);
            Some(MatchCondition {
                name: name?,
                expression: expression?,
            })
        })
        .collect()
}

/// Why `name` is not a fully qualified webhook name (a DNS-1123 subdomain with at least three
/// segments), as the API server checks it.
fn fully_qualified_problem(name: &str) -> Option<String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Some(format!(
            "'{name}' is not a DNS-1123 subdomain (lower case letters, digits, '-' and '.')"
        ));
    }
    if name.split('.').count() < 3 {
        return Some(format!(
            "'{name}' should be a domain with at least three segments separated by dots"
        ));
    }
    None
}

/// Reads the `kubernetesCustomResourceConversion` array.
pub(crate) fn read_conversion(items: &[Value], p: &mut Problems) -> Vec<ConversionBinding> {
    const KEY: &str = "kubernetesCustomResourceConversion";
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let obj = Obj::new(item, index(KEY, i), p)?;
            read_conversion_item(&obj, p)
        })
        .collect()
}

fn read_conversion_item(obj: &Obj<'_>, p: &mut Problems) -> Option<ConversionBinding> {
    let before = p.len();
    obj.reject_unknown(
        &[
            "name",
            "group",
            "includeSnapshotsFrom",
            "crdName",
            "conversions",
        ],
        p,
    );
    let name = obj.required("name", |o, k, p| o.non_empty_string(k, p), p);
    let crd_name = obj.required("crdName", |o, k, p| o.non_empty_string(k, p), p);
    if let Some(crd) = crd_name.as_deref().filter(|n| n.split('.').count() < 3) {
        p.push(
            obj.path_of("crdName"),
            format!(
                "'{crd}' is not a CRD name (<plural>.<group>, e.g. crontabs.stable.example.com)"
            ),
        );
    }
    let conversions = obj
        .required("conversions", |o, k, p| o.array(k, 1, p), p)
        .map(|items| read_conversion_rules(&obj.path_of("conversions"), items, p))
        .unwrap_or_default();
    let group = obj.optional_string("group", p);
    let include_snapshots_from = obj
        .string_list("includeSnapshotsFrom", 1, p)
        .unwrap_or_default();
    (p.len() == before).then(|| ConversionBinding {
        name: name.unwrap_or_default(),
        crd_name: crd_name.unwrap_or_default(),
        conversions,
        group,
        include_snapshots_from,
    })
}

fn read_conversion_rules(path: &str, items: &[Value], p: &mut Problems) -> Vec<ConversionRule> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let obj = Obj::new(item, index(path, i), p)?;
            obj.reject_unknown(&["fromVersion", "toVersion"], p);
            let from = obj.required("fromVersion", |o, k, p| o.non_empty_string(k, p), p);
            let to = obj.required("toVersion", |o, k, p| o.non_empty_string(k, p), p);
            Some(ConversionRule {
                from_version: from?,
                to_version: to?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook_config::{HookConfig, HookScope, parse};
    use crate::names::HookName;

    fn config(doc: &str) -> HookConfig {
        parse(
            &HookName::new("hooks/webhooks.sh").unwrap(),
            HookScope::Module,
            doc,
        )
        .unwrap()
    }

    fn error(doc: &str) -> String {
        parse(
            &HookName::new("hooks/webhooks.sh").unwrap(),
            HookScope::Global,
            doc,
        )
        .unwrap_err()
        .to_string()
    }

    /// The syntax block of shell-operator's BINDING_VALIDATING.md.
    const DOCUMENTED_VALIDATING: &str = r#"
configVersion: v1
onStartup: 10
kubernetes:
- name: myCrdObjects
  kind: CronTab
  group: g
kubernetesValidating:
- name: my-crd-validator.example.com
  includeSnapshotsFrom: ["myCrdObjects"]
  group: "g"
  labelSelector:
    matchLabels:
      label1: value1
  namespace:
    labelSelector:
      matchLabels:
        label1: value1
      matchExpressions:
      - key: environment
        operator: In
        values: ["prod","staging"]
  rules:
  - apiVersions:
    - v1
    apiGroups:
    - stable.example.com
    resources:
    - CronTab
    operations:
    - "*"
  - operations: ["CREATE", "UPDATE"]
    apiGroups: ["apps"]
    apiVersions: ["v1", "v1beta1"]
    resources: ["deployments", "replicasets"]
    scope: "Namespaced"
  failurePolicy: Ignore
  sideEffects: NoneOnDryRun
  timeoutSeconds: 2
  matchConditions:
  - name: "exclude-user"
    expression: '("system:apiserver" != request.userInfo.username)'
"#;

    #[test]
    fn the_documented_validating_binding_parses_with_every_field() {
        let c = config(DOCUMENTED_VALIDATING);
        let v = &c.validating[0];
        assert_eq!(v.kind, AdmissionKind::Validating);
        assert_eq!(v.name, "my-crd-validator.example.com");
        assert_eq!(v.rules.len(), 2);
        assert_eq!(v.rules[0].operations, vec!["*"]);
        assert_eq!(v.rules[0].scope, None);
        assert_eq!(v.rules[1].scope.as_deref(), Some("Namespaced"));
        assert_eq!(v.failure_policy, Some(FailurePolicy::Ignore));
        assert_eq!(v.side_effects, SideEffects::NoneOnDryRun);
        assert_eq!(v.timeout_seconds, 2);
        assert_eq!(
            v.object_selector.as_ref().unwrap().match_labels["label1"],
            "value1"
        );
        assert_eq!(
            v.namespace_selector
                .as_ref()
                .unwrap()
                .match_expressions
                .len(),
            1
        );
        assert_eq!(v.match_conditions[0].name, "exclude-user");
        assert_eq!(v.include_snapshots_from, vec!["myCrdObjects"]);
        assert_eq!(v.path(), "/hooks/my-crd-validator-example-com");
        assert!(c.has_webhooks());
    }

    #[test]
    fn admission_defaults_are_shell_operators() {
        let c = config(
            "configVersion: v1\nkubernetesMutating:\n- name: change.crontab.resources\n  rules:\n  - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [crontabs]}\n",
        );
        let m = &c.mutating[0];
        assert_eq!(m.kind, AdmissionKind::Mutating);
        assert_eq!(m.failure_policy, None);
        assert_eq!(m.side_effects, SideEffects::None);
        assert_eq!(m.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
        assert!(m.object_selector.is_none() && m.namespace_selector.is_none());
        assert!(c.validating.is_empty());
        assert_eq!(
            c.binding_summary(),
            vec!["kubernetesMutating: change.crontab.resources (/hooks/change-crontab-resources)"]
        );
    }

    #[test]
    fn the_documented_conversion_binding_parses() {
        let c = config(
            r#"
configVersion: v1
kubernetesCustomResourceConversion:
- name: conversions
  crdName: crontabs.stable.example.com
  conversions:
  - fromVersion: unstable.crontab.io/v1beta1
    toVersion: stable.example.com/v1beta1
  - fromVersion: v1beta2
    toVersion: v1
"#,
        );
        let b = &c.conversions[0];
        assert_eq!(b.crd_name, "crontabs.stable.example.com");
        assert_eq!(b.path(), "/crontabs.stable.example.com");
        assert_eq!(b.conversions[1].from_version, "v1beta2");
        assert_eq!(
            c.binding_summary(),
            vec![
                "kubernetesCustomResourceConversion: conversions (crontabs.stable.example.com: unstable.crontab.io/v1beta1 -> stable.example.com/v1beta1, v1beta2 -> v1)"
            ]
        );
    }

    #[test]
    fn a_group_adds_its_snapshots_to_admission_bindings() {
        let c = config(
            "configVersion: v1\nkubernetes:\n- {name: a, kind: Pod, group: g}\n- {name: b, kind: Pod, group: g}\nkubernetesValidating:\n- name: x.example.com\n  group: g\n  rules: [{apiGroups: [''], apiVersions: [v1], operations: ['*'], resources: [pods]}]\n",
        );
        assert_eq!(c.validating[0].include_snapshots_from, vec!["a", "b"]);
    }

    #[test]
    fn invalid_admission_bindings_name_the_field() {
        let rule = "{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}";
        let cases = [
            (
                format!("kubernetesValidating:\n- name: short.name\n  rules: [{rule}]"),
                "kubernetesValidating[0].name: 'short.name' should be a domain with at least three segments separated by dots",
            ),
            (
                "kubernetesValidating:\n- name: a.b.c".to_string(),
                "kubernetesValidating[0].rules: is required",
            ),
            (
                "kubernetesValidating:\n- name: a.b.c\n  rules: [{apiGroups: [''], apiVersions: [v1], operations: [PATCH], resources: [pods]}]".to_string(),
                "kubernetesValidating[0].rules[0].operations[0]: unknown operation 'PATCH' (allowed: CREATE, UPDATE, DELETE, CONNECT, *)",
            ),
            (
                format!("kubernetesMutating:\n- name: a.b.c\n  timeoutSeconds: 31\n  rules: [{rule}]"),
                "kubernetesMutating[0].timeoutSeconds: must be a whole number of seconds from 1 to 30, got 31",
            ),
            (
                format!("kubernetesMutating:\n- name: a.b.c\n  failurePolicy: Maybe\n  rules: [{rule}]"),
                "kubernetesMutating[0].failurePolicy: unknown value 'Maybe' (allowed: Fail, Ignore)",
            ),
            (
                format!("kubernetesValidating:\n- name: a.b.c\n  includeSnapshotsFrom: [nope]\n  rules: [{rule}]"),
                "kubernetesValidating[0].includeSnapshotsFrom: includeSnapshotsFrom is invalid: 'nope' binding name not found",
            ),
            (
                format!("kubernetesValidating:\n- name: a.b.c\n  objectSelector: {{}}\n  rules: [{rule}]"),
                "kubernetesValidating[0].objectSelector: unknown field (allowed: name, group, includeSnapshotsFrom, failurePolicy, sideEffects, timeoutSeconds, matchConditions, labelSelector, namespace, rules)",
            ),
            (
                format!("kubernetesValidating:\n- name: a.b.c\n  rules: [{rule}]\n- name: a.b.c\n  rules: [{rule}]"),
                "kubernetesValidating: webhook name 'a.b.c' is used twice",
            ),
            (
                "kubernetesCustomResourceConversion:\n- name: c\n  crdName: crontabs\n  conversions: [{fromVersion: v1, toVersion: v2}]".to_string(),
                "kubernetesCustomResourceConversion[0].crdName: 'crontabs' is not a CRD name (<plural>.<group>, e.g. crontabs.stable.example.com)",
            ),
            (
                "kubernetesCustomResourceConversion:\n- name: c\n  crdName: a.b.c\n  conversions: [{fromVersion: v1}]".to_string(),
                "kubernetesCustomResourceConversion[0].conversions[0].toVersion: is required",
            ),
        ];
        for (body, message) in cases {
            let err = error(&format!("configVersion: v1\n{body}\n"));
            assert_eq!(
                err,
                format!("hook 'hooks/webhooks.sh': {message}"),
                "{body}"
            );
        }
    }

    #[test]
    fn v0_documents_have_no_admission_bindings() {
        let err = error("kubernetesValidating:\n- name: a.b.c\n");
        assert_eq!(
            err,
            "hook 'hooks/webhooks.sh': kubernetesValidating: unknown binding type"
        );
    }

    #[test]
    fn url_segments_are_made_safe_as_shell_operator_does() {
        assert_eq!(
            safe_url_segment("my-crd-validator.example.com"),
            "my-crd-validator-example-com"
        );
        assert_eq!(safe_url_segment("ChangeCrontab..x"), "-change-crontab-x");
        assert_eq!(safe_url_segment("a/b c"), "a/b-c");
    }

    #[test]
    fn webhook_names_need_three_lower_case_segments() {
        assert_eq!(fully_qualified_problem("policy.example.com"), None);
        assert!(
            fully_qualified_problem("example.com")
                .unwrap()
                .contains("at least three segments")
        );
        assert!(
            fully_qualified_problem("Policy.example.com")
                .unwrap()
                .contains("DNS-1123")
        );
        assert!(fully_qualified_problem("a..b.c").is_some());
    }
}
