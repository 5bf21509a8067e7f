//! What every command uses: stdout and stderr writes that never panic, the async runtime a
//! command runs on, Go-style duration flags, and the flags of the commands that run a tree
//! locally.

/// Writes `text` to stdout as it is. A closed stdout or broken pipe (`| head`) loses the text
/// instead of panicking like `print!`.
pub fn print_out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Writes `text` and a newline to stderr, never panicking (see [`print_out`]).
pub fn print_err(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Runs a command's async body on a multi-thread tokio runtime.
pub fn block_on<T>(body: impl std::future::Future<Output = T>) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("start the async runtime: {e}"))?;
    Ok(runtime.block_on(body))
}

/// Parses Go-style durations (`500ms`, `30s`, `1m30s`, `1h`), like the Go operator's flags.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    addon_core::hook_config::parse_go_duration(text.trim()).map_err(|e| e.to_string())
}

/// The config and hook time limit of a command that runs a tree locally (`module render`,
/// `hook run`).
#[derive(Debug, Clone, clap::Args)]
pub struct LocalRunFlags {
    /// The config (what the ConfigMap's data holds); read, never written
    #[arg(long, env = "ADDON_OPERATOR_CONFIG_FILE", value_name = "FILE")]
    pub config_file: Option<std::path::PathBuf>,
    /// Time limit of one hook run
    #[arg(long, env = "ADDON_OPERATOR_HOOK_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    pub hook_timeout: std::time::Duration,
}
