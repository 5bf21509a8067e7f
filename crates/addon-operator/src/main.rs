//! The `addon-operator` binary: parses the command line and hands over to the chosen command.

use std::process::ExitCode;

use addon_operator::cli::{Cli, Command};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    addon_operator::logging::init(&cli.log);
    let result = match cli.command {
        Command::Check(args) => addon_operator::check::run_cli(&args),
        Command::Start(args) => addon_operator::start::run_cli(&args),
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
