//! Metrics written by hooks to `$METRICS_PATH`: a store of gauges, counters and histograms created on
//! demand, grouped so a hook's next run replaces its series, rendered in the Prometheus text format.
//!
//! Semantics (shell-operator ≥ 1.9 / addon-operator ≥ 1.6, reference §4.3): every operation belongs
//! to a group, its `group` or else the hook's name. Applying a batch first drops every series of the
//! groups the batch names, then applies the operations, so gauges show the last run only and
//! counters count within one run. `expire` only drops its group. Names are exposed as written (no
//! prefix, no `_total`), with a `hook` label (and `module` for module hooks) added.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use addon_core::hook_output::metrics::{MetricAction, MetricOperation};

/// A batch of hook metric operations that was rejected; nothing of the batch was applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HookMetricsError {
    #[error("hook metric operation {index}: invalid metric name '{name}'")]
    ValidateName { index: usize, name: String },
    #[error("hook metric operation {index} ('{name}'): invalid label name '{label}'")]
    ValidateLabel {
        index: usize,
        name: String,
        label: String,
    },
    #[error("hook metric operation {index} ('{name}'): {reason}")]
    ValidateValue {
        index: usize,
        name: String,
        reason: InvalidValue,
    },
    #[error("hook metric operation {index}: '{name}' is a {existing}, cannot {action} it")]
    ConflictingType {
        index: usize,
        name: String,
        existing: &'static str,
        action: &'static str,
    },
}

impl HookMetricsError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::ValidateName { .. } | Self::ValidateLabel { .. } | Self::ValidateValue { .. } => {
                "hook_metrics_invalid"
            }
            Self::ConflictingType { .. } => "hook_metrics_conflict",
        }
    }
}

/// The type of a hook metric, fixed while it has series.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Gauge,
    Counter,
    Histogram { bounds: Vec<f64> },
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Self::Gauge => "gauge",
            Self::Counter => "counter",
            Self::Histogram { .. } => "histogram",
        }
    }

    fn same_type(&self, other: &Kind) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

type LabelSet = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Number(f64),
    Histogram {
        counts: Vec<u64>,
        sum: f64,
        count: u64,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct Series {
    group: String,
    value: Value,
}

#[derive(Debug, Clone, PartialEq)]
struct HookMetric {
    kind: Kind,
    series: BTreeMap<LabelSet, Series>,
}

/// All series written by hooks.
#[derive(Debug, Default)]
pub struct HookMetricsStore {
    metrics: BTreeMap<String, HookMetric>,
}

/// One validated operation, labels complete.
struct Prepared<'a> {
    op: &'a MetricOperation,
    group: String,
    labels: LabelSet,
}

impl HookMetricsStore {
    /// Applies one hook run's operations: all of them, or none when one is invalid.
    pub fn apply(
        &mut self,
        hook: &str,
        module: Option<&str>,
        ops: &[MetricOperation],
    ) -> Result<(), HookMetricsError> {
        let prepared = ops
            .iter()
            .enumerate()
            .map(|(index, op)| prepare(index, op, hook, module))
            .collect::<Result<Vec<_>, _>>()?;
        let groups: BTreeSet<&str> = prepared.iter().map(|p| p.group.as_str()).collect();
        self.check_types(&prepared, &groups)?;
        for group in &groups {
            self.expire(group);
        }
        for p in &prepared {
            if p.op.action == MetricAction::Expire {
                self.expire(&p.group);
            } else {
                self.apply_one(p);
            }
        }
        Ok(())
    }

    /// Drops every series of `group`, and metrics left without series.
    pub fn expire(&mut self, group: &str) {
        for metric in self.metrics.values_mut() {
            metric.series.retain(|_, series| series.group != group);
        }
        self.metrics.retain(|_, metric| !metric.series.is_empty());
    }

    /// Number of series.
    #[cfg(test)]
    pub fn series_count(&self) -> usize {
        self.metrics.values().map(|m| m.series.len()).sum()
    }

