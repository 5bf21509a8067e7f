//! Runtime scenarios: a whole operator built on a module tree on disk whose hooks are never
//! executed (each hook file holds its own `--config` text, the fake executor answers for it),
//! with the in-memory edges, paused time and the ordered history of tasks and hook runs.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use addon_core::config::Config;
use addon_core::discovery::{Discovered, HookFile};
use addon_core::hook_config::{self, HookConfig, HookScope};
use addon_core::names::ModuleName;
use addon_core::queue::Backoff;
use addon_core::tree_diff::{self, TreeView};
use addon_operator::edges::config::memory::MemoryConfig;
use addon_operator::edges::exec::hook_run::HookOutputs;
use addon_operator::edges::tree::kept::KeptDirs;
use addon_operator::edges::tree::{self as loader, LoaderConfig};
use addon_operator::runtime::edges::Edges;
use addon_operator::runtime::schedule::TokioClock;
use addon_operator::runtime::webhook_objects::WebhookObjects;
use addon_operator::runtime::{NewTree, Runtime, RuntimeHandle, RuntimeSettings};
use tokio_util::sync::CancellationToken;

use crate::wait::wait_for_async;
use crate::{FakeHelm, FakeHooks, FakeKube};

/// How much (paused) time an operator gets to become idle before the test fails.
const SETTLE_LIMIT: Duration = Duration::from_secs(100);

/// A running operator and its fakes.
pub struct Op {
    pub handle: RuntimeHandle,
    pub hooks: FakeHooks,
    pub helm: FakeHelm,
    pub kube: FakeKube,
    pub config: Arc<MemoryConfig>,
    /// The Events and status updates the runtime reported.
    pub reports: addon_operator::runtime::edges::report::KeptReports,
    pub stop: CancellationToken,
    /// The tree running now, for [`Op::reload`].
    running: std::sync::Mutex<LoadedTree>,
    kept: KeptDirs,
    _dir: tempfile::TempDir,
}

/// A tree as `--reload-tree` compares it: discovery, configs and content digests.
struct LoadedTree {
    found: Discovered,
    configs: BTreeMap<PathBuf, HookConfig>,
    digests: BTreeMap<PathBuf, String>,
}

impl LoadedTree {
    fn load(root: &Path) -> Self {
        let mut found = load(root);
        // the fake tree's stand-in for a batch executable with `has_settings_check`: a module's
        // `settings-check` file
        for module in &mut found.modules {
            let check = module.path.join("settings-check");
            module.settings_check = check.is_file().then_some(check);
        }
        Self {
            configs: configs(&found),
            digests: addon_operator::edges::tree::kept::digests(&found),
            found,
        }
    }

    fn view(&self) -> TreeView<'_> {
        TreeView {
            found: &self.found,
            configs: &self.configs,
            digests: &self.digests,
        }
    }
}

/// Files of a tree: (path, content). Files under a `hooks/` dir are hooks (made executable) and
/// hold their config; `enabled` files are made executable too.
pub fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("global-hooks")).unwrap();
    std::fs::create_dir_all(dir.path().join("modules")).unwrap();
    for (path, text) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, text).unwrap();
        if path.contains("hooks/") || path.ends_with("/enabled") {
            std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir
}

fn configs(found: &Discovered) -> BTreeMap<PathBuf, HookConfig> {
    let mut out = BTreeMap::new();
    let global = found.global.hooks.iter().map(|h| (h, HookScope::Global));
    let module = found
        .modules
        .iter()
        .flat_map(|m| m.hooks.iter().map(|h| (h, HookScope::Module)));
    for (hook, scope) in global.chain(module) {
        let text = std::fs::read_to_string(&hook.path).unwrap();
        let config = hook_config::parse(&hook.name, scope, &text)
            .unwrap_or_else(|e| panic!("config of {}: {e:?}", hook.name));
        out.insert(hook.path.clone(), config);
    }
    out
}

fn load(root: &Path) -> Discovered {
    let (found, errors) = loader::load(&LoaderConfig {
        modules_dirs: vec![root.join("modules")],
        global_hooks_dir: root.join("global-hooks"),
        unnumbered_order: 1,
    });
    assert!(errors.is_empty(), "{errors:?}");
    found
}

/// Builds and starts an operator on `dir` with `config`; `hooks` answers hook runs, `helm` may
/// hold pre-existing releases.
pub async fn start(dir: tempfile::TempDir, config: &str, hooks: FakeHooks, helm: FakeHelm) -> Op {
    start_keeping(dir, config, hooks, helm, &[]).await
}

/// [`start`] with releases the startup purge must keep (`--helm-ignore-release`, own release).
pub async fn start_keeping(
    dir: tempfile::TempDir,
    config: &str,
    hooks: FakeHooks,
    helm: FakeHelm,
    kept_releases: &[&str],
) -> Op {
    let settings = RuntimeSettings {
        kept_releases: kept_releases.iter().map(|r| r.to_string()).collect(),
        ..RuntimeSettings::default()
    };
    start_with(dir, config, hooks, helm, settings).await
}

