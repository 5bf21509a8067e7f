//! The running part of `start`: the runtime with the module hooks of a staged start added as
//! they load, the leader lease, and `--reload-tree`'s reloads applied in place.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use addon_core::discovery::ModuleSource;
use addon_core::error::error_chain;
use addon_core::names::ModuleName;
use addon_core::tree_diff::{self, TreeView};
use futures::future::MaybeDone;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::StartArgs;
use crate::cli::reload::TreeChanges;
use crate::edges::http::StartupStatus;
use crate::edges::kube::leader::LeaderElection;
use crate::edges::tree::kept::KeptDirs;
use crate::edges::tree::runnable::{ModuleHooks, Tree};
use crate::edges::tree::watch::TreeWatch;
use crate::edges::webhook::WebhookSettings;
use crate::runtime::metrics::Metrics;
use crate::runtime::{NewTree, Runtime, RuntimeHandle};

/// The reloads of the tree: the watch (none when off), the tree running now with its content
/// digests, the kept copies of module directories with delete hooks, where results are shown,
/// and the problems already logged.
pub(super) struct Reloads<'a> {
    args: &'a StartArgs,
    /// The webhook servers' settings, their certificates resolved.
    webhooks: WebhookSettings,
    watch: Option<TreeWatch>,
    status: &'a Arc<StartupStatus>,
    metrics: &'a Arc<Metrics>,
    tree: Tree,
    digests: BTreeMap<PathBuf, String>,
    kept: Option<Arc<KeptDirs>>,
    /// [`Self::prepare`] ran.
    prepared: bool,
    last_problems: Vec<String>,
}

/// Runs `runtime` until shutdown (`stop[0]`); the module hooks are added as they load (then
/// the webhook servers start) and each valid new tree is applied in place. Gives the problems
/// that stopped the start: a module hook's config, or a webhook server that did not start.
pub(super) async fn run_reloading(
    runtime: Runtime,
    reloads: &mut Reloads<'_>,
    mut module_hooks: ModuleHooksLoad,
    stop: &[CancellationToken; 2],
) -> Option<Vec<String>> {
    let handle = runtime.handle();
    reloads.status.running(Arc::new(handle.clone()));
    let running = runtime.run(stop[0].clone());
    tokio::pin!(running);
    let (mut loading, mut problems) = (true, None);
    loop {
        tokio::select! {
            () = &mut running => break,
            () = &mut module_hooks, if loading => {
                loading = false;
                let loaded = loaded(&mut module_hooks);
                match add_module_hooks(&reloads.webhooks, &handle, loaded, &stop[0]).await {
                    Ok(loaded) => reloads.module_hooks_added(loaded).await,
                    Err(found) => {
                        problems = Some(found);
                        stop.iter().for_each(CancellationToken::cancel);
                    }
                }
            }
            () = reloads.next(&handle), if !loading => {}
        }
    }
    if let Some(kept) = &reloads.kept {
        kept.remove_all();
    }
    problems
}

/// The module hooks of a staged start, loading or loaded.
pub(super) type ModuleHooksLoad = MaybeDone<JoinHandle<Result<ModuleHooks, Vec<String>>>>;

/// The loaded module hooks, or the problems found in them.
fn loaded(load: &mut ModuleHooksLoad) -> Result<ModuleHooks, Vec<String>> {
    match std::pin::Pin::new(load).take_output() {
        Some(Ok(loaded)) => loaded,
        Some(Err(e)) => Err(vec![format!("module hooks' --config runs: {e}")]),
        None => Err(vec![
            "module hooks' --config runs: not finished".to_string(),
        ]),
    }
}

/// [`lead`], unless the module hooks prove broken first: a standby with a broken tree stops at
/// once, not when it takes the lease.
pub(super) async fn lead_unless_broken(
    election: LeaderElection,
    stop: &[CancellationToken; 2],
    lost: &CancellationToken,
    module_hooks: &mut ModuleHooksLoad,
) -> Result<Option<(CancellationToken, JoinHandle<()>)>, Vec<String>> {
    let leading = lead(election, stop, lost);
    tokio::pin!(leading);
    loop {
        let loading = matches!(module_hooks, MaybeDone::Future(_));
        tokio::select! {
            hold = &mut leading => return Ok(hold),
            () = &mut *module_hooks, if loading => {
                if let MaybeDone::Done(Ok(Err(problems))) = &*module_hooks {
                    return Err(problems.clone());
                }
            }
        }
    }
}

