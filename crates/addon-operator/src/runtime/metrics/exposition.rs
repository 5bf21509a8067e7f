//! The text format `/metrics` answers in, chosen by the request's `Accept` as Prometheus' Go client chooses (OpenMetrics only when asked for, the classic text format otherwise), and the classic format written from prometheus-client's OpenMetrics.

use std::collections::HashMap;

/// Content type of the OpenMetrics text format.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Content type of the classic Prometheus text format.
pub const PROMETHEUS_TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A text format of the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposition {
    /// OpenMetrics 1.0: counters' families without `_total`, `unknown` type, `# EOF`.
    OpenMetrics,
    /// Prometheus text 0.0.4: what a client gets unless it asks for OpenMetrics.
    ClassicText,
}

/// One media range of an `Accept` header.
struct MediaRange<'a> {
    essence: String,
    version: Option<&'a str>,
    quality: f32,
}

fn media_range(text: &str) -> MediaRange<'_> {
    let mut parts = text.split(';').map(str::trim);
    let essence = parts.next().unwrap_or_default().to_ascii_lowercase();
    let (mut version, mut quality) = (None, 1.0);
    for param in parts {
        match param.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
            Some(("version", v)) => version = Some(v),
            Some(("q", q)) => quality = q.parse().unwrap_or(0.0),
            _ => {}
        }
    }
    MediaRange {
        essence,
        version,
        quality,
    }
}

impl Exposition {
    /// The format for an `Accept` header: the most preferred range that is OpenMetrics (version
    /// 1.0.0, 0.0.1 or none) or classic text (version 0.0.4 or none) decides; anything else,
    /// or no header, gets the classic text format.
    pub fn negotiate(accept: Option<&str>) -> Self {
        let mut ranges: Vec<MediaRange<'_>> = (accept.unwrap_or_default().split(','))
            .map(media_range)
            .filter(|r| r.quality > 0.0)
            .collect();
        ranges.sort_by(|a, b| b.quality.total_cmp(&a.quality));
        for range in ranges {
            match (range.essence.as_str(), range.version) {
                ("application/openmetrics-text", None | Some("1.0.0" | "0.0.1")) => {
                    return Self::OpenMetrics;
                }
                ("text/plain", None | Some("0.0.4")) => return Self::ClassicText,
                _ => {}
            }
        }
        Self::ClassicText
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => OPENMETRICS_CONTENT_TYPE,
            Self::ClassicText => PROMETHEUS_TEXT_CONTENT_TYPE,
        }
    }
}

/// A family's name and type in the classic format, from its OpenMetrics name and type.
fn classic_family<'a>(name: &str, kind: &'a str) -> (String, &'a str) {
    match kind {
        "counter" => (format!("{name}_total"), "counter"),
        "info" => (format!("{name}_info"), "gauge"),
        "unknown" => (name.to_string(), "untyped"),
        "stateset" => (name.to_string(), "gauge"),
        "gaugehistogram" => (name.to_string(), "histogram"),
        other => (name.to_string(), other),
    }
}

/// OpenMetrics escapes `"` in HELP; the classic format does not.
fn classic_help(text: &str) -> String {
    text.replace("\\\"", "\"")
}

/// The sample's metric name (before its labels or value).
fn sample_name(line: &str) -> &str {
    line.split(['{', ' ']).next().unwrap_or_default()
}

/// `openmetrics` (prometheus-client's output) in the classic text format: no `# EOF` or
/// `# UNIT`, counter families named like their `_total` samples, `untyped` for `unknown`, no
/// `_created` samples and no exemplars.
pub fn classic_text(openmetrics: &str) -> String {
    let kinds: HashMap<&str, &str> = (openmetrics.lines())
        .filter_map(|l| l.strip_prefix("# TYPE ")?.split_once(' '))
        .collect();
    let created = |name: &str| {
        let family = name.strip_suffix("_created");
        family.is_some_and(|f| {
            kinds
                .get(f)
                .is_some_and(|k| *k != "gauge" && *k != "unknown")
        })
    };
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let kind = kinds.get(name).copied().unwrap_or("unknown");
            let (name, _) = classic_family(name, kind);
            out.push_str(&format!("# HELP {name} {}\n", classic_help(help)));
        } else if let Some((name, kind)) =
            line.strip_prefix("# TYPE ").and_then(|r| r.split_once(' '))
        {
            let (name, kind) = classic_family(name, kind);
            out.push_str(&format!("# TYPE {name} {kind}\n"));
        } else if line.starts_with('#') || line.is_empty() || created(sample_name(line)) {
            // `# EOF`, `# UNIT`, and the creation times the classic format has no place for
        } else {
            let sample = line
                .split_once(" # ")
                .map_or(line, |(sample, _exemplar)| sample);
            out.push_str(sample);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_asking_for_openmetrics_first_gets_it() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(
            Exposition::negotiate(Some(prometheus)),
            Exposition::OpenMetrics
        );
        let preferred = "text/plain;q=0.3, application/openmetrics-text; q=0.9";
        assert_eq!(
            Exposition::negotiate(Some(preferred)),
            Exposition::OpenMetrics
        );
    }

    #[test]
    fn any_other_accept_gets_the_classic_text_format() {
        for accept in [
            None,
            Some(""),
            Some("*/*"),
            Some("text/plain"),
            Some("text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5"),
            Some("application/openmetrics-text;version=2.0.0"),
            Some("application/openmetrics-text;q=0"),
            Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily"),
        ] {
            assert_eq!(
                Exposition::negotiate(accept),
                Exposition::ClassicText,
                "{accept:?}"
            );
        }
    }

    #[test]
    fn the_classic_format_names_counters_by_their_samples_and_types_unknown_untyped() {
        let openmetrics = "# HELP a_errors Errors \\\"seen\\\".\n# TYPE a_errors counter\na_errors_total{m=\"x\"} 1\na_errors_created{m=\"x\"} 1.7e9\n# HELP a_ticks Ticks.\n# TYPE a_ticks unknown\na_ticks 3.0\n# HELP a_seconds Seconds.\n# TYPE a_seconds histogram\n# UNIT a_seconds seconds\na_seconds_sum 1.0\na_seconds_count 1\na_seconds_bucket{le=\"+Inf\"} 1 # {id=\"1\"} 1.0\n# EOF\n";
        assert_eq!(
            classic_text(openmetrics),
            "# HELP a_errors_total Errors \"seen\".\n# TYPE a_errors_total counter\na_errors_total{m=\"x\"} 1\n# HELP a_ticks Ticks.\n# TYPE a_ticks untyped\na_ticks 3.0\n# HELP a_seconds Seconds.\n# TYPE a_seconds histogram\na_seconds_sum 1.0\na_seconds_count 1\na_seconds_bucket{le=\"+Inf\"} 1\n"
        );
    }
}
