//! The `addon-operator` binary: parses the command line and hands over to the chosen command.

use std::process::ExitCode;

use anyhow::Context;

use addon_operator::cli::debug;
use addon_operator::cli::debug::ModuleCommand;
use addon_operator::cli::{Cli, Command, HookCommand};

/// jemalloc keeps allocations of each size class together, so what a burst of watch events
/// allocates and frees leaves whole pages free, which go back to the system; glibc's malloc
/// interleaved them with the long-lived object texts and kept the holes (docs/operations.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let (log, command) = match Cli::parse_or_start(std::env::args_os().collect()) {
        Ok(parsed) => parsed,
        Err(e) => e.exit(),
    };
    addon_operator::logging::init(&log);
    let result = run(command);
    addon_operator::logging::flush();
    match result {
        Ok(code) => code,
        Err(err) => {
            // never panics: a closed or broken stderr only loses the message
            addon_operator::cli::support::print_err(&format!("addon-operator: {err:#}"));
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(args) => addon_operator::cli::check::run_cli(&args),
        Command::Hook(args) => match &args.command {
            HookCommand::Run(run) => addon_operator::cli::hook_run::run_cli(run),
            HookCommand::New(new) => addon_operator::cli::scaffold::hook_new_cli(new),
            HookCommand::List(list) => {
                debug::run_cli(&list.socket.debug_unix_socket, &list.route())
            }
            HookCommand::Snapshot(snap) => {
                debug::run_cli(&snap.socket.debug_unix_socket, &snap.route())
            }
        },
        Command::Start(args) => addon_operator::cli::start::run_cli(&args),
        Command::Test(args) => addon_operator::cli::test::run_cli(&args),
        Command::Queue(args) => debug::run_cli(&args.socket.debug_unix_socket, &args.route()),
        Command::Global(args) => debug::run_cli(&args.socket.debug_unix_socket, &args.route()),
        Command::Module(args) => match &args.command {
            ModuleCommand::Render(render) => addon_operator::cli::render::run_cli(render),
            ModuleCommand::New(new) => addon_operator::cli::scaffold::module_new_cli(new),
            ModuleCommand::Graph(graph) => addon_operator::cli::graph::run_cli(graph),
            _ => debug::run_cli(&args.socket.debug_unix_socket, &args.route()),
        },
        Command::Raw(args) => debug::run_cli(&args.socket.debug_unix_socket, &args.path),
        Command::JqSandbox(args) => addon_operator::edges::jq::run_child(args.memory_limit_bytes),
        Command::HelmPostRender => post_render(),
        Command::Debug(args) => args.run(),
        Command::Version => print(&format!(
            "addon-operator {}\n",
            addon_operator::cli::LONG_VERSION
        )),
        Command::Completion { shell } => print(&addon_operator::cli::completion(shell)),
        Command::Man => print(&addon_operator::cli::man_page()?),
    }
}

/// Helm's post-renderer: manifests on stdin, the same with the release labels on stdout.
fn post_render() -> anyhow::Result<ExitCode> {
    use addon_operator::edges::helm::post_render;
    use std::io::{Read, Write};
    let mut input = String::new();
    std::io::stdin()
        .take(post_render::MAX_MANIFEST_BYTES + 1)
        .read_to_string(&mut input)
        .context("read the rendered manifests from stdin")?;
    if input.len() as u64 > post_render::MAX_MANIFEST_BYTES {
        anyhow::bail!(
            "the rendered manifests exceed {} bytes",
            post_render::MAX_MANIFEST_BYTES
        );
    }
    let extra = std::env::var(post_render::EXTRA_LABELS_ENV).unwrap_or_default();
    let output = post_render::add_labels(&input, &post_render::labels_with(&extra))?;
    std::io::stdout()
        .write_all(output.as_bytes())
        .context("write the labelled manifests to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
fn print(text: &str) -> anyhow::Result<ExitCode> {
    addon_operator::cli::support::print_out(text);
    Ok(ExitCode::SUCCESS)
}
