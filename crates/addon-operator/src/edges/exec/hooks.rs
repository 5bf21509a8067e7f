//! Hooks as child processes: the runtime's `HookExecutor` port over `hook_run`.

use std::path::Path;

use addon_core::error::error_chain;
use addon_core::names::ModuleName;
use addon_core::values::store::HookValues;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::edges::exec::hook_run::HookRunSettings;
use crate::edges::exec::hook_run::{self, EnabledScriptInvocation, HookInvocation, HookOwner};

use crate::edges::exec::settings_check::{self, CheckInvocation};
use crate::runtime::edges::{
    EnabledAnswer, HookExecutor, HookFailure, HookRequest, HookSuccess, SettingsVerdict,
};

/// Hooks as child processes (the `exec` edge).
pub struct ProcessHooks {
    pub settings: HookRunSettings,
    /// Added to every run (e.g. `KUBECONFIG`).
    pub extra_env: Vec<(String, String)>,
    pub cancel: CancellationToken,
}

impl HookExecutor for ProcessHooks {
    fn run_hook<'a>(
        &'a self,
        req: HookRequest<'a>,
    ) -> BoxFuture<'a, Result<HookSuccess, HookFailure>> {
        Box::pin(async move {
            let owner = req
                .module
                .map_or(HookOwner::Global, |m| HookOwner::Module(m.to_string()));
            let invocation = HookInvocation {
                owner,
                hook_name: req.hook.name.as_str(),
                hook_path: &req.hook.path,
                working_dir: &req.hook.working_dir,
                binding: req.binding,
                binding_context: req.binding_context,
                config_values: &req.values.config_values,
                values: &req.values.values,
                extra_env: &self.extra_env,
                hook_args: &req.hook.args,
                webhook_response: req.webhook_response,
            };
            let run = hook_run::run_hook(&self.settings, &invocation, &self.cancel)
                .await
                .map_err(|e| failure(&e))?;
            let usage = &run.process.usage;
            tracing::debug!(
                hook = %req.hook.name,
                binding = req.binding,
                exit = %run.process.exit,
                duration_ms = run.process.duration.as_millis() as u64,
                user_cpu_ms = usage.user.as_millis() as u64,
                sys_cpu_ms = usage.sys.as_millis() as u64,
                max_rss_kb = usage.max_rss_kb,
                "hook run finished"
            );
            match run.outputs {
                Some(outputs) if run.process.succeeded() => Ok(HookSuccess {
                    outputs,
                    usage: *usage,
                }),
                _ => Err(HookFailure {
                    message: format!(
                        "hook '{}' failed ({}): {}",
                        req.hook.name,
                        run.process.exit,
                        run.process.failure_message()
                    ),
                    usage: *usage,
                    timed_out: run.process.exit == super::process::ExitKind::TimedOut,
                    exit: run.process.exit.to_string(),
                    stderr_tail: run.process.stderr_tail.clone(),
                }),
            }
        })
    }

    fn run_enabled<'a>(
        &'a self,
        module: &'a ModuleName,
        script: &'a Path,
        values: &'a HookValues,
    ) -> BoxFuture<'a, Result<EnabledAnswer, HookFailure>> {
        Box::pin(async move {
            let invocation = EnabledScriptInvocation {
                module: module.as_str(),
                script_path: script,
                config_values: &values.config_values,
                values: &values.values,
                extra_env: &self.extra_env,
            };
            let out = hook_run::run_enabled_script(&self.settings, &invocation, &self.cancel)
                .await
                .map_err(|e| failure(&e))?;
            if !out.process.succeeded() {
                return Err(HookFailure {
                    usage: out.process.usage,
                    ..HookFailure::new(format!(
                        "enabled script of module '{module}' failed ({}): {}",
                        out.process.exit,
                        out.process.failure_message()
                    ))
                });
            }
            Ok(EnabledAnswer {
                result_file: out.result.unwrap_or_default(),
                stdout_last_line: out.stdout_last_line.unwrap_or_default(),
                reason: out.reason.unwrap_or_default().trim().to_string(),
                usage: out.process.usage,
            })
        })
    }

    fn check_settings<'a>(
        &'a self,
        module: &'a ModuleName,
        program: &'a Path,
        settings: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<SettingsVerdict, HookFailure>> {
        Box::pin(async move {
            let check = CheckInvocation {
                module: module.as_str(),
                program,
                settings,
                extra_env: &self.extra_env,
            };
            settings_check::run(&self.settings, &check, &self.cancel).await
        })
    }
}

fn failure(err: &dyn std::error::Error) -> HookFailure {
    HookFailure::new(error_chain(err))
}
