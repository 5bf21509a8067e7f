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
    /// Run the operator: global hooks, 'reload all modules', then react to schedules,
    /// Kubernetes events and config edits until SIGINT or SIGTERM.
    Start(Box<StartArgs>),
    /// Run one hook locally with a binding context, on the tree's values, and print what it
    /// changed (for module authors; no running operator needed)
    Hook(HookArgs),
    /// Print the version.
    Version,
    /// Show the task queues of a running operator (debug API)
    Queue(crate::debug_cli::QueueArgs),
    /// Show global hooks and values of a running operator (debug API)
    Global(crate::debug_cli::GlobalArgs),
    /// Show enabled modules and module values of a running operator (debug API)
    Module(crate::debug_cli::ModuleArgs),
    /// GET any debug API route of a running operator, e.g. /queue/list.json
    Raw(crate::debug_cli::RawArgs),
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

#[derive(Debug, Clone, clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    pub dirs: DirFlags,
    /// The local config store: a YAML file with what the addon-operator ConfigMap's data holds.
    /// It is watched; hooks' config patches are written back to it. Without it the config lives
    /// in memory only
    #[arg(long, env = "ADDON_OPERATOR_CONFIG_FILE", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Directory for the temporary files of hook runs
    #[arg(
        long,
        env = "ADDON_OPERATOR_TMP_DIR",
        default_value = "/tmp/addon-operator"
    )]
    pub tmp_dir: PathBuf,
    /// Keep the temporary files of hook runs (for debugging)
    #[arg(long, env = "DEBUG_KEEP_TMP_FILES", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub debug_keep_tmp_files: bool,
    /// Time limit of one hook run; the hook's process group is killed after it
    #[arg(long, env = "ADDON_OPERATOR_HOOK_TIMEOUT", default_value = "30m", value_parser = parse_duration)]
    pub hook_timeout: std::time::Duration,
    /// Between SIGTERM and SIGKILL when a hook times out or the operator stops
    #[arg(long, env = "ADDON_OPERATOR_HOOK_KILL_GRACE", default_value = "10s", value_parser = parse_duration)]
    pub hook_kill_grace: std::time::Duration,
    /// First retry delay of a failed task; delays double up to --retry-max-delay
    #[arg(long, env = "ADDON_OPERATOR_RETRY_INITIAL_DELAY", default_value = "5s", value_parser = parse_duration)]
    pub retry_initial_delay: std::time::Duration,
    /// Longest retry delay of a failed task
    #[arg(long, env = "ADDON_OPERATOR_RETRY_MAX_DELAY", default_value = "30s", value_parser = parse_duration)]
    pub retry_max_delay: std::time::Duration,
    /// How often each module's release is checked for drift (objects missing from the cluster,
    /// a failed release); a drifted module runs again. 0 turns the check off
    #[arg(long, env = "ADDON_OPERATOR_RESOURCES_MONITOR_INTERVAL", default_value = "4m30s", value_parser = parse_duration)]
    pub resources_monitor_interval: std::time::Duration,
    /// Namespace of Helm releases and of the addon-operator ConfigMap
    #[arg(long, env = "ADDON_OPERATOR_NAMESPACE", default_value = "")]
    pub namespace: String,
    /// The helm binary (3.x or 4.x)
    #[arg(long, env = "HELM_BINARY", default_value = "helm")]
    pub helm_binary: PathBuf,
    /// Revisions helm keeps per release (helm's `--history-max`); 0 keeps every revision
    #[arg(long, env = "HELM_HISTORY_MAX", default_value_t = 10)]
    pub helm_history_max: u32,
    /// How long helm may take for an upgrade or uninstall (helm's `--timeout`)
    #[arg(long, env = "HELM_TIMEOUT", default_value = "20m", value_parser = parse_duration)]
    pub helm_timeout: std::time::Duration,
    /// A Helm release in the namespace that is not a module's and is never purged at startup
    #[arg(long, env = "HELM_IGNORE_RELEASE", default_value = "")]
    pub helm_ignore_release: String,
    /// Run against an in-process Kubernetes API emulator (no cluster needed): hooks, kubectl and
    /// helm get its KUBECONFIG
    #[arg(long, env = "ADDON_OPERATOR_EMBEDDED_CLUSTER", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub embedded_cluster: bool,
    /// Keep the embedded cluster's objects in this directory across restarts
    #[arg(
        long,
        env = "ADDON_OPERATOR_EMBEDDED_CLUSTER_DATA_DIR",
        value_name = "DIR"
    )]
    pub embedded_cluster_data_dir: Option<PathBuf>,
    /// Port of the embedded cluster on 127.0.0.1 (0 picks a free one)
    #[arg(
        long,
        env = "ADDON_OPERATOR_EMBEDDED_CLUSTER_PORT",
        default_value_t = 0
    )]
    pub embedded_cluster_port: u16,
    /// Kubeconfig of the cluster to manage (in a pod, the service account is used without it)
    #[arg(long, env = "KUBE_CONFIG", value_name = "FILE")]
    pub kube_config: Option<PathBuf>,
    /// Name of the config ConfigMap (used with a cluster and no --config-file)
    #[arg(
        long,
        env = "ADDON_OPERATOR_CONFIG_MAP",
        default_value = "addon-operator"
    )]
    pub config_map: String,
    /// Several replicas: only the holder of the Lease (--ha-lease-name) in --namespace
    /// works; the others wait (needs a cluster)
    #[arg(long, env = "ADDON_OPERATOR_HA", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub ha: bool,
    /// This replica's identity in the Lease (the pod name)
    #[arg(long, env = "ADDON_OPERATOR_POD", default_value = "")]
    pub pod_name: String,
    /// With --ha: a leader that has not renewed the Lease for this long loses it
    #[arg(long, env = "ADDON_OPERATOR_HA_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub ha_lease_duration: std::time::Duration,
    /// With --ha: the Lease in --namespace that replicas compete for (the Go operator's name by
    /// default, so that Go and Rust replicas never lead together)
    #[arg(
        long,
        env = "ADDON_OPERATOR_HA_LEASE_NAME",
        default_value = crate::kube::leader::DEFAULT_LEASE_NAME
    )]
    pub ha_lease_name: String,
    #[command(flatten)]
    pub http: crate::http::HttpArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub command: HookCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum HookCommand {
    /// Run one hook and print its binding context, its patches and the values after them
    Run(Box<HookRunArgs>),
}

