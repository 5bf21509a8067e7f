//! Client side of the debug API: `addon-operator queue|global|module|hook|debug|raw ...` ask a
//! running operator over its unix socket and print the answer.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;

use crate::edges::http::{DEFAULT_DEBUG_SOCKET, Format};

/// A debug API request that failed.
#[derive(Debug, thiserror::Error)]
pub enum DebugClientError {
    #[error("cannot connect to {}: is addon-operator running?", socket.display())]
    Connect {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("request {path} over {}", socket.display())]
    Request {
        socket: PathBuf,
        path: String,
        #[source]
        source: hyper::Error,
    },
    #[error("build request {path}")]
    BuildRequest {
        path: String,
        #[source]
        source: hyper::http::Error,
    },
    #[error("start the client runtime")]
    Runtime(#[source] std::io::Error),
    #[error("{path}: HTTP {status}: {body}")]
    Status {
        path: String,
        status: u16,
        body: String,
    },
}

impl DebugClientError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Connect { .. } => "debug_connect",
            Self::Request { .. } | Self::BuildRequest { .. } => "debug_request",
            Self::Runtime(_) => "debug_runtime",
            Self::Status { .. } => "debug_status",
        }
    }
}

/// `--debug-unix-socket`, shared by every debug client command.
#[derive(Debug, Clone, clap::Args)]
pub struct SocketArgs {
    /// Unix socket of the running operator's debug API
    #[arg(long, env = "DEBUG_UNIX_SOCKET", default_value = DEFAULT_DEBUG_SOCKET, global = true)]
    pub debug_unix_socket: PathBuf,
}

/// `addon-operator queue ...`
#[derive(Debug, Clone, clap::Args)]
pub struct QueueArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    #[command(subcommand)]
    pub command: QueueCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum QueueCommand {
    /// All queues with their tasks and a summary
    List {
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
        output: Format,
        /// Also list empty queues
        #[arg(short = 'e', long)]
        show_empty: bool,
    },
    /// The main queue
    Main {
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
        output: Format,
    },
}

/// `addon-operator global ...`
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    #[command(subcommand)]
    pub command: GlobalCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum GlobalCommand {
    /// Names of the global hooks
    List(OutputArg),
    /// Effective global values
    Values(OutputArg),
    /// Global config values (ConfigMap or config file)
    Config(OutputArg),
    /// JSON patches hooks applied to global values
    Patches(OutputArg),
    /// Kubernetes snapshots of the global hooks
    Snapshots(OutputArg),
}

/// `-o` of the `global` and `module` commands (YAML by default, like upstream).
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArg {
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
}

/// `addon-operator module ...`
#[derive(Debug, Clone, clap::Args)]
pub struct ModuleArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    #[command(subcommand)]
    pub command: ModuleCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ModuleCommand {
    /// Run the tree locally as the operator would (no cluster) and print the manifests Helm
    /// would install for a module; does not need a running operator
    Render(Box<crate::cli::render::RenderArgs>),
    /// Write a new module directory (chart, values, schemas, a hook with its tests, optionally an
    /// enabled script) that passes `check` and `test` as written; does not need a running operator
    New(Box<crate::cli::scaffold::ModuleNewArgs>),
    /// Print the module graph (weights, and the modules each module requires in its
    /// module.yaml) as Graphviz DOT, from the tree alone; does not need a running operator
    Graph(Box<crate::cli::graph::GraphArgs>),
    /// Names of the enabled modules
    List(OutputArg),
    /// Effective values of a module
    Values(ModuleValuesArgs),
    /// Config values of a module
    Config(ModuleValuesArgs),
    /// JSON patches hooks applied to a module's values
    Patches(ModuleNameArgs),
    /// Kubernetes snapshots of a module's hooks
    Snapshots(ModuleNameArgs),
    /// Resources the resource monitor watches, by module
    ResourceMonitor(OutputArg),
}

#[derive(Debug, Clone, clap::Args)]
pub struct ModuleValuesArgs {
    /// Module name (kebab-case)
    pub name: String,
    /// Also show the global section
    #[arg(short = 'g', long)]
    pub global: bool,
    #[command(flatten)]
    pub output: OutputArg,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ModuleNameArgs {
    /// Module name (kebab-case)
    pub name: String,
    #[command(flatten)]
    pub output: OutputArg,
}

/// `addon-operator hook list`
#[derive(Debug, Clone, clap::Args)]
pub struct HookListArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// `addon-operator hook snapshot NAME [--module M]`
#[derive(Debug, Clone, clap::Args)]
pub struct HookSnapshotArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    /// The hook's name as `hook list` shows it (e.g. `hooks/watch-configmap`)
    pub name: String,
    /// The hook's module; without it the hook is a global hook
    #[arg(long)]
    pub module: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
}

impl HookListArgs {
    /// The route this command asks for.
    pub fn route(&self) -> String {
        format!("/hook/list.{}", self.output.extension())
    }
}

