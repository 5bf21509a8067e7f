//! The logging flags every command shares (`--log-level`, `--log-type`, ...), with the Go
//! operator's environment variables.

use clap::ValueEnum;

#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// Log level: error, warn, info, debug, trace (or a filter such as `info,addon_operator::edges::helm=debug`)
    #[arg(long, env = "LOG_LEVEL", default_value = "info", global = true, value_parser = parse_log_level)]
    pub log_level: String,
    /// Log format
    #[arg(long, env = "LOG_TYPE", value_enum, default_value_t = LogType::Text, global = true)]
    pub log_type: LogType,
    /// Leave the time out of log lines (when the log collector adds its own)
    #[arg(long, env = "LOG_NO_TIME", num_args = 0..=1, default_value = "false", global = true,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub log_no_time: bool,
    /// A hook's stdout/stderr lines holding JSON objects become log records of their own (their
    /// level and msg, other keys as hook_<key>) instead of text lines
    #[arg(long, env = "LOG_PROXY_HOOK_JSON", num_args = 0..=1, default_value = "false", global = true,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub log_proxy_hook_json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogType {
    Text,
    Json,
}

/// A `--log-level` that is neither a level name nor a filter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown log level '{0}' (expected error, warn, info, debug, trace, or a filter such as info,addon_operator::edges::helm=debug)"
)]
pub struct UnknownLogLevel(pub String);

/// A log level name (upstream's `warning` and `fatal` too) or a `RUST_LOG`-style filter with `=`.
pub fn parse_log_level(text: &str) -> Result<String, UnknownLogLevel> {
    let level = text.trim().to_ascii_lowercase();
    match level.as_str() {
        "error" | "warn" | "info" | "debug" | "trace" => Ok(level),
        "warning" => Ok("warn".into()),
        "fatal" => Ok("error".into()),
        _ if text.contains('=') => Ok(text.trim().to_string()),
        _ => Err(UnknownLogLevel(text.to_string())),
    }
}
