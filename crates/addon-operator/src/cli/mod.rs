//! The command line: subcommands, their flags and the environment variables behind them.

pub mod check;
pub mod debug;
pub mod dirs;
pub mod hook_run;
pub mod render;
pub mod start;
pub mod upstream_flags;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::cli::dirs::DirFlags;
use crate::cli::upstream_flags::shell_operator_default;

/// `--version`: the crate version, the git commit and the build date set by build.rs.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("ADDON_OPERATOR_GIT_COMMIT"),
    ", built ",
    env!("ADDON_OPERATOR_BUILD_DATE"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "addon-operator",
    version = LONG_VERSION,
    about = "Installs and keeps cluster add-ons: Helm charts, hooks and values",
    after_help = "Without a command, addon-operator runs `start`."
)]
pub struct Cli {
    #[command(flatten)]
    pub log: LogArgs,
    /// The command; none means `start` (as upstream)
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Parses the command line; without a command (`addon-operator`, `addon-operator --ha`)
    /// it is parsed as `start` with the same flags, as upstream's default command.
    pub fn parse_or_start(
        args: Vec<std::ffi::OsString>,
    ) -> Result<(LogArgs, Command), clap::Error> {
        let first = Self::try_parse_from(&args);
        let starts_with_flag = args
            .get(1)
            .is_some_and(|a| a.to_string_lossy().starts_with('-'));
        match first {
            Ok(Cli {
                log,
                command: Some(command),
            }) => Ok((log, command)),
            Ok(_) => Self::parse_as_start(args),
            Err(e) if e.kind() == clap::error::ErrorKind::UnknownArgument && starts_with_flag => {
                Self::parse_as_start(args)
            }
            Err(e) => Err(e),
        }
    }