/// Gives the runtime the module hooks of a staged start, then starts the webhook servers the
/// hooks use; or the problems that stop the start.
async fn add_module_hooks(
    webhooks: &WebhookSettings,
    handle: &RuntimeHandle,
    loaded: Result<ModuleHooks, Vec<String>>,
    shutdown: &CancellationToken,
) -> Result<ModuleHooks, Vec<String>> {
    let loaded = loaded?;
    handle.add_module_hooks(&loaded.hooks, &loaded.configs)?;
    handle.set_settings_checks(&loaded.settings_checks);
    let hooks: usize = loaded.hooks.values().map(Vec::len).sum();
    tracing::info!(modules = loaded.hooks.len(), hooks, "module hooks loaded");
    crate::cli::webhook_flags::start_servers(webhooks, handle, shutdown)
        .await
        .map_err(|problem| vec![problem])?;
    Ok(loaded)
}

impl<'a> Reloads<'a> {
    /// The reloads of `tree`, a staged start's tree whose module hooks come with
    /// [`Self::module_hooks_added`].
    pub(super) fn new(
        args: &'a StartArgs,
        webhooks: WebhookSettings,
        watch: Option<TreeWatch>,
        status: &'a Arc<StartupStatus>,
        metrics: &'a Arc<Metrics>,
        tree: Tree,
    ) -> Self {
        let kept = watch.is_some().then(|| {
            let kept = KeptDirs::new(args.tmp_dir.join("reload-tree"));
            Arc::new(kept)
        });
        Self {
            args,
            webhooks,
            watch,
            status,
            metrics,
            tree,
            digests: BTreeMap::new(),
            kept,
            prepared: false,
            last_problems: Vec::new(),
        }
    }

    /// The running tree is complete; with a watch, copies of its modules with delete hooks are
    /// kept before any reload is looked at (a module removed right after the start still has
    /// its delete hooks).
    async fn module_hooks_added(&mut self, loaded: ModuleHooks) {
        self.tree.add_module_hooks(loaded);
        let modules = self.tree.found.modules.iter().map(|m| m.name.clone());
        self.keep_dirs(modules.collect(), &[]).await;
    }

    /// With a watch, once: the digests of the running tree's files, which tell what a reload
    /// changed. They are read on the blocking pool beside the runtime's start (every file of
    /// the tree: 4-5 ms for 100 modules) instead of before it, and before the first change is
    /// looked at.
    async fn prepare(&mut self) {
        if self.prepared || self.watch.is_none() {
            return;
        }
        self.prepared = true;
        self.digests = digests_of(&self.tree).await;
    }

    /// Waits for a change of the files and applies the new tree; an invalid one is logged and
    /// counted.
    async fn next(&mut self, handle: &RuntimeHandle) {
        self.prepare().await;
        let changed = match &mut self.watch {
            Some(watch) => watch.changed().await,
            None => None,
        };
        if changed.is_none() {
            return std::future::pending().await;
        }
        match self.load().await {
            Ok((tree, digests)) => self.apply(handle, tree, digests).await,
            Err(problems) => self.failed(problems),
        }
    }

    /// Loads the tree as `check` does; every problem found.
    async fn load(&self) -> Result<(Tree, BTreeMap<PathBuf, String>), Vec<String>> {
        let args = self.args;
        let tree = crate::edges::tree::runnable::load(&args.dirs, args.hook_timeout).await?;
        if args.upstream.strict_check_values_mode_enabled {
            let problems = crate::cli::upstream_flags::strict_values_problems(&tree.found);
            if !problems.is_empty() {
                return Err(problems);
            }
        }
        if let Some(problem) = crate::cli::reload::webhook_problem(&self.tree, &tree) {
            return Err(vec![problem]);
        }
        let digests = digests_of(&tree).await;
        Ok((tree, digests))
    }