#[derive(Debug, Clone, clap::Args)]
pub struct HookRunArgs {
    /// The hook's name as `check` shows it (e.g. `hooks/prepare-greeting`)
    pub hook: String,
    /// The hook's module (kebab-case); without it the hook is a global hook
    #[arg(long)]
    pub module: Option<String>,
    /// The binding to run: onStartup, beforeAll, afterAll, beforeHelm, afterHelm,
    /// beforeDeleteHelm, afterDeleteHelm, or the name of a schedule or kubernetes binding
    #[arg(long, default_value = "onStartup")]
    pub binding: String,
    /// For a kubernetes binding: a JSON or YAML list of objects for its Synchronization context
    #[arg(long, value_name = "FILE")]
    pub objects: Option<PathBuf>,
    #[command(flatten)]
    pub dirs: DirFlags,
    /// The config (what the ConfigMap's data holds); read, never written
    #[arg(long, env = "ADDON_OPERATOR_CONFIG_FILE", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Time limit of the run
    #[arg(long, env = "ADDON_OPERATOR_HOOK_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    pub hook_timeout: std::time::Duration,
}

#[derive(Debug, Clone, clap::Args)]
pub struct RenderArgs {
    /// The module (kebab-case name)
    pub module: String,
    #[command(flatten)]
    pub dirs: DirFlags,
    /// The config (what the ConfigMap's data holds); read once, never written
    #[arg(long, env = "ADDON_OPERATOR_CONFIG_FILE", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Time limit of one hook run
    #[arg(long, env = "ADDON_OPERATOR_HOOK_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    pub hook_timeout: std::time::Duration,
    /// Give up when the first 'reload all modules' has not finished by then
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Namespace passed to helm template
    #[arg(long, env = "ADDON_OPERATOR_NAMESPACE", default_value = "")]
    pub namespace: String,
    /// The helm binary (3.x or 4.x)
    #[arg(long, env = "HELM_BINARY", default_value = "helm")]
    pub helm_binary: PathBuf,
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
    addon_core::hook_config::parse_go_duration(text.trim())
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
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert!(parse_duration("2").is_err(), "a unit is required");
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn helm_history_and_timeout_default_like_upstream_and_can_be_set() {
        let start = |extra: &[&str]| {
            let argv = ["addon-operator", "start"].iter().chain(extra).copied();
            match Cli::try_parse_from(argv).unwrap().command {
                Command::Start(args) => (args.helm_history_max, args.helm_timeout),
                _ => panic!("not start"),
            }
        };
        assert_eq!(start(&[]), (10, Duration::from_secs(1200)));
        assert_eq!(
            start(&["--helm-history-max", "3", "--helm-timeout", "5m"]),
            (3, Duration::from_secs(300))
        );
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
