//! The `addon-operator` binary: parses the command line and hands over to the chosen command.

use std::process::ExitCode;

use addon_operator::cli::{Cli, Command, HookCommand};
use addon_operator::debug_cli;
use addon_operator::debug_cli::ModuleCommand;

fn main() -> ExitCode {
    let cli = Cli::parse_with_default_start();
    addon_operator::logging::init(&cli.log);
    let result = match cli.command {
        Command::Check(args) => addon_operator::check::run_cli(&args),
        Command::Hook(args) => match &args.command {
            HookCommand::Run(run) => addon_operator::hook_run_cli::run_cli(run),
        },
        Command::Start(args) => addon_operator::start::run_cli(&args),
        Command::Queue(args) => debug_cli::run_cli(&args.socket.debug_unix_socket, &args.route()),
        Command::Global(args) => debug_cli::run_cli(&args.socket.debug_unix_socket, &args.route()),
        Command::Module(args) => match &args.command {
            ModuleCommand::Render(render) => addon_operator::render::run_cli(render),
            _ => debug_cli::run_cli(&args.socket.debug_unix_socket, &args.route()),
        },
        Command::Raw(args) => debug_cli::run_cli(&args.socket.debug_unix_socket, &args.path),
        Command::JqSandbox(args) => addon_operator::jq_sandbox::run_child(args.memory_limit_bytes),
        Command::Version => {
            println!("addon-operator {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("addon-operator: {err:#}");
            ExitCode::FAILURE
        }
    }
}
