//! Sets up `tracing` output (text, or JSON lines in upstream's shape) on stderr through a lossy,
//! non-blocking writer; changes the level at run time; logs hook output (proxying hook JSON).

mod args;
#[cfg(test)]
mod captured;
pub mod json;
pub mod level;
pub mod sink;
pub mod text;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tracing::Level;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

pub use args::{LogArgs, LogType, parse_log_level};
use sink::Sink;

/// The level names `--log-level` and the debug API accept.
pub const LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace"];

/// How long `main` waits for queued log lines before the process exits.
const EXIT_FLUSH: Duration = Duration::from_secs(2);

/// A log level change that was refused.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("unknown log level '{0}' (expected one of: error, warn, info, debug, trace)")]
    UnknownLevel(String),
    #[error("logging is not set up in this process")]
    NotInitialised,
    #[error("reload the log filter")]
    Reload(#[source] reload::Error),
}

impl LogError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::UnknownLevel(_) => "log_level",
            Self::NotInitialised | Self::Reload(_) => "log_reload",
        }
    }
}

struct Control {
    filter: reload::Handle<EnvFilter, Registry>,
    level: Mutex<level::LevelSetting>,
    sink: Sink,
}

static CONTROL: OnceLock<Control> = OnceLock::new();
static PROXY_HOOK_JSON: AtomicBool = AtomicBool::new(false);
static JSON_LINES: AtomicBool = AtomicBool::new(false);

type Base = tracing_subscriber::layer::Layered<reload::Layer<EnvFilter, Registry>, Registry>;

/// Installs the global subscriber. `RUST_LOG`, when set, refines the level.
pub fn init(args: &LogArgs) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(args.log_level.as_str()));
    let (filter, handle) = reload::Layer::new(filter);
    let sink = Sink::spawn(std::io::stderr(), sink::QUEUE_LINES);
    let output = output_layer(args, sink.clone());
    if tracing_subscriber::registry()
        .with(filter)
        .with(output)
        .try_init()
        .is_ok()
    {
        PROXY_HOOK_JSON.store(args.log_proxy_hook_json, Ordering::Relaxed);
        JSON_LINES.store(matches!(args.log_type, LogType::Json), Ordering::Relaxed);
        let level = Mutex::new(level::LevelSetting::new(&args.log_level));
        let _ = CONTROL.set(Control {
            filter: handle,
            level,
            sink,
        });
    }
}

fn output_layer(args: &LogArgs, sink: Sink) -> Box<dyn Layer<Base> + Send + Sync> {
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(sink)
        .log_internal_errors(false);
    match (args.log_type, args.log_no_time) {
        (LogType::Json, no_time) => layer
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(json::UpstreamJson {
                with_time: !no_time,
            })
            .boxed(),
        (LogType::Text, no_time) => layer
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(text::ReadableText {
                with_time: !no_time,
            })
            .boxed(),
    }
}

/// Whether the log is JSON lines (`--log-type json`): then every line on stderr must be one, so
/// that a log pipeline keeping only JSON sees a failed start too.
pub fn json_lines() -> bool {
    JSON_LINES.load(Ordering::Relaxed)
}

/// Waits (boundedly) until queued log lines are written; `main` calls it before exiting.
pub fn flush() {
    if let Some(control) = CONTROL.get() {
        control.sink.flush(EXIT_FLUSH);
    }
}

/// The level in force (`None` before [`init`]).
pub fn level() -> Option<String> {
    let control = CONTROL.get()?;
    control.level.lock().ok().map(|l| l.current().to_string())
}

/// Changes the level of the running process (debug API `log.level`), as upstream's runtime
/// config: for `duration` when given, for 30 minutes when the level is `debug`, else until the
/// next change. A temporary level reverts by itself (a timer on the tokio runtime).
pub fn set_level(level: &str, duration: Option<Duration>) -> Result<(), LogError> {
    let level = level.trim().to_ascii_lowercase();
    if !LEVELS.contains(&level.as_str()) {
        return Err(LogError::UnknownLevel(level));
    }
    let control = CONTROL.get().ok_or(LogError::NotInitialised)?;
    control
        .filter
        .reload(EnvFilter::new(&level))
        .map_err(LogError::Reload)?;
    let Ok(mut setting) = control.level.lock() else {
        return Ok(());
    };
    let from = setting.current().to_string();
    let expiry = setting.set(&level, duration);
    match expiry {
        Some(expiry) => {
            tracing::info!(from = %from, to = %level, revert_after = ?expiry.after, "log level changed");
            schedule_revert(expiry);
        }
        None => tracing::info!(from = %from, to = %level, "log level changed"),
    }
    Ok(())
}

