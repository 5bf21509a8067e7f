//! Hook configuration: parsing and validating a hook's `--config` output (v0 and v1) into bindings with every default applied.

mod crontab;
mod duration;
pub use duration::{DurationError, parse_go_duration};
mod error;
mod groups;
mod kept;
mod kubernetes;
mod reader;
mod schedule;
mod selector;
mod settings;
mod webhook;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

pub use crontab::{Crontab, CrontabError, UnixTime};
pub use error::{HookConfigError, HookConfigErrors};
pub use kubernetes::{
    DEFAULT_KUBERNETES_NAME, DEFAULT_V0_KUBERNETES_NAME, FilteredObject, KeptObject,
    KubernetesBinding, WatchEvent,
};
pub use schedule::{DEFAULT_SCHEDULE_NAME, ScheduleBinding};
pub use selector::{
    FieldOperator, FieldRequirement, FieldSelector, LabelError, LabelOperator, LabelRequirement,
    LabelSelector, NamespaceSelector,
};
pub use settings::HookSettings;
pub use webhook::{
    ADMISSION_CONFIGURATION_ID, AdmissionBinding, AdmissionKind, ConversionBinding, ConversionRule,
    DEFAULT_FAILURE_POLICY, DEFAULT_TIMEOUT_SECONDS, FailurePolicy, MAX_TIMEOUT_SECONDS,
    MatchCondition, SideEffects, WebhookRule, safe_url_segment,
};

use crate::names::HookName;
use reader::{Obj, Problems, type_name};

/// Whether a hook is a global hook or belongs to a module; decides which bindings it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HookScope {
    Global,
    Module,
}

/// The config format: v0 has no `configVersion` and uses `onKubernetesEvent`; v1 uses `kubernetes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ConfigVersion {
    #[serde(rename = "v0")]
    V0,
    #[serde(rename = "v1")]
    V1,
}

/// A binding type, spelled as in the config and in task descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum BindingType {
    OnStartup,
    Schedule,
    Kubernetes,
    BeforeAll,
    AfterAll,
    BeforeHelm,
    AfterHelm,
    BeforeDeleteHelm,
    AfterDeleteHelm,
    KubernetesValidating,
    KubernetesMutating,
    #[serde(rename = "kubernetesCustomResourceConversion")]
    KubernetesConversion,
}

