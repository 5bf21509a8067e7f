//! `addon-operator check`: discovers a module tree, asks every hook for its bindings, loads and
//! validates config and values, computes enabled modules, and reports every problem found.

pub mod report;

use std::process::ExitCode;

use addon_core::error::error_chain;
use anyhow::Context as _;

use crate::edges::tree::dirs;
use std::path::PathBuf;

use clap::ValueEnum;

use crate::cli::support::parse_duration;
use crate::edges::exec::hook_run::HookRunSettings;
use crate::edges::tree::configs::HookConfigs;
use crate::edges::tree::dirs::DirFlags;
use crate::edges::tree::hook_configs::ConfigRunOptions;
use crate::edges::tree::{self as loader, LoaderConfig};
use report::HookReport;
use report::{CheckReport, ModuleReport};

/// Runs `check` for the command line and prints the report.
pub fn run_cli(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let progress = crate::cli::progress::Progress::on_stderr("check");
    let report = crate::cli::support::block_on(run_showing(args, &progress))?;
    progress.finish();
    let text = match args.output {
        OutputFormat::Json => serde_json::to_string_pretty(&report).context("render the report")?,
        OutputFormat::Text => report.to_text(),
    };
    crate::cli::support::print_out(&format!("{text}\n"));
    Ok(if report.is_valid() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Builds the report for a tree.
pub async fn run(args: &CheckArgs) -> CheckReport {
    run_showing(args, &crate::cli::progress::Progress::hidden()).await
}

/// [`run`], saying what it does on `progress`.
async fn run_showing(args: &CheckArgs, progress: &crate::cli::progress::Progress) -> CheckReport {
    progress.phase("reading the tree");
    let dirs = dirs::resolve(&args.dirs, &|name| std::env::var(name).ok());
    let test_paths: Vec<PathBuf> = std::iter::once(dirs.global_hooks_dir.clone())
        .chain(dirs.modules_dirs.iter().cloned())
        .filter(|d| d.is_dir())
        .collect();
    let (mut found, load_errors) = loader::load(&LoaderConfig {
        modules_dirs: dirs.modules_dirs,
        global_hooks_dir: dirs.global_hooks_dir,
        unnumbered_order: dirs.unnumbered_order,
    });
    let mut report = CheckReport {
        warnings: found.warnings.clone(),
        errors: load_errors.iter().map(|e| error_chain(e)).collect(),
        ..Default::default()
    };
    let hooks =
        found.global.hooks.len() + found.modules.iter().map(|m| m.hooks.len()).sum::<usize>();
    let plural = if hooks == 1 { "" } else { "s" };
    progress.phase(format!("running --config of {hooks} hook{plural}"));
    let configs = HookConfigs::fetch(&mut found, &ConfigRunOptions::new(args.hook_timeout)).await;
    progress.phase("checking the test files");
    report.errors.extend(configs.errors.iter().cloned());
    let tests = crate::cli::test::check_files(&test_paths, &found, &configs.by_path);
    report.errors.extend(tests);
    report.global_hooks = found
        .global
        .hooks
        .iter()
        .map(|h| HookReport::of(h, &configs))
        .collect();
    let tmp = tempfile::tempdir();
    let settings = HookRunSettings {
        tmp_dir: tmp
            .as_ref()
            .map_or_else(|_| std::env::temp_dir(), |t| t.path().to_path_buf()),
        timeout: args.hook_timeout,
        ..HookRunSettings::default()
    };
    progress.phase("checking values and schemas, running enabled scripts");
    let stage = crate::cli::values::evaluate(&found, args.config_file.as_deref(), &settings).await;
    report.errors.extend(stage.errors.iter().cloned());
    report.warnings.extend(stage.warnings.iter().cloned());
    report.values = stage.store.all_values();
    report.modules = found
        .modules
        .iter()
        .map(|m| ModuleReport {
            name: m.name.to_string(),
            order: m.order,
            path: m.path.display().to_string(),
            values_key: m.name.values_key(),
            enabled: stage.enabled.contains(&m.name),
            disabled_reason: stage.disabled_reasons.get(&m.name).cloned(),
            helm: m.has_chart,
            requires: m.definition.requires.iter().map(requirement_text).collect(),
            not_running: (stage.unmet.iter())
                .find(|u| u.module() == &m.name)
                .map(ToString::to_string),
            hooks: m
                .hooks
                .iter()
                .map(|h| HookReport::of(h, &configs))
                .collect(),
        })
        .collect();
    report
}

/// A requirement as `check` shows it: `db >= 1.0`, `db >= 1.0 !optional`.
pub fn requirement_text(r: &addon_core::module_definition::ModuleRequirement) -> String {
    let optional = if r.optional { " !optional" } else { "" };
    format!("{} {}{optional}", r.module, r.constraint)
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
