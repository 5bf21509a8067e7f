//! The text log line a person reads: time, level, the message (a hook's own output line comes
//! first), then each field once (the event's, then its spans' from the outermost), without empty
//! ones, on one line.

use std::fmt;

use serde_json::{Map, Value};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::json::{Fields, PROXY_FIELD};

/// Formats one event as `time LEVEL message key=value ...`; span fields must be recorded as
/// JSON (`JsonFields`), as for the JSON format.
#[derive(Debug, Clone, Copy)]
pub struct ReadableText {
    /// `false` with `--log-no-time`.
    pub with_time: bool,
}

impl<S, N> FormatEvent<S, N> for ReadableText
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
        let mut visitor = Fields::default();
        event.record(&mut visitor);
        // the event's fields first (the message leads the line), then the spans' it lacks
        let mut fields = visitor.0;
        for (key, value) in super::json::span_fields(ctx) {
            fields.entry(key).or_insert(value);
        }
        let time = self.with_time.then(super::json::now_rfc3339);
        let level = event.metadata().level().as_str();
        writeln!(writer, "{}", line(time.as_deref(), level, fields))
    }
}

/// The line of one event: `time LEVEL message key=value ...`; the message and values are kept
/// on one line (newlines escaped), values with spaces, quotes or `=` quoted.
pub fn line(time: Option<&str>, level: &str, mut fields: Map<String, Value>) -> String {
    let message = match fields.shift_remove("message") {
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let proxied = fields.shift_remove(PROXY_FIELD);
    let mut out = String::with_capacity(message.len() + 64);
    if let Some(time) = time {
        out.push_str(time);
        out.push(' ');
    }
    out.push_str(&format!("{level:>5} "));
    out.push_str(&one_line(&message));
    let mut push = |key: &str, value: &Value| {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !text.is_empty() {
            out.push(' ');
            out.push_str(key);
            out.push('=');
            out.push_str(&quoted(&text));
        }
    };
    for (key, value) in &fields {
        push(key, value);
    }
    if let Some(Value::String(text)) = proxied
        && let Ok(Value::Object(hook_fields)) = serde_json::from_str::<Value>(&text)
    {
        for (key, value) in &hook_fields {
            push(&format!("hook_{key}"), value);
        }
    }
    out
}

fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r']) {
        text.replace('\r', "\\r").replace('\n', "\\n")
    } else {
        text.to_string()
    }
}

fn quoted(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| !c.is_whitespace() && !matches!(c, '"' | '=' | '\\') && !c.is_control());
    if plain {
        text.to_string()
    } else {
        format!("{text:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::captured::Captured;

    fn captured(emit: impl FnOnce()) -> String {
        let buffer = Captured::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(ReadableText { with_time: false })
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        buffer.text()
    }

    #[test]
    fn a_hook_output_line_comes_first_and_each_field_once_without_empty_ones() {
        let text = captured(|| {
            let task = tracing::info_span!("task", queue = "main", task.kind = "GlobalHookRun");
            let _task = task.enter();
            let run = tracing::info_span!("hook", hook = "hooks/a", module = "", binding = "tick");
            let _run = run.enter();
            tracing::info!(
                hook = "hooks/a",
                module = "",
                binding = "tick",
                output = "stdout",
                "disk is low"
            );
        });
        assert_eq!(
            text,
            " INFO disk is low hook=hooks/a binding=tick output=stdout queue=main task.kind=GlobalHookRun\n"
        );
    }

    #[test]
    fn values_with_spaces_are_quoted_and_newlines_kept_on_the_line() {
        let text = captured(|| {
            tracing::warn!(
                error = "read failed: no such file",
                count = 3u64,
                "two\nlines"
            );
        });
        assert_eq!(
            text,
            " WARN two\\nlines error=\"read failed: no such file\" count=3\n"
        );
    }

    #[test]
    fn a_proxied_hook_record_is_spread_with_the_hook_prefix() {
        let text = captured(|| {
            tracing::info!(
                hook = "hooks/a",
                proxy_json = r#"{"disk":"low"}"#,
                "hook result"
            );
        });
        assert_eq!(text, " INFO hook result hook=hooks/a hook_disk=low\n");
    }
}
