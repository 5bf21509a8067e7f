//! `addon-operator module graph`: the module graph (weights and `module.yaml` requirements) of
//! a tree as Graphviz DOT on stdout, read from the tree alone (no running operator).

use std::process::ExitCode;

use addon_core::error::error_chain;

use crate::edges::tree::dirs::{self, DirFlags};
use crate::edges::tree::{self as loader, LoaderConfig};

#[derive(Debug, Clone, clap::Args)]
pub struct GraphArgs {
    #[command(flatten)]
    pub dirs: DirFlags,
}

/// The DOT text of the tree's graph, or every problem that makes the tree invalid (a cycle of
/// requirements among them).
pub fn graph(args: &GraphArgs) -> Result<String, Vec<String>> {
    let dirs = dirs::resolve(&args.dirs, &|name| std::env::var(name).ok());
    let (found, errors) = loader::load(&LoaderConfig {
        modules_dirs: dirs.modules_dirs,
        global_hooks_dir: dirs.global_hooks_dir,
        unnumbered_order: dirs.unnumbered_order,
    });
    if !errors.is_empty() {
        return Err(errors.iter().map(|e| error_chain(e)).collect());
    }
    Ok(addon_core::module_graph::to_dot(&found.modules))
}

/// Prints the graph; exit 1 with the problems when the tree is invalid.
pub fn run_cli(args: &GraphArgs) -> anyhow::Result<ExitCode> {
    match graph(args) {
        Ok(dot) => {
            crate::cli::support::print_out(&dot);
            Ok(ExitCode::SUCCESS)
        }
        Err(problems) => Ok(crate::cli::start::fail("draw the module graph", &problems)),
    }
}