    fn parse_as_start(args: Vec<std::ffi::OsString>) -> Result<(LogArgs, Command), clap::Error> {
        let mut args = args.into_iter();
        let with_start = args.next().into_iter().chain(["start".into()]).chain(args);
        let cli = Self::try_parse_from(with_start)?;
        let log = cli.log;
        cli.command.map(|command| (log, command)).ok_or_else(|| {
            use clap::CommandFactory;
            Self::command().error(clap::error::ErrorKind::MissingSubcommand, "no command")
        })
    }
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
    /// Print the version, git commit and build date.
    Version,
    /// Evaluate jq filters for the operator (its sandbox child process; internal)
    #[command(hide = true)]
    JqSandbox(JqSandboxArgs),
    /// Print a shell completion script: `source <(addon-operator completion bash)`
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `addon-operator man > addon-operator.1`
    Man,
    /// Change a running operator's runtime settings (debug API)
    Debug(crate::cli::debug::DebugArgs),
    /// Show the task queues of a running operator (debug API)
    Queue(crate::cli::debug::QueueArgs),
    /// Show global hooks and values of a running operator (debug API)
    Global(crate::cli::debug::GlobalArgs),
    /// Show enabled modules and module values of a running operator (debug API)
    Module(crate::cli::debug::ModuleArgs),
    /// GET any debug API route of a running operator, e.g. /queue/list.json
    Raw(crate::cli::debug::RawArgs),
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
    /// Directory for the temporary files of hook runs [fallback env: SHELL_OPERATOR_TMP_DIR]
    #[arg(
        long,
        env = "ADDON_OPERATOR_TMP_DIR",
        default_value = shell_operator_default("SHELL_OPERATOR_TMP_DIR", "/tmp/addon-operator")
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
    /// CPU time limit of one jq evaluation request (a binding's jqFilter on up to 256 objects, or
    /// a JQPatch), in whole seconds; past it the filter fails and its sandbox process is restarted
    #[arg(long, env = "ADDON_OPERATOR_JQ_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub jq_timeout: std::time::Duration,
    /// Address-space limit of the jq sandbox process, in MiB (at least 512)
    #[arg(
        long,
        env = "ADDON_OPERATOR_JQ_MEMORY_LIMIT_MIB",
        default_value_t = 1024,
        value_parser = clap::value_parser!(u64).range(512..)
    )]
    pub jq_memory_limit_mib: u64,
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
    /// Namespace of Helm releases and of the addon-operator ConfigMap; without it, the pod's own
    /// namespace (in a cluster), else `default` [fallback env: SHELL_OPERATOR_NAMESPACE]
    #[arg(
        long,
        env = "ADDON_OPERATOR_NAMESPACE",
        default_value = shell_operator_default("SHELL_OPERATOR_NAMESPACE", "")
    )]
    pub namespace: String,
    /// The helm binary (3.x or 4.x)
    #[arg(long, env = "HELM_BINARY", default_value = "helm")]
    pub helm_binary: PathBuf,
    /// A Helm release in the namespace that is not a module's and is never purged at startup
    #[arg(long, env = "HELM_IGNORE_RELEASE", default_value = "")]
    pub helm_ignore_release: String,
    #[command(flatten)]
    pub upstream: crate::cli::upstream_flags::UpstreamArgs,
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
        default_value = crate::edges::kube::leader::DEFAULT_LEASE_NAME
    )]
    pub ha_lease_name: String,
    #[command(flatten)]
    pub http: crate::edges::http::HttpArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct JqSandboxArgs {
    /// Address-space limit (RLIMIT_AS) of this process
    #[arg(long)]
    pub memory_limit_bytes: u64,
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
    /// Hooks of a running operator with their bindings (debug API)
    List(crate::cli::debug::HookListArgs),
    /// Kubernetes snapshots of one hook of a running operator (debug API)
    Snapshot(crate::cli::debug::HookSnapshotArgs),
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

/// The completion script of `shell` for the whole command line.
pub fn completion(shell: clap_complete::Shell) -> String {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "addon-operator", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The man page (roff) of the command line, with a section per subcommand.
pub fn man_page() -> anyhow::Result<String> {
    use clap::CommandFactory;
    let command = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .map_err(|e| anyhow::anyhow!("render the man page: {e}"))?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("addon-operator {}", sub.get_name());
        let sub = sub.clone().display_name(name.clone()).bin_name(name);
        let man = clap_mangen::Man::new(sub);
        let _ = writeln_roff(&mut out, &man);
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Appends a subcommand's NAME/SYNOPSIS/DESCRIPTION/OPTIONS as a section of the main page.
fn writeln_roff(out: &mut Vec<u8>, man: &clap_mangen::Man) -> std::io::Result<()> {
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    man.render_subcommands_section(out)
}

/// Runs a command's async body on a multi-thread tokio runtime.
pub fn block_on<T>(body: impl std::future::Future<Output = T>) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("start the async runtime: {e}"))?;
    Ok(runtime.block_on(body))
}

/// A log level name (upstream's `warning` and `fatal` too) or a `RUST_LOG`-style filter with `=`.
pub fn parse_log_level(text: &str) -> Result<String, String> {
    let level = text.trim().to_ascii_lowercase();
    match level.as_str() {
        "error" | "warn" | "info" | "debug" | "trace" => Ok(level),
        "warning" => Ok("warn".into()),
        "fatal" => Ok("error".into()),
        _ if text.contains('=') => Ok(text.trim().to_string()),
        _ => Err(format!(
            "unknown log level '{text}' (expected error, warn, info, debug, trace, or a filter such as info,addon_operator::edges::helm=debug)"
        )),
    }
}

/// Parses Go-style durations (`500ms`, `30s`, `1m30s`, `1h`), like the Go operator's flags.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    addon_core::hook_config::parse_go_duration(text.trim()).map_err(|e| e.to_string())
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
    fn log_levels_are_names_or_filters() {
        assert_eq!(parse_log_level("DEBUG").unwrap(), "debug");
        assert_eq!(parse_log_level("warning").unwrap(), "warn");
        assert_eq!(parse_log_level("fatal").unwrap(), "error");
        assert_eq!(
            parse_log_level("info,addon_operator::edges::helm=debug").unwrap(),
            "info,addon_operator::edges::helm=debug"
        );
        let err = parse_log_level("verbose").unwrap_err();
        assert!(err.contains("unknown log level 'verbose'"), "{err}");
    }

    #[test]
    fn command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    fn parse(args: &[&str]) -> Result<(LogArgs, Command), clap::Error> {
        Cli::parse_or_start(args.iter().map(Into::into).collect())
    }

    #[test]
    fn without_a_command_the_operator_starts_with_the_given_flags() {
        let (_, command) = parse(&["addon-operator"]).unwrap();
        assert!(matches!(command, Command::Start(_)));
        let (log, command) = parse(&["addon-operator", "--log-type", "json", "--ha"]).unwrap();
        let Command::Start(args) = command else {
            panic!("not start")
        };
        assert!(args.ha);
        assert_eq!(log.log_type, LogType::Json);
        let (_, command) = parse(&["addon-operator", "check"]).unwrap();
        assert!(matches!(command, Command::Check(_)));
        let err = parse(&["addon-operator", "--no-such-flag"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    #[test]
    fn start_is_the_default_command() {
        let parse = |args: &[&str]| parse(args).unwrap().1;
        assert!(matches!(parse(&["addon-operator"]), Command::Start(_)));
        let command = parse(&[
            "addon-operator",
            "--namespace",
            "ns",
            "--helm-history-max",
            "3",
        ]);
        let Command::Start(args) = command else {
            panic!("not start")
        };
        assert_eq!(args.namespace, "ns");
        assert_eq!(args.upstream.helm_history_max, 3);
        assert!(matches!(
            parse(&["addon-operator", "check"]),
            Command::Check(_)
        ));
        let command = parse(&["addon-operator", "--log-level", "debug", "check"]);
        assert!(matches!(command, Command::Check(_)));
    }

    #[test]
    fn helm_history_and_timeout_default_like_upstream_and_can_be_set() {
        let start = |extra: &[&str]| {
            let argv: Vec<&str> = ["addon-operator", "start"]
                .iter()
                .chain(extra)
                .copied()
                .collect();
            match parse(&argv).unwrap().1 {
                Command::Start(args) => {
                    (args.upstream.helm_history_max, args.upstream.helm_timeout)
                }
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
        let Some(Command::Check(args)) = cli.command else {
            panic!("not check")
        };
        assert_eq!(args.dirs.working_dir, Some(PathBuf::from("/w")));
        assert_eq!(args.output, OutputFormat::Json);
    }
}
