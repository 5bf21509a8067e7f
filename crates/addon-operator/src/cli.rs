//! The command line: subcommands, their flags and the environment variables behind them.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::dirs::DirFlags;

#[derive(Debug, Parser)]
#[command(
    name = "addon-operator",
    version,
    about = "Installs and keeps cluster add-ons: Helm charts, hooks and values"
)]
pub struct Cli {
    #[command(flatten)]
    pub log: LogArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Discover hooks and modules, run every hook's --config, load and validate values and
    /// schemas, compute the enabled modules, and print a summary. Exit 1 when anything is invalid.
    Check(CheckArgs),
    /// Print the version.
    Version,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub dirs: DirFlags,
    /// A YAML file holding what the addon-operator ConfigMap's data holds (values may be YAML
    /// strings or plain mappings)
    #[arg(long, env = "ADDON_OPERATOR_CONFIG_FILE", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Time limit for one hook's --config or enabled script run, e.g. 30s, 2m
    #[arg(long, env = "ADDON_OPERATOR_HOOK_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub hook_timeout: std::time::Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// Log level: error, warn, info, debug, trace
    #[arg(long, env = "LOG_LEVEL", default_value = "info", global = true)]
    pub log_level: String,
    /// Log format
    #[arg(long, env = "LOG_TYPE", value_enum, default_value_t = LogType::Text, global = true)]
    pub log_type: LogType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogType {
    Text,
    Json,
}

/// Parses durations like `500ms`, `30s`, `5m`, `1h`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration such as 30s or 5m"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (use ms, s, m or h)"
            ));
        }
    };
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn check_accepts_working_dir_and_json_output() {
        let cli = Cli::try_parse_from([
            "addon-operator",
            "check",
            "--working-dir",
            "/w",
            "-o",
            "json",
        ])
        .unwrap();
        let Command::Check(args) = cli.command else {
            panic!("not check")
        };
        assert_eq!(args.dirs.working_dir, Some(PathBuf::from("/w")));
        assert_eq!(args.output, OutputFormat::Json);
    }
}