impl HookSnapshotArgs {
    /// The route this command asks for.
    pub fn route(&self) -> String {
        let query = self
            .module
            .as_ref()
            .map_or_else(String::new, |m| format!("?module={m}"));
        let name = self.name.trim_matches('/');
        format!("/hook/{name}/snapshots.{}{query}", self.output.extension())
    }
}

/// `addon-operator debug ...`
#[derive(Debug, Clone, clap::Args)]
pub struct DebugArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    #[command(subcommand)]
    pub command: DebugCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum DebugCommand {
    /// Show the log level, or set it (error, warn, info, debug, trace); `debug` reverts after
    /// 30 minutes, any level given a duration reverts after it
    LogLevel {
        /// The new level; without it the current one is printed
        level: Option<String>,
        /// How long the new level lasts (`10m`, `1h`); `debug` defaults to 30m
        #[arg(requires = "level", value_parser = crate::cli::support::parse_duration)]
        duration: Option<std::time::Duration>,
    },
    /// Runtime settings that `log-level` changes, e.g. `log.level`
    Config {
        #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
        output: Format,
    },
}

impl DebugArgs {
    /// Runs the command: a GET for reading, a POST to `/config/set` for changing.
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let socket = &self.socket.debug_unix_socket;
        match &self.command {
            DebugCommand::LogLevel { level: None, .. } => print_log_level(socket),
            DebugCommand::LogLevel {
                level: Some(level),
                duration,
            } => {
                let mut route = format!("/config/set?name=log.level&value={}", level.trim());
                if let Some(duration) = duration {
                    route.push_str(&format!("&duration={}ms", duration.as_millis()));
                }
                run_request(socket, hyper::Method::POST, &route)
            }
            DebugCommand::Config { output } => {
                run_cli(socket, &format!("/config/list.{}", output.extension()))
            }
        }
    }
}

/// Prints the `log.level` entry of `/config/list.json`.
fn print_log_level(socket: &Path) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(DebugClientError::Runtime)?;
    let body = runtime.block_on(get(socket, "/config/list.json"))?;
    let doc: serde_json::Value = serde_json::from_str(&body)
        .map_err(|e| anyhow::anyhow!("/config/list.json is not JSON: {e}"))?;
    let level = doc["log.level"].as_str().unwrap_or("unknown");
    crate::cli::support::print_out(&format!("{level}\n"));
    Ok(ExitCode::SUCCESS)
}

/// `addon-operator raw PATH`
#[derive(Debug, Clone, clap::Args)]
pub struct RawArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    /// Path and query of any debug API route, e.g. /queue/list.json?showEmpty=true
    pub path: String,
}

impl QueueArgs {
    /// The route this command asks for.
    pub fn route(&self) -> String {
        match &self.command {
            QueueCommand::List { output, show_empty } => {
                let query = if *show_empty { "?showEmpty=true" } else { "" };
                format!("/queue/list.{}{query}", output.extension())
            }
            QueueCommand::Main { output } => format!("/queue/main.{}", output.extension()),
        }
    }
}

impl GlobalArgs {
    /// The route this command asks for.
    pub fn route(&self) -> String {
        let (name, out) = match &self.command {
            GlobalCommand::List(o) => ("list", o),
            GlobalCommand::Values(o) => ("values", o),
            GlobalCommand::Config(o) => ("config", o),
            GlobalCommand::Patches(o) => ("patches", o),
            GlobalCommand::Snapshots(o) => ("snapshots", o),
        };
        format!("/global/{name}.{}", out.output.extension())
    }
}

impl ModuleArgs {
    /// The route this command asks for (empty for `render`, which runs locally).
    pub fn route(&self) -> String {
        match &self.command {
            ModuleCommand::Render(_) | ModuleCommand::New(_) | ModuleCommand::Graph(_) => {
                String::new()
            }
            ModuleCommand::List(o) => format!("/module/list.{}", o.output.extension()),
            ModuleCommand::ResourceMonitor(o) => {
                format!("/module/resource-monitor.{}", o.output.extension())
            }
            ModuleCommand::Values(a) => values_route(a, "values"),
            ModuleCommand::Config(a) => values_route(a, "config"),
            ModuleCommand::Patches(a) => named_route(a, "patches"),
            ModuleCommand::Snapshots(a) => named_route(a, "snapshots"),
        }
    }
}

fn values_route(args: &ModuleValuesArgs, what: &str) -> String {
    let query = if args.global { "?global=true" } else { "" };
    let ext = args.output.output.extension();
    format!("/module/{}/{what}.{ext}{query}", args.name)
}

fn named_route(args: &ModuleNameArgs, what: &str) -> String {
    format!(
        "/module/{}/{what}.{}",
        args.name,
        args.output.output.extension()
    )
}

/// Runs a debug client command: GET `route` over `socket`, print the body to stdout.
pub fn run_cli(socket: &Path, route: &str) -> anyhow::Result<ExitCode> {
    run_request(socket, hyper::Method::GET, route)
}

