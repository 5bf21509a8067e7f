//! Loads a module tree for running it: discovery plus every hook's parsed `--config`, or every
//! problem found.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use addon_core::discovery::Discovered;
use addon_core::hook_config::HookConfig;

use crate::edges::tree::configs::HookConfigs;
use crate::edges::tree::dirs::{self, DirFlags};
use crate::edges::tree::hook_configs::ConfigRunOptions;
use crate::edges::tree::{self as loader, LoaderConfig};
use addon_core::error::error_chain;

/// A tree ready to run.
pub struct Tree {
    pub found: Discovered,
    /// Each hook's config, by hook path.
    pub configs: BTreeMap<PathBuf, HookConfig>,
}

/// Discovers the tree of `dirs` (flags and environment) and runs every hook's `--config`.
pub async fn load(dirs: &DirFlags, hook_timeout: Duration) -> Result<Tree, Vec<String>> {
    let dirs = dirs::resolve(dirs, &|name| std::env::var(name).ok());
    let (mut found, load_errors) = loader::load(&LoaderConfig {
        modules_dirs: dirs.modules_dirs,
        global_hooks_dir: dirs.global_hooks_dir,
        unnumbered_order: dirs.unnumbered_order,
    });
    for warning in &found.warnings {
        tracing::warn!("{warning}");
    }
    let mut errors: Vec<String> = load_errors.iter().map(|e| error_chain(e)).collect();
    let configs = HookConfigs::fetch(&mut found, &ConfigRunOptions::new(hook_timeout)).await;
    errors.extend(configs.errors.iter().cloned());
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Tree {
        found,
        configs: configs.by_path.into_iter().collect(),
    })
}
