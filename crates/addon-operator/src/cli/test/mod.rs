//! `addon-operator test [PATH...]`: runs the declarative test files of a tree (`*.test.yaml`)
//! without a cluster: each case runs one hook or `enabled` script as the operator runs it, in
//! its own tmp dir, cases side by side, and its outputs are compared with its expectations.

pub mod expect;
pub mod matching;
pub mod report;
pub mod run;
pub mod spec;
pub mod target;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use addon_core::discovery::Discovered;
use addon_core::hook_config::HookConfig;
use clap::ValueEnum;
use futures::StreamExt as _;

use crate::cli::start::fail;
use crate::cli::support::LocalRunFlags;
use crate::edges::tree::dirs::{self, DirFlags};
use report::{CaseResult, Outcome, Report};
use spec::{Expect, LoadedFile};

/// The most test files one run reads.
pub const MAX_FILES: usize = 10_000;

pub fn run_cli(args: &TestArgs) -> anyhow::Result<ExitCode> {
    let progress = crate::cli::progress::Progress::on_stderr("test");
    let ran = crate::cli::support::block_on(run_showing(args, &progress))?;
    progress.finish();
    let report = match ran {
        Ok(report) => report,
        Err(errors) => return Ok(fail("run the tests", &errors)),
    };
    let text = match args.format {
        TestFormat::Text => report.to_text(),
        TestFormat::Junit => report.to_junit(),
        TestFormat::Tap => report.to_tap(),
        TestFormat::Json => report.to_json(),
    };
    crate::cli::support::print_out(&text);
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Loads the tree, runs the selected cases and, with `--update`, rewrites their expectations.
/// An error is a tree that cannot be loaded.
pub async fn run(args: &TestArgs) -> Result<Report, Vec<String>> {
    run_showing(args, &crate::cli::progress::Progress::hidden()).await
}

/// [`run`], counting the cases on `progress`.
async fn run_showing(
    args: &TestArgs,
    progress: &crate::cli::progress::Progress,
) -> Result<Report, Vec<String>> {
    progress.phase("loading the tree (--config of every hook)");
    let tree = match crate::edges::tree::runnable::load(&args.dirs, args.local.hook_timeout).await {
        Ok(tree) => tree,
        Err(errors) => return Err(errors),
    };
    let paths = if args.paths.is_empty() {
        default_paths(&args.dirs)
    } else {
        args.paths.clone()
    };
    let files = match spec::find(&paths, MAX_FILES) {
        Ok(files) => files,
        Err(problem) => return Err(vec![problem]),
    };
    let mut report = Report::default();
    let mut loaded = Vec::new();
    for path in &files {
        match spec::load(path, &shown(path)) {
            Ok(file) => loaded.push(file),
            Err(e) => report.cases.push(file_problem(&shown(path), &e)),
        }
    }
    let inputs = run::Inputs {
        found: &tree.found,
        config_file: args.local.config_file.as_deref(),
        timeout: args.local.hook_timeout,
    };
    let selected = select(&loaded, args.filter.as_deref());
    progress.phase("cases");
    progress.total(selected.len());
    let results: Vec<(usize, usize, CaseResult, Option<Expect>)> = futures::stream::iter(selected)
        .map(|(f, c)| {
            let inputs = &inputs;
            let (file, configs) = (&loaded[f], &tree.configs);
            async move {
                let (result, update) = run_one(inputs, file, c, configs, args.update).await;
                progress.inc();
                (f, c, result, update)
            }
        })
        .buffered(usize::from(args.jobs))
        .collect()
        .await;
    let mut updates: BTreeMap<usize, Vec<(usize, Expect)>> = BTreeMap::new();
    for (f, c, result, update) in results {
        report.cases.push(result);
        if let Some(expect) = update {
            updates.entry(f).or_default().push((c, expect));
        }
    }
    for (f, cases) in updates {
        if let Err(problem) = write_updates(&loaded[f], &cases) {
            return Err(vec![problem]);
        }
    }
    Ok(report)
}

/// The global hooks directory and the modules directories of the tree.
fn default_paths(flags: &DirFlags) -> Vec<PathBuf> {
    let dirs = dirs::resolve(flags, &|name| std::env::var(name).ok());
    std::iter::once(dirs.global_hooks_dir)
        .chain(dirs.modules_dirs)
        .filter(|d| d.is_dir())
        .collect()
}

/// A path as printed: relative to the current directory when it is below it.
fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn file_problem(file: &str, error: &spec::SpecError) -> CaseResult {
    let line = match error {
        spec::SpecError::Invalid { line, .. } => *line,
        _ => 1,
    };
    CaseResult {
        file: file.to_string(),
        line,
        name: "(the test file)".into(),
        outcome: Outcome::Failed,
        diff: vec![error.to_string()],
    }
}

/// The (file, case) indexes whose case name or file path contains `filter`.
fn select(files: &[LoadedFile], filter: Option<&str>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (f, file) in files.iter().enumerate() {
        for (c, case) in file.file.cases.iter().enumerate() {
            let chosen = filter.is_none_or(|t| case.name.contains(t) || file.shown.contains(t));
            if chosen {
                out.push((f, c));
            }
        }
    }
    out
}

/// Runs case `index` of `file`; with `update`, also the expectations to write (when they
/// change).
async fn run_one(
    inputs: &run::Inputs<'_>,
    file: &LoadedFile,
    index: usize,
    configs: &BTreeMap<PathBuf, HookConfig>,
    update: bool,
) -> (CaseResult, Option<Expect>) {
    let case = file.file.cases.get(index);
    let mut result = CaseResult {
        file: file.shown.clone(),
        line: file.case_line(index),
        name: case.map_or_else(String::new, |c| c.name.clone()),
        outcome: Outcome::Failed,
        diff: Vec::new(),
    };
    let Some(case) = case else {
        result.diff.push(format!("no case {index}"));
        return (result, None);
    };
    let actual = match target::resolve(file, index, inputs.found, configs) {
        Ok(target) => run::run_case(inputs, case, &target).await,
        Err(spec::SpecError::Invalid { message, .. }) => Err(message),
        Err(e) => Err(e.to_string()),
    };
    let actual = match actual {
        Ok(actual) => actual,
        Err(problem) => {
            result.diff.push(problem);
            return (result, None);
        }
    };
    if update {
        let new = expect::updated(&case.expect, &actual);
        if new != case.expect {
            result.outcome = Outcome::Updated;
            return (result, Some(new));
        }
    }
    result.diff = expect::compare(&case.expect, &actual);
    if result.diff.is_empty() {
        result.outcome = Outcome::Passed;
    }
    (result, None)
}

/// Writes the new expectations of `cases` into the file (its leading comment lines kept; the
/// rest is written anew, so other comments are lost).
fn write_updates(file: &LoadedFile, cases: &[(usize, Expect)]) -> Result<(), String> {
    let mut new = file.file.clone();
    for (index, expect) in cases {
        if let Some(case) = new.cases.get_mut(*index) {
            case.expect = expect.clone();
        }
    }
    if new == file.file {
        return Ok(());
    }
    let body = serde_saphyr::to_string(&new).map_err(|e| format!("{}: {e}", file.shown))?;
    let header: String = file
        .text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file.path, format!("{header}{body}"))
        .map_err(|e| format!("write {}: {e}", file.shown))
}

