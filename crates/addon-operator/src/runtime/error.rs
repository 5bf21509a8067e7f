//! Why a runtime task failed: one enum per step (hook run, module run, discovery, watch start), each variant with its context and cause, and the [`FailureKind`] the queue and the logs read.
//!
//! Messages are read through [`error_chain`]: a variant's text plus its causes, the same text the
//! operator printed when these were strings.

use addon_core::enablement::EnablementError;
pub use addon_core::error::{Failure, FailureKind, error_chain};
use addon_core::hook_output::kube_patch::KubePatchError;
use addon_core::hook_output::metrics::MetricsError;
use addon_core::jq::JqError;
use addon_core::names::{HookName, ModuleName};
use addon_core::values::patch::{HookRef, PatchError};
use addon_core::values::store::ValuesError;
use addon_core::yaml::YamlError;

use super::edges::{ConfigBackendError, HookFailure, KubeError, ObjectsError};
use crate::runtime::edges::files::CrdsError;
use crate::runtime::edges::helm::HelmError;
use crate::runtime::metrics::HookMetricsError;

/// Running one hook, or applying what it wrote, failed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("hook '{hook}' is not known")]
    Unknown { hook: HookName },
    /// The process did not start, failed or timed out.
    #[error(transparent)]
    Run(#[from] HookFailure),
    /// The values store rejected the hook's values or patches (schema, patch paths).
    #[error(transparent)]
    Values(#[from] ValuesError),
    #[error(transparent)]
    ReadValuesPatch(#[from] PatchError),
    #[error("{hook}: $METRICS_PATH")]
    ReadMetrics {
        hook: HookRef,
        #[source]
        source: Box<MetricsError>,
    },
    #[error("{hook}: $KUBERNETES_PATCH_PATH")]
    ReadKubePatch {
        hook: HookRef,
        #[source]
        source: Box<KubePatchError>,
    },
    #[error("hook '{hook}': $METRICS_PATH")]
    ApplyMetrics {
        hook: HookName,
        #[source]
        source: HookMetricsError,
    },
    #[error("hook '{hook}': $KUBERNETES_PATCH_PATH")]
    ApplyKubePatch {
        hook: HookName,
        #[source]
        source: ObjectsError,
    },
    #[error("{hook}: config patch not applied")]
    SaveConfig {
        hook: HookRef,
        #[source]
        source: Box<ConfigBackendError>,
    },
}

impl HookError {
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::Unknown { .. }
            | Self::Run(_)
            | Self::ReadValuesPatch(_)
            | Self::ReadMetrics { .. }
            | Self::ReadKubePatch { .. }
            | Self::ApplyMetrics { .. } => FailureKind::Hook,
            Self::Values(_) => FailureKind::Values,
            Self::ApplyKubePatch { .. } => FailureKind::Kube,
            Self::SaveConfig { .. } => FailureKind::Config,
        }
    }
}

/// Starting the watch of a kubernetes binding and loading its objects failed.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error("hook '{hook}' is not known")]
    UnknownHook { hook: HookName },
    #[error("hook '{hook}' has no binding #{index}")]
    UnknownBinding { hook: HookName, index: usize },
    #[error(transparent)]
    Start(#[from] KubeError),
    #[error("hook '{hook}': binding '{binding}'")]
    Filter {
        hook: HookName,
        binding: String,
        #[source]
        source: JqError,
    },
    #[error("hook '{hook}': the watch was stopped while starting")]
    Stopped { hook: HookName },
}

impl MonitorError {
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::UnknownHook { .. } | Self::UnknownBinding { .. } | Self::Filter { .. } => {
                FailureKind::Hook
            }
            Self::Start(_) | Self::Stopped { .. } => FailureKind::Kube,
        }
    }
}