/// Reverts a temporary level after its time, when a tokio runtime runs (the operator's).
fn schedule_revert(expiry: level::Expiry) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        tokio::time::sleep(expiry.after).await;
        revert_level(expiry.generation);
    });
}

/// Ends the temporary level `generation` if it is still in force.
fn revert_level(generation: u64) {
    let Some(control) = CONTROL.get() else {
        return;
    };
    let Ok(mut setting) = control.level.lock() else {
        return;
    };
    let from = setting.current().to_string();
    if let Some(to) = setting.expire(generation)
        && control.filter.reload(EnvFilter::new(&to)).is_ok()
    {
        tracing::info!(from = %from, to = %to, "temporary log level expired");
    }
}

/// Where a hook output line came from.
#[derive(Debug, Clone, Copy)]
pub struct HookLine<'a> {
    pub hook: &'a str,
    pub module: &'a str,
    pub binding: &'a str,
    /// `stdout` or `stderr`
    pub output: &'static str,
}

/// Logs one line of a hook's output. With `--log-proxy-hook-json`, a line holding a JSON object
/// becomes a record of its own: its `level` and `msg` (default "hook result"), the other keys as
/// `hook_<key>`, and `proxyJsonLog: true`; any other line is logged as text at info.
pub fn hook_output(line: HookLine<'_>, text: &str) {
    let proxied = PROXY_HOOK_JSON
        .load(Ordering::Relaxed)
        .then(|| parse_hook_record(text))
        .flatten();
    let HookLine {
        hook,
        module,
        binding,
        output,
    } = line;
    let Some(record) = proxied else {
        tracing::info!(target: "addon_operator::edges::exec::process", hook, module, binding, output, "{text}");
        return;
    };
    let (msg, rest) = (record.msg, record.rest);
    macro_rules! proxied {
        ($level:expr) => {
            tracing::event!(target: "addon_operator::edges::exec::process", $level,
                hook, module, binding, output, proxy_json = %rest, "{msg}")
        };
    }
    match record.level {
        Level::ERROR => proxied!(Level::ERROR),
        Level::WARN => proxied!(Level::WARN),
        Level::DEBUG => proxied!(Level::DEBUG),
        Level::TRACE => proxied!(Level::TRACE),
        _ => proxied!(Level::INFO),
    }
}

/// A hook's JSON log record split as the proxy needs it.
#[derive(Debug, PartialEq)]
struct HookRecord {
    level: Level,
    msg: String,
    /// The remaining keys as a JSON object (without `level`, `msg` and `time`).
    rest: String,
}

fn parse_hook_record(text: &str) -> Option<HookRecord> {
    let serde_json::Value::Object(mut map) = serde_json::from_str(text.trim()).ok()? else {
        return None;
    };
    let level = match map.shift_remove("level") {
        Some(serde_json::Value::String(l)) => hook_level(&l),
        _ => Level::INFO,
    };
    let msg = match map.shift_remove("msg") {
        Some(serde_json::Value::String(m)) => m,
        _ => "hook result".to_string(),
    };
    map.shift_remove("time");
    let rest = serde_json::Value::Object(map).to_string();
    Some(HookRecord { level, msg, rest })
}

fn hook_level(name: &str) -> Level {
    match name.to_ascii_lowercase().as_str() {
        "trace" => Level::TRACE,
        "debug" => Level::DEBUG,
        "warn" | "warning" => Level::WARN,
        "error" | "fatal" | "panic" | "critical" => Level::ERROR,
        _ => Level::INFO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_json_line_keeps_its_level_and_message_and_loses_its_time() {
        let record =
            parse_hook_record(r#"{"level":"warning","msg":"disk low","time":"x","free":3}"#)
                .unwrap();
        assert_eq!(
            record,
            HookRecord {
                level: Level::WARN,
                msg: "disk low".into(),
                rest: r#"{"free":3}"#.into(),
            }
        );
    }

    #[test]
    fn a_hook_json_line_without_msg_is_a_hook_result_at_info() {
        let record = parse_hook_record(r#"{"foo": "baz"}"#).unwrap();
        assert_eq!(record.level, Level::INFO);
        assert_eq!(record.msg, "hook result");
        assert_eq!(record.rest, r#"{"foo":"baz"}"#);
    }

    #[test]
    fn lines_that_are_not_json_objects_are_not_proxied() {
        assert_eq!(parse_hook_record("plain text"), None);
        assert_eq!(parse_hook_record(r#"["a","b"]"#), None);
        assert_eq!(parse_hook_record(r#"{"unterminated": "#), None);
    }

    #[test]
    fn unknown_levels_are_refused_before_touching_the_filter() {
        let err = set_level("verbose", None).unwrap_err();
        assert_eq!(err.category(), "log_level");
        assert!(err.to_string().contains("'verbose'"), "{err}");
    }
}