    /// Rejects a batch that uses a name with another type than it has (after the batch's groups expire).
    fn check_types(
        &self,
        prepared: &[Prepared<'_>],
        expiring: &BTreeSet<&str>,
    ) -> Result<(), HookMetricsError> {
        let mut kinds: BTreeMap<&str, Kind> = self
            .metrics
            .iter()
            .filter(|(_, m)| {
                m.series
                    .values()
                    .any(|s| !expiring.contains(s.group.as_str()))
            })
            .map(|(name, m)| (name.as_str(), m.kind.clone()))
            .collect();
        for (index, p) in prepared.iter().enumerate() {
            let Some(kind) = kind_of(&p.op.action) else {
                continue;
            };
            let name = p.op.name.as_str();
            match kinds.get(name) {
                Some(existing) if !existing.same_type(&kind) => {
                    return Err(HookMetricsError::ConflictingType {
                        index,
                        name: name.to_string(),
                        existing: existing.name(),
                        action: action_name(&p.op.action),
                    });
                }
                Some(_) => {}
                None => {
                    kinds.insert(name, kind);
                }
            }
        }
        Ok(())
    }

    fn apply_one(&mut self, p: &Prepared<'_>) {
        let Some(kind) = kind_of(&p.op.action) else {
            return;
        };
        let metric = self
            .metrics
            .entry(p.op.name.clone())
            .or_insert_with(|| HookMetric {
                kind,
                series: BTreeMap::new(),
            });
        let initial = match &metric.kind {
            Kind::Histogram { bounds } => Value::Histogram {
                counts: vec![0; bounds.len()],
                sum: 0.0,
                count: 0,
            },
            Kind::Gauge | Kind::Counter => Value::Number(0.0),
        };
        let series = metric.series.entry(p.labels.clone()).or_insert(Series {
            group: p.group.clone(),
            value: initial,
        });
        series.group = p.group.clone();
        update(&mut series.value, &metric.kind, &p.op.action);
    }

    /// The Prometheus text format (version 0.0.4) of every series.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        for (name, metric) in &self.metrics {
            let _ = writeln!(out, "# TYPE {name} {}", metric.kind.name());
            for (labels, series) in &metric.series {
                encode_series(&mut out, name, &metric.kind, labels, &series.value);
            }
        }
        out
    }
}

fn update(value: &mut Value, kind: &Kind, action: &MetricAction) {
    match (value, action) {
        (Value::Number(v), MetricAction::Set(x)) => *v = *x,
        (Value::Number(v), MetricAction::Add(x)) => *v += *x,
        (Value::Histogram { counts, sum, count }, MetricAction::Observe { value: x, .. }) => {
            if let Kind::Histogram { bounds } = kind {
                for (bucket, bound) in counts.iter_mut().zip(bounds) {
                    if *x <= *bound {
                        *bucket += 1;
                    }
                }
            }
            *sum += *x;
            *count += 1;
        }
        _ => {}
    }
}

fn kind_of(action: &MetricAction) -> Option<Kind> {
    match action {
        MetricAction::Set(_) => Some(Kind::Gauge),
        MetricAction::Add(_) => Some(Kind::Counter),
        MetricAction::Observe { buckets, .. } => Some(Kind::Histogram {
            bounds: normalized_bounds(buckets),
        }),
        MetricAction::Expire => None,
    }
}

fn action_name(action: &MetricAction) -> &'static str {
    match action {
        MetricAction::Set(_) => "set",
        MetricAction::Add(_) => "add",
        MetricAction::Observe { .. } => "observe",
        MetricAction::Expire => "expire",
    }
}

/// Sorted, without duplicates and without `+Inf` (always written).
fn normalized_bounds(buckets: &[f64]) -> Vec<f64> {
    let mut bounds: Vec<f64> = buckets.iter().copied().filter(|b| b.is_finite()).collect();
    bounds.sort_by(f64::total_cmp);
    bounds.dedup();
    bounds
}

fn prepare<'a>(
    index: usize,
    op: &'a MetricOperation,
    hook: &str,
    module: Option<&str>,
) -> Result<Prepared<'a>, HookMetricsError> {
    let group = op.group.clone().unwrap_or_else(|| hook.to_string());
    if op.action == MetricAction::Expire {
        return Ok(Prepared {
            op,
            group,
            labels: LabelSet::new(),
        });
    }
    if !valid_metric_name(&op.name) {
        return Err(HookMetricsError::ValidateName {
            index,
            name: op.name.clone(),
        });
    }
    if let Some(label) = op.labels.keys().find(|l| !valid_label_name(l)) {
        return Err(HookMetricsError::ValidateLabel {
            index,
            name: op.name.clone(),
            label: label.clone(),
        });
    }
    validate_value(&op.action).map_err(|reason| HookMetricsError::ValidateValue {
        index,
        name: op.name.clone(),
        reason,
    })?;
    let mut labels = op.labels.clone();
    labels.insert("hook".into(), hook.to_string());
    if let Some(module) = module {
        labels.insert("module".into(), module.to_string());
    }
    Ok(Prepared { op, group, labels })
}

