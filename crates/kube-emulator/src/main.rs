//! `kube-emulator` binary: serve the emulator on loopback until SIGINT or SIGTERM.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use kube_emulator::{Emulator, EmulatorConfig};

/// A Kubernetes API server emulator on 127.0.0.1 for tests and local runs.
#[derive(Debug, Parser)]
#[command(name = "kube-emulator", version)]
struct Cli {
    /// Port to listen on at 127.0.0.1 (0 picks a free port; the URL is printed on stdout).
    #[arg(long, env = "KUBE_EMULATOR_PORT", default_value_t = 0)]
    port: u16,
    /// Directory keeping the state across restarts and crashes (snapshot + fsync'ed log);
    /// without it the state lives in memory only.
    #[arg(long, env = "KUBE_EMULATOR_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Write a kubeconfig pointing at the emulator to this path once it listens.
    #[arg(long, env = "KUBE_EMULATOR_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Number of recent events watches can resume from (older versions get 410 Gone).
    #[arg(long, env = "KUBE_EMULATOR_HISTORY_LIMIT", default_value_t = 10_000)]
    history_limit: usize,
    /// Seconds between BOOKMARK events on watches that allow them.
    #[arg(long, env = "KUBE_EMULATOR_BOOKMARK_SECONDS", default_value_t = 5)]
    bookmark_seconds: u64,
    /// Leave status alone: no simulated ready workloads, complete jobs, bound claims, running pods.
    #[arg(long, env = "KUBE_EMULATOR_NO_SIMULATED_STATUS")]
    no_simulated_status: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = EmulatorConfig {
        port: cli.port,
        data_dir: cli.data_dir,
        history_limit: cli.history_limit,
        bookmark_interval: Duration::from_secs(cli.bookmark_seconds.max(1)),
        simulate_status: !cli.no_simulated_status,
        ..EmulatorConfig::default()
    };
    let mut handle = Emulator::start(config)
        .await
        .context("starting the emulator")?;
    if let Some(path) = &cli.kubeconfig {
        handle
            .write_kubeconfig(path)
            .context("writing the kubeconfig")?;
    }
    println!("kube-emulator listening on {}", handle.url());
    wait_for_signal().await?;
    handle.stop().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
        _ = term.recv() => {}
    }
    Ok(())
}
