//! Plain data the runtime hands to [`super::Metrics`]: one struct per recorded event.

use std::time::Duration;

/// How a hook run ended, for the `*_success_total`, `*_errors_total` and `*_allowed_errors_total` counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookOutcome {
    Success,
    /// Failed and the task will be retried (no `allowFailure`).
    Failure,
    /// Failed but the hook has `allowFailure: true`.
    AllowedFailure,
}

/// What a change seen on the config store's watch was, for `config_reloads_total{cause}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigReloadCause {
    /// The operator's own write came back and was recognised: nothing reloaded.
    OwnWrite,
    /// An edit by someone else that changed the config in use.
    External,
}

impl ConfigReloadCause {
    pub fn label(self) -> &'static str {
        match self {
            Self::OwnWrite => "own_write",
            Self::External => "external",
        }
    }
}

/// One finished hook run (global when `module` is `None`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HookRunRecord<'a> {
    pub hook: &'a str,
    pub module: Option<&'a str>,
    /// Binding name (or binding type when the binding has no name, e.g. `onStartup`).
    pub binding: &'a str,
    pub queue: &'a str,
    /// What started the run: `OperatorStartup`, `Schedule`, `Kubernetes`, `ReloadAllModules`, ...
    pub activation: &'a str,
    /// Wall time of the run.
    pub duration: Duration,
    pub user_cpu: Duration,
    pub sys_cpu: Duration,
    /// Peak resident memory of the hook process in bytes (the exec edge reports KiB: multiply by 1024).
    pub max_rss_bytes: u64,
    pub outcome: HookOutcome,
}

/// Labels shared by the Kubernetes binding metrics (`kube_*`) and `task_wait_in_queue_seconds_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingLabels<'a> {
    /// Empty for global hooks.
    pub module: &'a str,
    pub hook: &'a str,
    pub binding: &'a str,
    pub queue: &'a str,
}

/// The head task of one queue, for `tasks_queue_head_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueHead {
    pub queue: String,
    pub task_type: String,
    /// Empty when the task is not about a module.
    pub module: String,
    /// Empty when the task is not about a hook.
    pub hook: String,
}

/// One known module, for `mm_module_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    pub module: String,
    pub enabled: bool,
    /// Upstream marks some modules critical; pass `false` when the concept does not apply.
    pub critical: bool,
}

/// Helm operations timed by `helm_operation_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelmOperation {
    /// Rendering the chart (`helm template`).
    Template,
    /// Deciding whether an upgrade is needed (checksum, release status).
    CheckUpgrade,
    /// `helm upgrade --install`.
    Upgrade,
    /// `helm uninstall` (not in upstream's label set; upstream times deletes elsewhere).
    Delete,
}

impl HelmOperation {
    /// The `operation` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Template => "template",
            Self::CheckUpgrade => "check-upgrade",
            Self::Upgrade => "upgrade",
            Self::Delete => "delete",
        }
    }
}