/// A metric value Prometheus would not accept for the action.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidValue {
    #[error("a counter cannot grow by {0}: 'add' needs a value >= 0")]
    NegativeAdd(f64),
    #[error("cannot observe NaN")]
    ObserveNan,
    #[error("'buckets' must not hold NaN")]
    NanBucket,
}

fn validate_value(action: &MetricAction) -> Result<(), InvalidValue> {
    match action {
        MetricAction::Add(v) if v.is_nan() || *v < 0.0 => Err(InvalidValue::NegativeAdd(*v)),
        MetricAction::Observe { value, buckets } => {
            if value.is_nan() {
                return Err(InvalidValue::ObserveNan);
            }
            if buckets.iter().any(|b| b.is_nan()) {
                return Err(InvalidValue::NanBucket);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`
fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved).
fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn encode_series(out: &mut String, name: &str, kind: &Kind, labels: &LabelSet, value: &Value) {
    match (kind, value) {
        (Kind::Histogram { bounds }, Value::Histogram { counts, sum, count }) => {
            for (bound, n) in bounds.iter().zip(counts) {
                let le = format_number(*bound);
                let _ = writeln!(out, "{name}_bucket{} {n}", label_text(labels, Some(&le)));
            }
            let _ = writeln!(
                out,
                "{name}_bucket{} {count}",
                label_text(labels, Some("+Inf"))
            );
            let _ = writeln!(
                out,
                "{name}_sum{} {}",
                label_text(labels, None),
                format_number(*sum)
            );
            let _ = writeln!(out, "{name}_count{} {count}", label_text(labels, None));
        }
        (_, Value::Number(v)) => {
            let _ = writeln!(
                out,
                "{name}{} {}",
                label_text(labels, None),
                format_number(*v)
            );
        }
        _ => {}
    }
}

fn label_text(labels: &LabelSet, le: Option<&str>) -> String {
    let mut pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label_value(v)))
        .collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

fn escape_label_value(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus' float syntax: `NaN`, `+Inf`, `-Inf`, integers without a fraction.
fn format_number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::hook_output::metrics::parse;

    fn apply(store: &mut HookMetricsStore, hook: &str, text: &str) -> Result<(), HookMetricsError> {
        store.apply(hook, None, &parse(text).unwrap())
    }

    #[test]
    fn values_prometheus_rejects_name_the_operation_and_why() {
        let mut store = HookMetricsStore::default();
        let err = apply(&mut store, "h", r#"{"name":"c","action":"add","value":-1}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "hook metric operation 0 ('c'): a counter cannot grow by -1: 'add' needs a value >= 0"
        );
        // JSON cannot carry NaN: the reason is checked on its own
        let nan = HookMetricsError::ValidateValue {
            index: 1,
            name: "o".into(),
            reason: InvalidValue::ObserveNan,
        };
        assert_eq!(
            nan.to_string(),
            "hook metric operation 1 ('o'): cannot observe NaN"
        );
        assert_eq!(nan.category(), "hook_metrics_invalid");
    }

    #[test]
    fn a_hook_run_replaces_its_previous_ungrouped_series() {
        let mut store = HookMetricsStore::default();
        apply(
            &mut store,
            "h",
            r#"{"name":"g","set":1,"labels":{"pod":"a"}}"#,
        )
        .unwrap();
        apply(
            &mut store,
            "h",
            r#"{"name":"g","set":2,"labels":{"pod":"b"}}"#,
        )
        .unwrap();
        assert_eq!(
            store.encode(),
            "# TYPE g gauge\ng{hook=\"h\",pod=\"b\"} 2\n"
        );
    }

    #[test]
    fn counters_add_within_a_run_and_restart_on_the_next_run() {
        let mut store = HookMetricsStore::default();
        let two_adds =
            "{\"name\":\"c\",\"action\":\"add\",\"value\":1}\n{\"name\":\"c\",\"add\":2}";
        apply(&mut store, "h", two_adds).unwrap();
        assert_eq!(store.encode(), "# TYPE c counter\nc{hook=\"h\"} 3\n");
        apply(&mut store, "h", r#"{"name":"c","add":1}"#).unwrap();
        assert_eq!(store.encode(), "# TYPE c counter\nc{hook=\"h\"} 1\n");
    }

    #[test]
    fn runs_of_other_hooks_leave_a_hooks_series_alone() {
        let mut store = HookMetricsStore::default();
        apply(&mut store, "h1", r#"{"name":"g","set":1}"#).unwrap();
        apply(&mut store, "h2", r#"{"name":"g","set":2}"#).unwrap();
        assert_eq!(
            store.encode(),
            "# TYPE g gauge\ng{hook=\"h1\"} 1\ng{hook=\"h2\"} 2\n"
        );
    }

    #[test]
    fn a_named_group_is_replaced_across_hooks_and_label_values() {
        let mut store = HookMetricsStore::default();
        apply(
            &mut store,
            "h1",
            r#"{"group":"grp","name":"g","set":1,"labels":{"x":"1"}}"#,
        )
        .unwrap();
        apply(&mut store, "h1", r#"{"name":"other","set":9}"#).unwrap();
        apply(
            &mut store,
            "h2",
            r#"{"group":"grp","name":"g","set":2,"labels":{"x":"2"}}"#,
        )
        .unwrap();
        assert_eq!(
            store.encode(),
            "# TYPE g gauge\ng{hook=\"h2\",x=\"2\"} 2\n# TYPE other gauge\nother{hook=\"h1\"} 9\n"
        );
    }

    #[test]
    fn expire_drops_only_its_group() {
        let mut store = HookMetricsStore::default();
        apply(&mut store, "h", r#"{"group":"grp","name":"g","set":1}"#).unwrap();
        apply(&mut store, "h", r#"{"group":"keep","name":"k","set":1}"#).unwrap();
        apply(&mut store, "h", r#"{"group":"grp","action":"expire"}"#).unwrap();
        assert_eq!(store.encode(), "# TYPE k gauge\nk{hook=\"h\"} 1\n");
        assert_eq!(store.series_count(), 1);
    }

    #[test]
    fn expire_applies_in_order_within_a_batch() {
        let mut store = HookMetricsStore::default();
        let set_then_expire =
            "{\"group\":\"g1\",\"name\":\"a\",\"set\":1}\n{\"group\":\"g1\",\"action\":\"expire\"}";
        apply(&mut store, "h", set_then_expire).unwrap();
        assert_eq!(store.encode(), "");
        let expire_then_set =
            "{\"group\":\"g1\",\"action\":\"expire\"}\n{\"group\":\"g1\",\"name\":\"a\",\"set\":1}";
        apply(&mut store, "h", expire_then_set).unwrap();
        assert_eq!(store.encode(), "# TYPE a gauge\na{hook=\"h\"} 1\n");
    }

    #[test]
    fn histograms_count_observations_per_bucket_with_sorted_bounds() {
        let mut store = HookMetricsStore::default();
        let ops = "{\"name\":\"h_seconds\",\"action\":\"observe\",\"value\":3,\"buckets\":[5,1,2]}\n\
                   {\"name\":\"h_seconds\",\"action\":\"observe\",\"value\":0.5,\"buckets\":[5,1,2]}";
        apply(&mut store, "h", ops).unwrap();
        assert_eq!(
            store.encode(),
            "# TYPE h_seconds histogram\n\
             h_seconds_bucket{hook=\"h\",le=\"1\"} 1\n\
             h_seconds_bucket{hook=\"h\",le=\"2\"} 1\n\
             h_seconds_bucket{hook=\"h\",le=\"5\"} 2\n\
             h_seconds_bucket{hook=\"h\",le=\"+Inf\"} 2\n\
             h_seconds_sum{hook=\"h\"} 3.5\n\
             h_seconds_count{hook=\"h\"} 2\n"
        );
    }

    #[test]
    fn module_hooks_get_a_module_label_that_overrides_the_hooks_own() {
        let mut store = HookMetricsStore::default();
        let ops =
            parse(r#"{"name":"g","set":1,"labels":{"module":"fake","hook":"fake"}}"#).unwrap();
        store.apply("alpha/hooks/h", Some("alpha"), &ops).unwrap();
        assert_eq!(
            store.encode(),
            "# TYPE g gauge\ng{hook=\"alpha/hooks/h\",module=\"alpha\"} 1\n"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let mut store = HookMetricsStore::default();
        apply(
            &mut store,
            "h",
            r#"{"name":"g","set":1,"labels":{"v":"a\"b\\c\nd"}}"#,
        )
        .unwrap();
        assert_eq!(
            store.encode(),
            "# TYPE g gauge\ng{hook=\"h\",v=\"a\\\"b\\\\c\\nd\"} 1\n"
        );
    }

    #[test]
    fn special_float_values_use_prometheus_spelling() {
        assert_eq!(format_number(f64::NAN), "NaN");
        assert_eq!(format_number(f64::INFINITY), "+Inf");
        assert_eq!(format_number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_number(2.0), "2");
        assert_eq!(format_number(0.25), "0.25");
    }

    #[test]
    fn an_invalid_operation_rejects_the_whole_batch_and_keeps_old_series() {
        let mut store = HookMetricsStore::default();
        apply(&mut store, "h", r#"{"name":"g","set":1}"#).unwrap();
        let batch = "{\"name\":\"g\",\"set\":2}\n{\"name\":\"bad-name\",\"set\":1}";
        let err = apply(&mut store, "h", batch).unwrap_err();
        assert_eq!(
            err,
            HookMetricsError::ValidateName {
                index: 1,
                name: "bad-name".into()
            }
        );
        assert_eq!(err.category(), "hook_metrics_invalid");
        assert_eq!(store.encode(), "# TYPE g gauge\ng{hook=\"h\"} 1\n");
    }

    #[test]
    fn invalid_label_names_and_values_are_rejected() {
        let mut store = HookMetricsStore::default();
        let cases = [
            (
                r#"{"name":"g","set":1,"labels":{"1a":"x"}}"#,
                "invalid label name '1a'",
            ),
            (
                r#"{"name":"g","set":1,"labels":{"__x":"x"}}"#,
                "invalid label name '__x'",
            ),
            (r#"{"name":"c","add":-1}"#, "'add' needs a value >= 0"),
            (
                r#"{"name":"h","action":"observe","value":1,"buckets":[1]} "#,
                "",
            ),
        ];
        for (text, expected) in cases {
            let result = apply(&mut store, "h", text);
            if expected.is_empty() {
                assert!(result.is_ok(), "{text}: {result:?}");
            } else {
                let e = result.unwrap_err().to_string();
                assert!(e.contains(expected), "{text}: {e}");
            }
        }
    }

    #[test]
    fn a_name_keeps_its_type_while_another_hook_has_series_of_it() {
        let mut store = HookMetricsStore::default();
        apply(&mut store, "h1", r#"{"name":"m","set":1}"#).unwrap();
        let err = apply(&mut store, "h2", r#"{"name":"m","add":1}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "hook metric operation 0: 'm' is a gauge, cannot add it"
        );
        assert_eq!(err.category(), "hook_metrics_conflict");
    }

    #[test]
    fn a_hook_may_change_a_metrics_type_once_its_old_series_expire() {
        let mut store = HookMetricsStore::default();
        apply(&mut store, "h", r#"{"name":"m","set":1}"#).unwrap();
        apply(&mut store, "h", r#"{"name":"m","add":1}"#).unwrap();
        assert_eq!(store.encode(), "# TYPE m counter\nm{hook=\"h\"} 1\n");
    }

    #[test]
    fn one_batch_cannot_use_a_name_with_two_types() {
        let mut store = HookMetricsStore::default();
        let err = apply(
            &mut store,
            "h",
            "{\"name\":\"m\",\"set\":1}\n{\"name\":\"m\",\"add\":1}",
        )
        .unwrap_err();
        assert!(
            matches!(err, HookMetricsError::ConflictingType { index: 1, .. }),
            "{err}"
        );
        assert_eq!(store.encode(), "");
    }

    #[test]
    fn a_histogram_keeps_its_first_buckets_while_it_has_series() {
        let mut store = HookMetricsStore::default();
        apply(
            &mut store,
            "h1",
            r#"{"name":"d","action":"observe","value":1,"buckets":[1]}"#,
        )
        .unwrap();
        apply(
            &mut store,
            "h2",
            r#"{"name":"d","action":"observe","value":1,"buckets":[2,3]}"#,
        )
        .unwrap();
        let text = store.encode();
        assert!(text.contains("d_bucket{hook=\"h2\",le=\"1\"} 1"), "{text}");
        assert!(!text.contains("le=\"3\""), "{text}");
    }

    #[test]
    fn a_run_without_metrics_keeps_the_previous_series() {
        let mut store = HookMetricsStore::default();
        apply(&mut store, "h", r#"{"name":"g","set":1}"#).unwrap();
        apply(&mut store, "h", "").unwrap();
        assert_eq!(
            store.series_count(),
            1,
            "a run without metrics keeps the last ones"
        );
    }
}
