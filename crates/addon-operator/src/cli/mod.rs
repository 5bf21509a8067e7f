//! The command line: subcommands, their flags and the environment variables behind them.

pub mod check;
pub mod debug;
pub mod graph;
pub mod hook_run;
pub mod progress;
pub mod reload;
pub mod render;
pub mod scaffold;
pub mod start;
pub mod support;
pub mod test;
pub mod upstream_flags;
pub mod values;
pub mod webhook_flags;

use clap::{Parser, Subcommand};

use crate::logging::LogArgs;
use check::CheckArgs;
use hook_run::HookRunArgs;
use start::StartArgs;

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
    /// Run the tree's declarative hook tests (`*.test.yaml`) without a cluster; exit 1 when a
    /// case fails
    Test(Box<crate::cli::test::TestArgs>),
    /// Print the version, git commit and build date.
    Version,
    /// Evaluate jq filters for the operator (its sandbox child process; internal)
    #[command(hide = true)]
    JqSandbox(JqSandboxArgs),
    /// Label helm's rendered manifests `heritage: addon-operator` (helm's post-renderer; internal)
    #[command(hide = true, name = "helm-post-render")]
    HelmPostRender,
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
    /// Write a new hook (bash or python) and its test file, in a module's hooks/ or the global
    /// hooks directory
    New(Box<crate::cli::scaffold::HookNewArgs>),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::check::OutputFormat;
    use crate::cli::support::parse_duration;
    use crate::logging::{LogType, parse_log_level};
    use std::path::PathBuf;
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
        let err = parse_log_level("verbose").unwrap_err().to_string();
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