/// One step of a module run or delete failed (the task names the module around it).
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error(transparent)]
    ReadCrds(#[from] CrdsError),
    #[error("reading crds/ failed")]
    ReadCrdsTask(#[source] tokio::task::JoinError),
    #[error("create or update the CRDs of crds/")]
    ApplyCrds(#[source] ObjectsError),
    #[error("CRDs of crds/")]
    WaitCrds(#[source] ObjectsError),
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error(transparent)]
    Monitor(#[from] MonitorError),
    /// The Helm values of the module (`x-required-for-helm`, schema).
    #[error(transparent)]
    HelmValues(#[from] ValuesError),
    #[error(transparent)]
    RenderValues(#[from] YamlError),
    #[error(transparent)]
    ChartChecksum(Box<dyn std::error::Error + Send + Sync>),
    #[error("chart checksum task failed")]
    ChartChecksumTask(#[source] tokio::task::JoinError),
    #[error(transparent)]
    Helm(#[from] HelmError),
}

impl ModuleError {
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::ReadCrds(_) | Self::ReadCrdsTask(_) => FailureKind::Module,
            Self::ApplyCrds(_) | Self::WaitCrds(_) => FailureKind::Kube,
            Self::Hook(e) => e.kind(),
            Self::Monitor(e) => e.kind(),
            Self::HelmValues(_) | Self::RenderValues(_) => FailureKind::Values,
            Self::ChartChecksum(_) | Self::ChartChecksumTask(_) | Self::Helm(_) => {
                FailureKind::Helm
            }
        }
    }
}

/// Module discovery (the enablement pass with its `enabled` scripts, the release list) failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error(transparent)]
    Enablement(#[from] EnablementError),
    #[error("module '{module}' has no enabled script")]
    NoEnabledScript { module: ModuleName },
    #[error(transparent)]
    ScriptValues(#[from] ValuesError),
    #[error(transparent)]
    Script(#[from] HookFailure),
    #[error(transparent)]
    Releases(#[from] HelmError),
}

impl DiscoveryError {
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::Enablement(_) | Self::NoEnabledScript { .. } => FailureKind::Module,
            Self::ScriptValues(_) => FailureKind::Values,
            Self::Script(_) => FailureKind::Hook,
            Self::Releases(_) => FailureKind::Helm,
        }
    }
}

/// Why a task failed; it stays at the head of its queue and is retried.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("module '{module}' is not known")]
    UnknownModule { module: ModuleName },
    #[error("module '{module}'")]
    Module {
        module: ModuleName,
        #[source]
        source: ModuleError,
    },
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error(transparent)]
    Monitor(#[from] MonitorError),
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
}

impl TaskError {
    /// What failed, for the queue's failure record and the `error.kind` log field.
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::UnknownModule { .. } => FailureKind::Module,
            Self::Module { source, .. } => source.kind(),
            Self::Hook(e) => e.kind(),
            Self::Monitor(e) => e.kind(),
            Self::Discovery(e) => e.kind(),
        }
    }

    /// The failure as the queue keeps it: the kind and the message with every cause.
    pub fn to_failure(&self) -> Failure {
        Failure::new(self.kind(), error_chain(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(name: &str) -> ModuleName {
        ModuleName::new(name).unwrap()
    }

    #[test]
    fn a_module_step_failure_names_the_module_and_keeps_the_kind_of_the_step() {
        let helm = HelmError::Command {
            operation: "upgrade",
            release: "web".into(),
            message: "exit status 1".into(),
        };
        let error = TaskError::Module {
            module: module("web"),
            source: ModuleError::Helm(helm),
        };
        let failure = error.to_failure();
        assert_eq!(failure.kind, FailureKind::Helm);
        assert_eq!(
            failure.message,
            "module 'web': helm upgrade of release 'web' failed: exit status 1"
        );
    }

    #[test]
    fn a_hook_process_failure_inside_a_module_run_is_a_hook_failure() {
        let error = TaskError::Module {
            module: module("web"),
            source: ModuleError::Hook(HookError::Run(HookFailure::new("hook 'a' failed"))),
        };
        assert_eq!(error.kind(), FailureKind::Hook);
        assert_eq!(error_chain(&error), "module 'web': hook 'a' failed");
    }

    #[test]
    fn an_unknown_module_is_a_module_failure() {
        let error = TaskError::UnknownModule {
            module: module("gone"),
        };
        assert_eq!(
            error.to_failure(),
            Failure::new(FailureKind::Module, "module 'gone' is not known")
        );
    }
}