/// `check`'s part: every test file below `paths`, read and with each case resolved against the
/// tree; the problems found, each with its file and line.
pub fn check_files(
    paths: &[PathBuf],
    found: &Discovered,
    configs: &BTreeMap<PathBuf, HookConfig>,
) -> Vec<String> {
    let files = match spec::find(paths, MAX_FILES) {
        Ok(files) => files,
        Err(problem) => return vec![format!("test files: {problem}")],
    };
    let mut problems = Vec::new();
    for path in files {
        let file = match spec::load(&path, &shown(&path)) {
            Ok(file) => file,
            Err(e) => {
                problems.push(format!("test file {e}"));
                continue;
            }
        };
        for index in 0..file.file.cases.len() {
            if let Err(e) = target::resolve(&file, index, found, configs) {
                problems.push(format!("test file {e}"));
            }
        }
    }
    problems
}

#[derive(Debug, Clone, clap::Args)]
pub struct TestArgs {
    /// Test files, or directories searched for `*.test.yaml` files (default: the global hooks
    /// directory and the modules directories)
    pub paths: Vec<PathBuf>,
    /// Run only the cases whose name or file path contains this text
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = TestFormat::Text)]
    pub format: TestFormat,
    /// Write the outputs of each case run into its expectations (for a new test); review the
    /// change before committing it
    #[arg(long)]
    pub update: bool,
    /// How many cases run side by side
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    #[command(flatten)]
    pub dirs: DirFlags,
    #[command(flatten)]
    pub local: LocalRunFlags,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestFormat {
    Text,
    Junit,
    Tap,
    Json,
}