    /// Applies `tree` to the running runtime as its difference from the running tree.
    async fn apply(
        &mut self,
        handle: &RuntimeHandle,
        tree: Tree,
        digests: BTreeMap<PathBuf, String>,
    ) {
        let diff = tree_diff::diff(view(&self.tree, &self.digests), view(&tree, &digests));
        let kept_dirs = self.kept.as_ref().map(|k| k.dirs()).unwrap_or_default();
        let applied = handle.apply_tree(NewTree {
            found: &tree.found,
            configs: &tree.configs,
            diff: &diff,
            kept_dirs: &kept_dirs,
        });
        if let Err(problems) = applied {
            return self.failed(problems);
        }
        let changes = TreeChanges::of(&diff);
        tracing::info!(changes = %changes.summary(), "module tree reloaded");
        self.status
            .tree_reloaded(crate::cli::reload::applied_record(&changes));
        let renewed = (diff.added.iter())
            .chain(diff.changed.iter().map(|m| &m.module))
            .cloned()
            .collect();
        self.tree = tree;
        self.digests = digests;
        self.keep_dirs(renewed, &handle.removed_modules()).await;
        self.last_problems.clear();
        // counted last: whoever waits for the count finds the log and the record written
        self.metrics.tree_reload("applied");
    }

    /// Copies anew the directories of `renewed` modules that have delete hooks, and removes the
    /// copies of modules neither in the tree nor waiting for their delete (`removed`).
    async fn keep_dirs(&self, renewed: Vec<ModuleName>, removed: &[ModuleName]) {
        let Some(kept) = self.kept.clone() else {
            return;
        };
        let modules: Vec<ModuleSource> = (self.tree.found.modules.iter())
            .filter(|m| renewed.contains(&m.name))
            .cloned()
            .collect();
        let mut keep: Vec<ModuleName> = self
            .tree
            .found
            .modules
            .iter()
            .map(|m| m.name.clone())
            .collect();
        keep.extend(removed.iter().cloned());
        let configs = self.tree.configs.clone();
        let copied = tokio::task::spawn_blocking(move || {
            let problems = kept.refresh(&modules, &configs);
            kept.prune(&keep);
            problems
        });
        for problem in copied.await.unwrap_or_default() {
            let error = error_chain(&problem);
            tracing::warn!(%error, "a module directory was not kept: if the module is removed, its delete hooks do not run");
        }
    }

    /// Logs the problems not logged by the reload before; the running tree goes on.
    fn failed(&mut self, problems: Vec<String>) {
        for problem in problems.iter().filter(|p| !self.last_problems.contains(p)) {
            tracing::error!(%problem, "module tree not reloaded, the running tree goes on");
        }
        self.status
            .tree_reloaded(crate::cli::reload::failed_record(&problems));
        // counted last: whoever waits for the count finds the log and the record written
        self.metrics.tree_reload("failed");
        self.last_problems = problems;
    }
}

fn view<'a>(tree: &'a Tree, digests: &'a BTreeMap<PathBuf, String>) -> TreeView<'a> {
    TreeView {
        found: &tree.found,
        configs: &tree.configs,
        digests,
    }
}

/// [`crate::edges::tree::kept::digests`] of `tree`, on the blocking pool.
async fn digests_of(tree: &Tree) -> BTreeMap<PathBuf, String> {
    let found = tree.found.clone();
    let digests = tokio::task::spawn_blocking(move || crate::edges::tree::kept::digests(&found));
    digests.await.unwrap_or_default()
}

/// Waits for the leader lease (`None`: stopped while waiting), then keeps renewing it in the
/// background until the returned token fires (after the runtime stopped), and then releases
/// it; losing it fires `lost` and `stop` (the shutdown and the running hooks' cancellation).
async fn lead(
    election: LeaderElection,
    stop: &[CancellationToken; 2],
    lost: &CancellationToken,
) -> Option<(CancellationToken, tokio::task::JoinHandle<()>)> {
    tracing::info!("waiting for the leader lease");
    if !election.acquire(&stop[0]).await {
        return None;
    }
    let (holding, lost, stop) = (CancellationToken::new(), lost.clone(), stop.clone());
    let stop_holding = holding.clone();
    let held = tokio::spawn(async move {
        election.hold(holding, lost.clone()).await;
        if lost.is_cancelled() {
            stop.iter().for_each(CancellationToken::cancel);
        }
    });
    Some((stop_holding, held))
}