fn run_request(socket: &Path, method: hyper::Method, route: &str) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(DebugClientError::Runtime)?;
    let mut body = runtime.block_on(request(socket, method, route))?;
    if !body.ends_with('\n') {
        body.push('\n');
    }
    crate::cli::support::print_out(&body);
    Ok(ExitCode::SUCCESS)
}

/// GET `path` from the debug API on `socket`; non-2xx answers are errors carrying the body.
pub async fn get(socket: &Path, path: &str) -> Result<String, DebugClientError> {
    request(socket, hyper::Method::GET, path).await
}

/// POST `path` (parameters in the query) to the debug API on `socket`.
pub async fn post(socket: &Path, path: &str) -> Result<String, DebugClientError> {
    request(socket, hyper::Method::POST, path).await
}

async fn request(
    socket: &Path,
    method: hyper::Method,
    path: &str,
) -> Result<String, DebugClientError> {
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|source| DebugClientError::Connect {
            socket: socket.to_path_buf(),
            source,
        })?;
    let request_error = |source| DebugClientError::Request {
        socket: socket.to_path_buf(),
        path: path.to_string(),
        source,
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(request_error)?;
    let driver = tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "localhost")
        .body(Empty::<Bytes>::new())
        .map_err(|source| DebugClientError::BuildRequest {
            path: path.to_string(),
            source,
        })?;
    let response = sender.send_request(request).await.map_err(request_error)?;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(request_error)?
        .to_bytes();
    driver.abort();
    let body = String::from_utf8_lossy(&bytes).into_owned();
    if (200..300).contains(&status) {
        Ok(body)
    } else {
        Err(DebugClientError::Status {
            path: path.to_string(),
            status,
            body: body.trim_end().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Command {
        Queue(QueueArgs),
        Global(GlobalArgs),
        Module(ModuleArgs),
        #[command(subcommand)]
        Hook(Hook),
    }

    #[derive(Debug, clap::Subcommand)]
    enum Hook {
        List(HookListArgs),
        Snapshot(HookSnapshotArgs),
    }

    fn route(args: &[&str]) -> String {
        let cli =
            Cli::try_parse_from(std::iter::once("addon-operator").chain(args.iter().copied()))
                .unwrap();
        match cli.command {
            Command::Queue(a) => a.route(),
            Command::Global(a) => a.route(),
            Command::Module(a) => a.route(),
            Command::Hook(Hook::List(a)) => a.route(),
            Command::Hook(Hook::Snapshot(a)) => a.route(),
        }
    }

    #[test]
    fn commands_ask_for_upstream_routes_with_upstream_default_formats() {
        assert_eq!(route(&["queue", "list"]), "/queue/list.text");
        assert_eq!(
            route(&["queue", "list", "-o", "json", "-e"]),
            "/queue/list.json?showEmpty=true"
        );
        assert_eq!(route(&["queue", "main"]), "/queue/main.text");
        assert_eq!(route(&["global", "values"]), "/global/values.yaml");
        assert_eq!(
            route(&["global", "list", "-o", "json"]),
            "/global/list.json"
        );
        assert_eq!(route(&["module", "list"]), "/module/list.yaml");
        assert_eq!(
            route(&["module", "values", "cert-manager", "-g", "-o", "json"]),
            "/module/cert-manager/values.json?global=true"
        );
        assert_eq!(
            route(&["module", "config", "alpha"]),
            "/module/alpha/config.yaml"
        );
        assert_eq!(
            route(&["module", "snapshots", "alpha"]),
            "/module/alpha/snapshots.yaml"
        );
        assert_eq!(
            route(&["module", "resource-monitor"]),
            "/module/resource-monitor.yaml"
        );
        assert_eq!(route(&["hook", "list"]), "/hook/list.text");
        assert_eq!(route(&["hook", "list", "-o", "json"]), "/hook/list.json");
        assert_eq!(
            route(&["hook", "snapshot", "hooks/watch", "--module", "echo-server"]),
            "/hook/hooks/watch/snapshots.yaml?module=echo-server"
        );
        assert_eq!(
            route(&["hook", "snapshot", "hooks/global", "-o", "json"]),
            "/hook/hooks/global/snapshots.json"
        );
    }

    #[test]
    fn the_socket_flag_is_accepted_after_the_subcommand() {
        let cli = Cli::try_parse_from([
            "addon-operator",
            "queue",
            "list",
            "--debug-unix-socket",
            "/tmp/x.socket",
        ])
        .unwrap();
        let Command::Queue(args) = cli.command else {
            panic!("not queue")
        };
        assert_eq!(
            args.socket.debug_unix_socket,
            PathBuf::from("/tmp/x.socket")
        );
    }

    #[tokio::test]
    async fn a_missing_socket_says_the_operator_is_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("none.socket");
        let err = get(&socket, "/queue/list").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot connect to {}: is addon-operator running?",
                socket.display()
            )
        );
        assert_eq!(err.category(), "debug_connect");
    }
}