/// [`start`] with `--parallel-module-runs runs`.
pub async fn start_parallel(
    dir: tempfile::TempDir,
    config: &str,
    hooks: FakeHooks,
    helm: FakeHelm,
    runs: usize,
) -> Op {
    let settings = RuntimeSettings {
        parallel_module_runs: runs,
        ..RuntimeSettings::default()
    };
    start_with(dir, config, hooks, helm, settings).await
}

/// [`start`] as `addon-operator start` does it: the modules come without hooks, which
/// [`Op::add_module_hooks`] gives the runtime later (global hooks and `enabled` scripts run
/// meanwhile, discovery waits for them).
pub async fn start_staged(
    dir: tempfile::TempDir,
    config: &str,
    hooks: FakeHooks,
    helm: FakeHelm,
) -> Op {
    let settings = RuntimeSettings {
        module_hooks_later: true,
        ..RuntimeSettings::default()
    };
    start_with(dir, config, hooks, helm, settings).await
}

/// [`start`] keeping the webhook configurations and CRD conversions in the fake cluster.
pub async fn start_with_webhook_objects(
    dir: tempfile::TempDir,
    config: &str,
    hooks: FakeHooks,
    objects: WebhookObjects,
) -> Op {
    let settings = RuntimeSettings {
        webhook_objects: Some(objects),
        ..RuntimeSettings::default()
    };
    start_with(dir, config, hooks, FakeHelm::new(), settings).await
}

/// [`start`] with the release guard's `guard` settings, its reports kept in `reports`.
pub async fn start_with_guard(
    dir: tempfile::TempDir,
    config: &str,
    hooks: FakeHooks,
    helm: FakeHelm,
    guard: addon_operator::runtime::GuardSettings,
    reports: addon_operator::runtime::edges::report::KeptReports,
) -> Op {
    let settings = RuntimeSettings {
        guard,
        ..RuntimeSettings::default()
    };
    start_reporting(dir, config, hooks, helm, settings, reports).await
}

/// [`start`] with `settings` (the retry delays, the history and the resource monitor are the
/// scenarios' own).
async fn start_with(
    dir: tempfile::TempDir,
    config: &str,
    hooks: FakeHooks,
    helm: FakeHelm,
    settings: RuntimeSettings,
) -> Op {
    let reports = addon_operator::runtime::edges::report::KeptReports::default();
    start_reporting(dir, config, hooks, helm, settings, reports).await
}

