//! The JSON log line in upstream's shape: `level` (lowercase), `msg`, flat fields of the event and
//! its spans (`hook`, `module`, `binding`, `queue`, `task.kind`, ...), then `time` (RFC 3339).

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event field carrying a hook's own JSON log record (see `--log-proxy-hook-json`).
pub const PROXY_FIELD: &str = "proxy_json";

/// Formats one event as an upstream-style JSON object per line.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamJson {
    /// `false` with `--log-no-time`.
    pub with_time: bool,
}

impl<S, N> FormatEvent<S, N> for UpstreamJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = span_fields(ctx);
        let mut visitor = Fields::default();
        event.record(&mut visitor);
        fields.extend(visitor.0);
        let level = event.metadata().level().as_str().to_ascii_lowercase();
        let time = self.with_time.then(now_rfc3339);
        let line = record(&level, fields, time);
        writeln!(writer, "{line}")
    }
}

/// The fields of the event's spans, from the outermost (an inner span's value of a key wins),
/// as recorded by `JsonFields`.
pub(crate) fn span_fields<S, N>(ctx: &FmtContext<'_, S, N>) -> Map<String, Value>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    let mut fields = Map::new();
    for span in ctx
        .event_scope()
        .into_iter()
        .flat_map(|scope| scope.from_root())
    {
        if let Some(formatted) = span.extensions().get::<FormattedFields<N>>()
            && let Ok(Value::Object(map)) = serde_json::from_str(&formatted.fields)
        {
            fields.extend(map);
        }
    }
    fields
}

pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Orders the record as upstream does: level, msg, the fields, time. Empty strings (a span's
/// unset `hook` of a global task) are left out; a proxied hook record is spread as `hook_<key>`.
pub fn record(level: &str, mut fields: Map<String, Value>, time: Option<String>) -> String {
    let msg = fields
        .shift_remove("message")
        .unwrap_or(Value::String(String::new()));
    let proxied = fields.shift_remove(PROXY_FIELD);
    let mut out = Map::new();
    out.insert("level".into(), Value::String(level.into()));
    out.insert("msg".into(), msg);
    for (key, value) in fields {
        if value.as_str() != Some("") {
            out.insert(key, value);
        }
    }
    if let Some(Value::String(text)) = proxied
        && let Ok(Value::Object(hook_fields)) = serde_json::from_str::<Value>(&text)
    {
        for (key, value) in hook_fields {
            out.insert(format!("hook_{key}"), value);
        }
        out.insert("proxyJsonLog".into(), Value::Bool(true));
    }
    if let Some(time) = time {
        out.insert("time".into(), Value::String(time));
    }
    Value::Object(out).to_string()
}

/// Collects an event's fields as JSON values.
#[derive(Default)]
pub(crate) struct Fields(pub(crate) Map<String, Value>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().into(), Value::String(value.into()));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::Bool(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().into(), Value::String(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::String(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::captured::Captured;
    use serde_json::json;

    fn parse(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn keys_come_in_upstream_order_with_time_last() {
        let fields = json!({"message": "task done", "queue": "main", "hook": ""});
        let Value::Object(fields) = fields else {
            unreachable!()
        };
        let line = record("info", fields, Some("2026-01-02T03:04:05.000Z".into()));
        assert_eq!(
            line,
            r#"{"level":"info","msg":"task done","queue":"main","time":"2026-01-02T03:04:05.000Z"}"#
        );
    }

    #[test]
    fn a_proxied_hook_record_is_spread_with_the_hook_prefix() {
        let fields =
            json!({"message": "hook result", "hook": "hooks/a", "proxy_json": r#"{"foo":"baz"}"#});
        let Value::Object(fields) = fields else {
            unreachable!()
        };
        let line = parse(&record("warn", fields, None));
        assert_eq!(
            line,
            json!({"level": "warn", "msg": "hook result", "hook": "hooks/a", "hook_foo": "baz", "proxyJsonLog": true})
        );
        assert!(line.get("time").is_none());
    }

    #[test]
    fn span_fields_are_flattened_into_the_event_and_empty_ones_left_out() {
        let buffer = Captured::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(UpstreamJson { with_time: false })
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let span =
                tracing::info_span!("task", queue = "main", task.kind = "ModuleRun", hook = "");
            let _entered = span.enter();
            tracing::warn!(module = "echo-server", duration_ms = 5u64, "task failed");
        });
        let text = buffer.text();
        assert_eq!(
            text,
            "{\"level\":\"warn\",\"msg\":\"task failed\",\"queue\":\"main\",\"task.kind\":\"ModuleRun\",\"module\":\"echo-server\",\"duration_ms\":5}\n"
        );
    }

    #[test]
    fn time_is_rfc3339_in_utc() {
        let time = now_rfc3339();
        assert!(
            chrono::DateTime::parse_from_rfc3339(&time).is_ok(),
            "{time}"
        );
        assert!(time.ends_with('Z'), "{time}");
    }
}