impl BindingType {
    /// The bindings that take a plain ORDER number.
    pub const ORDERED: [BindingType; 7] = [
        Self::OnStartup,
        Self::BeforeAll,
        Self::AfterAll,
        Self::BeforeHelm,
        Self::AfterHelm,
        Self::BeforeDeleteHelm,
        Self::AfterDeleteHelm,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::OnStartup => "onStartup",
            Self::Schedule => "schedule",
            Self::Kubernetes => "kubernetes",
            Self::BeforeAll => "beforeAll",
            Self::AfterAll => "afterAll",
            Self::BeforeHelm => "beforeHelm",
            Self::AfterHelm => "afterHelm",
            Self::BeforeDeleteHelm => "beforeDeleteHelm",
            Self::AfterDeleteHelm => "afterDeleteHelm",
            Self::KubernetesValidating => "kubernetesValidating",
            Self::KubernetesMutating => "kubernetesMutating",
            Self::KubernetesConversion => "kubernetesCustomResourceConversion",
        }
    }

    /// The only scope this binding is allowed in, if it is restricted.
    pub fn only_in(self) -> Option<HookScope> {
        match self {
            Self::BeforeAll | Self::AfterAll => Some(HookScope::Global),
            Self::BeforeHelm | Self::AfterHelm | Self::BeforeDeleteHelm | Self::AfterDeleteHelm => {
                Some(HookScope::Module)
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for BindingType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed hook configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookConfig {
    pub version: ConfigVersion,
    /// ORDER of `onStartup`, `beforeAll`, ... bindings that are present.
    pub orders: BTreeMap<BindingType, f64>,
    pub schedules: Vec<ScheduleBinding>,
    pub kubernetes: Vec<KubernetesBinding>,
    pub settings: HookSettings,
    /// `kubernetesValidating` items (v1 only).
    pub validating: Vec<AdmissionBinding>,
    /// `kubernetesMutating` items (v1 only).
    pub mutating: Vec<AdmissionBinding>,
    /// `kubernetesCustomResourceConversion` items (v1 only).
    pub conversions: Vec<ConversionBinding>,
}

impl HookConfig {
    /// The ORDER of an ordered binding, if the hook has it.
    pub fn order(&self, binding: BindingType) -> Option<f64> {
        self.orders.get(&binding).copied()
    }

    /// Every binding type the hook has, in a fixed order.
    pub fn binding_types(&self) -> Vec<BindingType> {
        let mut types: Vec<BindingType> = self.orders.keys().copied().collect();
        if !self.schedules.is_empty() {
            types.push(BindingType::Schedule);
        }
        if !self.kubernetes.is_empty() {
            types.push(BindingType::Kubernetes);
        }
        if !self.validating.is_empty() {
            types.push(BindingType::KubernetesValidating);
        }
        if !self.mutating.is_empty() {
            types.push(BindingType::KubernetesMutating);
        }
        if !self.conversions.is_empty() {
            types.push(BindingType::KubernetesConversion);
        }
        types.sort();
        types
    }

    /// One line per binding, e.g. `onStartup: 10`, `schedule: every-minute (*/1 * * * *)`,
    /// `kubernetes: pods (Pod)`, `beforeHelm: 5`.
    pub fn binding_summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for t in self.binding_types() {
            match t {
                BindingType::Schedule => lines.extend(
                    self.schedules
                        .iter()
                        .map(|s| format!("schedule: {} ({})", s.name, s.crontab.source())),
                ),
                BindingType::Kubernetes => lines.extend(self.kubernetes.iter().map(|k| {
                    let v0 = if k.v0 { ", v0" } else { "" };
                    format!("kubernetes: {} ({}{v0})", k.name, k.kind)
                })),
                BindingType::KubernetesValidating | BindingType::KubernetesMutating => lines
                    .extend(
                        self.admission_bindings()
                            .filter(|a| a.kind == admission_kind(t))
                            .map(|a| format!("{t}: {} ({})", a.name, a.path())),
                    ),
                BindingType::KubernetesConversion => {
                    lines.extend(self.conversions.iter().map(|c| {
                        let rules: Vec<String> = c
                            .conversions
                            .iter()
                            .map(|r| format!("{} -> {}", r.from_version, r.to_version))
                            .collect();
                        format!("{t}: {} ({}: {})", c.name, c.crd_name, rules.join(", "))
                    }))
                }
                ordered => {
                    if let Some(order) = self.order(ordered) {
                        lines.push(format!("{ordered}: {}", format_order(order)));
                    }
                }
            }
        }
        lines
    }

    /// Every admission binding: validating ones first, then mutating ones.
    pub fn admission_bindings(&self) -> impl Iterator<Item = &AdmissionBinding> {
        self.validating.iter().chain(&self.mutating)
    }

    /// Whether the hook answers webhooks (admission or conversion).
    pub fn has_webhooks(&self) -> bool {
        !self.validating.is_empty() || !self.mutating.is_empty() || !self.conversions.is_empty()
    }

    /// The kubernetes binding called `name` (the first one if several share it).
    pub fn kubernetes_binding(&self, name: &str) -> Option<&KubernetesBinding> {
        self.kubernetes.iter().find(|k| k.name == name)
    }
}

fn admission_kind(binding: BindingType) -> AdmissionKind {
    match binding {
        BindingType::KubernetesMutating => AdmissionKind::Mutating,
        _ => AdmissionKind::Validating,
    }
}

/// `10` for 10.0, `0.5` for 0.5.
pub fn format_order(order: f64) -> String {
    if order.fract() == 0.0 && order.abs() < 1e15 {
        format!("{}", order as i64)
    } else {
        format!("{order}")
    }
}

const V1_ADMISSION_KEYS: [&str; 3] = [
    "kubernetesValidating",
    "kubernetesMutating",
    "kubernetesCustomResourceConversion",
];

/// Parses a hook's `--config` output (YAML or JSON).
pub fn parse(
    hook: &HookName,
    scope: HookScope,
    text: &str,
) -> Result<HookConfig, HookConfigErrors> {
    match crate::yaml::parse(text) {
        Ok(value) => parse_value(hook, scope, &value),
        Err(e) => Err(HookConfigErrors {
            errors: vec![HookConfigError::ReadOutput {
                hook: hook.clone(),
                message: e.message,
            }],
        }),
    }
}

/// Validates an already parsed `--config` document.
pub fn parse_value(
    hook: &HookName,
    scope: HookScope,
    value: &Value,
) -> Result<HookConfig, HookConfigErrors> {
    let mut p = Problems::default();
    let config = read_document(value, scope, &mut p);
    match config {
        Some(config) if p.items.is_empty() => Ok(config),
        _ => Err(HookConfigErrors {
            errors: p
                .items
                .into_iter()
                .map(|(path, message)| {
                    if path.is_empty() {
                        HookConfigError::ValidateDocument {
                            hook: hook.clone(),
                            message,
                        }
                    } else {
                        HookConfigError::ValidateField {
                            hook: hook.clone(),
                            path,
                            message,
                        }
                    }
                })
                .collect(),
        }),
    }
}

fn read_document(value: &Value, scope: HookScope, p: &mut Problems) -> Option<HookConfig> {
    let Value::Object(map) = value else {
        let what = if value.is_null() {
            "empty"
        } else {
            type_name(value)
        };
        p.push(
            "",
            format!("config must be an object with bindings, got {what}"),
        );
        return None;
    };
    let obj = Obj {
        path: String::new(),
        map,
    };
    let version = read_version(&obj, p)?;
    reject_unknown_top_level(&obj, version, p);
    let binding_keys = map.keys().filter(|k| k.as_str() != "configVersion").count();
    if binding_keys == 0 {
        p.push("", "config has no bindings");
    }
    let orders = read_orders(&obj, scope, p);
    let schedules = obj
        .array("schedule", 1, p)
        .map(|items| schedule::read_schedules(items, version, p))
        .unwrap_or_default();
    let kubernetes = match version {
        ConfigVersion::V1 => obj
            .array("kubernetes", 1, p)
            .map(|items| kubernetes::read_kubernetes(items, p)),
        ConfigVersion::V0 => obj
            .array("onKubernetesEvent", 1, p)
            .map(|items| kubernetes::read_on_kubernetes_event(items, p)),
    }
    .unwrap_or_default();
    let settings = obj
        .object("settings", p)
        .map(|o| settings::read_settings(&o, p))
        .unwrap_or_default();
    let v1 = version == ConfigVersion::V1;
    let admission = |kind: AdmissionKind, p: &mut Problems| {
        v1.then(|| obj.array(kind.config_key(), 1, p))
            .flatten()
            .map(|items| webhook::read_admission(kind, items, p))
            .unwrap_or_default()
    };
    let validating = admission(AdmissionKind::Validating, p);
    let mutating = admission(AdmissionKind::Mutating, p);
    let conversions = v1
        .then(|| obj.array("kubernetesCustomResourceConversion", 1, p))
        .flatten()
        .map(|items| webhook::read_conversion(items, p))
        .unwrap_or_default();
    let mut config = HookConfig {
        version,
        orders,
        schedules,
        kubernetes,
        settings,
        validating,
        mutating,
        conversions,
    };
    groups::resolve_snapshots(&mut config, p);
    Some(config)
}

fn read_version(obj: &Obj<'_>, p: &mut Problems) -> Option<ConfigVersion> {
    match obj.get("configVersion") {
        None => Some(ConfigVersion::V0),
        Some(Value::String(v)) if v == "v1" => Some(ConfigVersion::V1),
        Some(Value::String(v)) if v == "v0" => Some(ConfigVersion::V0),
        Some(Value::String(v)) => {
            p.push(
                "configVersion",
                format!("config version '{v}' is unsupported (use v1)"),
            );
            None
        }
        Some(Value::Null) => {
            p.push("configVersion", "missing 'configVersion' value");
            None
        }
        Some(other) => {
            p.push(
                "configVersion",
                format!("string value is expected, got {}", type_name(other)),
            );
            None
        }
    }
}

fn reject_unknown_top_level(obj: &Obj<'_>, version: ConfigVersion, p: &mut Problems) {
    let ordered = BindingType::ORDERED.map(BindingType::as_str);
    for key in obj.map.keys() {
        let k = key.as_str();
        let known = ordered.contains(&k)
            || k == "schedule"
            || match version {
                ConfigVersion::V1 => {
                    matches!(k, "configVersion" | "kubernetes" | "settings")
                        || V1_ADMISSION_KEYS.contains(&k)
                }
                ConfigVersion::V0 => matches!(k, "configVersion" | "onKubernetesEvent"),
            };
        if known {
            continue;
        }
        let hint = match (version, k) {
            (ConfigVersion::V0, "kubernetes" | "settings") => {
                " (it needs 'configVersion: v1')".to_string()
            }
            (ConfigVersion::V1, "onKubernetesEvent") => {
                " (it is a v0 binding: use 'kubernetes' with 'configVersion: v1')".to_string()
            }
            _ => String::new(),
        };
        p.push(key.clone(), format!("unknown binding type{hint}"));
    }
}

fn read_orders(obj: &Obj<'_>, scope: HookScope, p: &mut Problems) -> BTreeMap<BindingType, f64> {
    let mut orders = BTreeMap::new();
    for binding in BindingType::ORDERED {
        let key = binding.as_str();
        if obj.get(key).is_none() {
            continue;
        }
        if let Some(only) = binding.only_in().filter(|only| *only != scope) {
            let where_ = match only {
                HookScope::Global => "global",
                HookScope::Module => "module",
            };
            p.push(
                key,
                format!("binding '{key}' is only allowed in {where_} hooks"),
            );
            continue;
        }
        let Some(order) = obj.number(key, p) else {
            continue;
        };
        if binding != BindingType::OnStartup && (order < 0.0 || order.fract() != 0.0) {
            p.push(
                key,
                format!("ORDER must be a non-negative integer, got {order}"),
            );
            continue;
        }
        orders.insert(binding, order);
    }
    orders
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> HookName {
        HookName::new("hooks/pods.sh").unwrap()
    }

    #[test]
    fn summary_lists_every_binding_in_a_fixed_order() {
        let c = parse(
            &hook(),
            HookScope::Module,
            r#"
configVersion: v1
beforeHelm: 5
onStartup: 10
kubernetes:
- name: pods
  kind: Pod
schedule:
- name: every-minute
  crontab: "*/1 * * * *"
"#,
        )
        .unwrap();
        assert_eq!(
            c.binding_summary(),
            vec![
                "onStartup: 10",
                "schedule: every-minute (*/1 * * * *)",
                "kubernetes: pods (Pod)",
                "beforeHelm: 5"
            ]
        );
        assert_eq!(
            c.binding_types(),
            vec![
                BindingType::OnStartup,
                BindingType::Schedule,
                BindingType::Kubernetes,
                BindingType::BeforeHelm
            ]
        );
        assert_eq!(c.order(BindingType::OnStartup), Some(10.0));
        assert_eq!(c.order(BindingType::AfterHelm), None);
    }

    #[test]
    fn binding_types_serialize_with_upstream_spellings() {
        let all = [
            BindingType::OnStartup,
            BindingType::Schedule,
            BindingType::Kubernetes,
            BindingType::BeforeAll,
            BindingType::AfterAll,
            BindingType::BeforeHelm,
            BindingType::AfterHelm,
            BindingType::BeforeDeleteHelm,
            BindingType::AfterDeleteHelm,
            BindingType::KubernetesValidating,
            BindingType::KubernetesMutating,
            BindingType::KubernetesConversion,
        ];
        for t in all {
            assert_eq!(serde_json::to_value(t).unwrap(), Value::from(t.as_str()));
        }
    }

    #[test]
    fn error_names_hook_and_field_path() {
        let err = parse(
            &hook(),
            HookScope::Global,
            "configVersion: v1\nkubernetes:\n- kind: Pod\n- kind: Pod\n  executeHookOnEvent: [Foo]\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "hook 'hooks/pods.sh': kubernetes[1].executeHookOnEvent[0]: unknown event type 'Foo' (allowed: Added, Modified, Deleted)"
        );
        assert_eq!(err.category(), "hook_config_invalid");
    }

    #[test]
    fn schedule_binding_computes_next_fire_time() {
        let c = parse(
            &hook(),
            HookScope::Global,
            "configVersion: v1\nschedule:\n- crontab: '*/10 * * * * *'\n",
        )
        .unwrap();
        let next = c.schedules[0].crontab.next_after(&UnixTime(1_709_294_401));
        assert_eq!(next, Some(UnixTime(1_709_294_410)));
    }

    #[test]
    fn config_is_shareable_between_tasks() {
        fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
        assert_send_sync::<HookConfig>();
        assert_send_sync::<crate::binding_context::BindingContext>();
    }

    #[test]
    fn empty_names_mean_the_defaults() {
        let c = parse(
            &hook(),
            HookScope::Global,
            "configVersion: v1\nschedule:\n- {name: '', crontab: '* * * * *', group: '', queue: ''}\nkubernetes:\n- {name: '', kind: Pod}\n",
        )
        .unwrap();
        assert_eq!(c.schedules[0].name, "schedule");
        assert_eq!(c.schedules[0].group, None);
        assert!(c.schedules[0].queue.is_main());
        assert_eq!(c.kubernetes[0].name, "kubernetes");
    }

    #[test]
    fn order_formats_without_trailing_zero() {
        assert_eq!(format_order(10.0), "10");
        assert_eq!(format_order(0.5), "0.5");
        assert_eq!(format_order(-1.0), "-1");
    }

    #[test]
    fn v0_binding_summary_marks_the_binding() {
        let c = parse(
            &hook(),
            HookScope::Global,
            "onKubernetesEvent:\n- kind: pod\n",
        )
        .unwrap();
        assert_eq!(
            c.binding_summary(),
            vec!["kubernetes: onKubernetesEvent (pod, v0)"]
        );
        assert_eq!(c.version, ConfigVersion::V0);
    }
}