async fn start_reporting(
    dir: tempfile::TempDir,
    config: &str,
    hooks: FakeHooks,
    helm: FakeHelm,
    settings: RuntimeSettings,
    reports: addon_operator::runtime::edges::report::KeptReports,
) -> Op {
    let loaded = LoadedTree::load(dir.path());
    let (found, configs) = (&loaded.found, &loaded.configs);
    let kept = KeptDirs::new(dir.path().join("kept"));
    kept.refresh(&found.modules, configs);
    let config = Arc::new(MemoryConfig::new(
        Config::from_file("config.yaml", config).unwrap(),
    ));
    let (kube, kube_events) = FakeKube::new();
    let edges = Edges {
        hooks: Arc::new(hooks.clone()),
        helm: Arc::new(helm.clone()),
        kube: Arc::new(kube.clone()),
        objects: Arc::new(kube.clone()),
        config: config.clone(),
        files: Arc::new(addon_operator::edges::files::DiskFiles),
        report: Arc::new(reports.clone()),
    };
    let settings = RuntimeSettings {
        backoff: Backoff {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(30),
            factor: 2,
        },
        record_history: true,
        resource_monitor_interval: Some(Duration::from_secs(300)),
        ..settings
    };
    let clock = Arc::new(TokioClock::starting_at(chrono::DateTime::UNIX_EPOCH));
    let mut found = found.clone();
    if settings.module_hooks_later {
        found.modules.iter_mut().for_each(|m| m.hooks.clear());
    }
    let runtime = Runtime::build_with_clock(&found, configs, edges, kube_events, settings, clock)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let handle = runtime.handle();
    let stop = CancellationToken::new();
    tokio::spawn(runtime.run(stop.clone()));
    Op {
        handle,
        hooks,
        helm,
        kube,
        config,
        reports,
        stop,
        running: std::sync::Mutex::new(loaded),
        kept,
        _dir: dir,
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Op {
    /// The module hooks of the running tree and their configs, as a staged start loads them.
    pub fn module_hooks(
        &self,
    ) -> (
        BTreeMap<ModuleName, Vec<HookFile>>,
        BTreeMap<PathBuf, HookConfig>,
    ) {
        let running = self.running.lock().unwrap();
        let hooks = (running.found.modules.iter()).map(|m| (m.name.clone(), m.hooks.clone()));
        (hooks.collect(), running.configs.clone())
    }

    /// Gives the runtime of [`start_staged`] its module hooks.
    pub fn add_module_hooks(&self) -> Result<(), Vec<String>> {
        let (hooks, configs) = self.module_hooks();
        self.handle.add_module_hooks(&hooks, &configs)
    }

    /// Waits (in paused time) until every queue is empty and the first converge is done.
    pub async fn settle(&self) {
        let settled = || async {
            if !(self.handle.is_idle() && self.handle.first_converge_done()) {
                return false;
            }
            // let intake tasks deliver anything pending, then check again
            tokio::time::sleep(Duration::from_millis(10)).await;
            self.handle.is_idle()
        };
        let context = || {
            format!(
                "queues:\n{}\nhistory:\n{}",
                self.handle.queues_text(),
                self.handle.history().join("\n")
            )
        };
        wait_for_async("the operator to settle", SETTLE_LIMIT, settled, context).await;
    }

    /// History lines that record hook runs, Helm and enabled scripts (no task starts).
    pub fn runs(&self) -> Vec<String> {
        self.handle
            .history()
            .into_iter()
            .filter(|l| !l.starts_with("start "))
            .collect()
    }

    pub fn clear_history_marker(&self) -> usize {
        self.handle.history().len()
    }

    /// Edits the config as someone else would, waits until the operator settles, and returns the
    /// runs the edit caused.
    pub async fn edit_config(&self, text: &str) -> Vec<String> {
        let mark = self.clear_history_marker();
        let config = Config::from_file("config.yaml", text).unwrap();
        self.config.edit(Ok(config));
        self.settle().await;
        self.runs_since(mark)
    }

    /// The tree's root directory (`modules/`, `global-hooks/`).
    pub fn root(&self) -> &Path {
        self._dir.path()
    }

    /// Edits the tree's files with `edit`, applies the tree as `--reload-tree` does (the
    /// difference from the running tree; removed modules' delete hooks from the kept copies),
    /// waits until the operator settles, and returns the runs the reload caused, or the
    /// problems that stopped it.
    pub async fn reload(&self, edit: impl FnOnce(&Path)) -> Result<Vec<String>, Vec<String>> {
        edit(self.root());
        let mark = self.clear_history_marker();
        let new = LoadedTree::load(self.root());
        let diff = {
            let running = self.running.lock().unwrap();
            tree_diff::diff(running.view(), new.view())
        };
        let kept_dirs = self.kept.dirs();
        self.handle.apply_tree(NewTree {
            found: &new.found,
            configs: &new.configs,
            diff: &diff,
            kept_dirs: &kept_dirs,
        })?;
        self.kept.refresh(&new.found.modules, &new.configs);
        let mut keep: Vec<_> = new.found.modules.iter().map(|m| m.name.clone()).collect();
        keep.extend(self.handle.removed_modules());
        self.kept.prune(&keep);
        *self.running.lock().unwrap() = new;
        self.settle().await;
        Ok(self.runs_since(mark))
    }

    /// History lines recorded after `mark`.
    pub fn runs_since(&self, mark: usize) -> Vec<String> {
        self.handle.history()[mark..]
            .iter()
            .filter(|l| !l.starts_with("start "))
            .cloned()
            .collect()
    }
}

/// Hooks whose `enabled` scripts say "true" and whose other hooks succeed with no output.
pub fn enabling_hooks() -> FakeHooks {
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        if call.name.ends_with("/enabled") {
            Ok(values_patch("true"))
        } else {
            Ok(HookOutputs::default())
        }
    });
    hooks
}

/// Hook outputs with a values patch.
pub fn values_patch(patch: &str) -> HookOutputs {
    HookOutputs {
        values_patch: patch.to_string(),
        ..Default::default()
    }
}

/// Hook outputs with a config values patch.
pub fn config_patch(patch: &str) -> HookOutputs {
    HookOutputs {
        config_values_patch: patch.to_string(),
        ..Default::default()
    }
}

/// Hooks where `name` always fails with `message` and every other hook succeeds.
pub fn failing(name: &'static str, message: &'static str) -> FakeHooks {
    let hooks = FakeHooks::new();
    hooks.respond(move |call| {
        if call.name == name {
            Err(message.into())
        } else {
            Ok(HookOutputs::default())
        }
    });
    hooks
}

/// Hooks whose first `failures` runs fail with `message`; every later run succeeds.
pub fn flaky(failures: usize, message: &'static str) -> FakeHooks {
    let hooks = FakeHooks::new();
    let runs = std::sync::atomic::AtomicUsize::new(0);
    hooks.respond(move |_| {
        if runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < failures {
            Err(message.into())
        } else {
            Ok(HookOutputs::default())
        }
    });
    hooks
}
