//! Sets up `tracing` output: text or JSON lines on stderr, filtered by the log level.

use tracing_subscriber::EnvFilter;

use crate::cli::{LogArgs, LogType};

/// Installs the global subscriber. `RUST_LOG`, when set, refines the level.
pub fn init(args: &LogArgs) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(args.log_level.as_str()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match args.log_type {
        LogType::Json => builder.json().flatten_event(true).try_init(),
        LogType::Text => builder.try_init(),
    };
}
