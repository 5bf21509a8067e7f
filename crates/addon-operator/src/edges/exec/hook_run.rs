//! One hook or `enabled`-script invocation with the upstream I/O contract: input JSON files, empty
//! output files, the env vars naming them, and the raw output text read back after exit 0.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use addon_core::binding_context::ContextDocument;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::runtime::edges::HookOutputs;

use super::launch::launch;
use super::process::{self, ExecError, LogFields, ProcessOutput, ProcessSpec};
use super::tmp_files::{self, Content, TmpFileError, limits};
use super::tmp_pool::{FileKind, RunFiles, TmpPool};

/// Upstream default tmp dir (`--tmp-dir`).
pub const DEFAULT_TMP_DIR: &str = "/tmp/addon-operator";
/// Our own edge: upstream has no hook timeout at all.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Between SIGTERM and SIGKILL on timeout or shutdown.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(10);

/// How every hook is run; built from flags before any run.
#[derive(Debug, Clone)]
pub struct HookRunSettings {
    pub tmp_dir: PathBuf,
    /// `--debug-keep-tmp-files` / `DEBUG_KEEP_TMP_FILES`.
    pub keep_tmp_files: bool,
    pub timeout: Duration,
    pub kill_grace: Duration,
    /// Files made ahead and removed behind, in `tmp_dir` (`start` uses one unless files are
    /// kept); without it each run makes and removes its own.
    pub pool: Option<Arc<TmpPool>>,
}

impl Default for HookRunSettings {
    fn default() -> Self {
        Self {
            tmp_dir: PathBuf::from(DEFAULT_TMP_DIR),
            keep_tmp_files: false,
            timeout: DEFAULT_HOOK_TIMEOUT,
            kill_grace: DEFAULT_KILL_GRACE,
            pool: None,
        }
    }
}

/// Whose hook it is; decides the tmp file names (`global-hook-...` or `<module>.module-hook-...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOwner {
    Global,
    Module(String),
}

/// Everything one hook run needs. Values are the full `{"global": ..., "<camelModule>": ...}`
/// documents the core built.
#[derive(Debug, Clone)]
pub struct HookInvocation<'a> {
    pub owner: HookOwner,
    /// The hook's name (its path relative to the hooks dir); used in file names and logs.
    pub hook_name: &'a str,
    /// The executable; it runs in its own directory.
    pub hook_path: &'a Path,
    /// `WORKING_DIR`: the base dir of the hooks (global hooks dir or the module dir).
    pub working_dir: &'a Path,
    /// Binding name for the log fields.
    pub binding: &'a str,
    pub binding_context: ContextDocument<'a>,
    pub config_values: &'a Value,
    pub values: &'a Value,
    /// More variables (for example `KUBECONFIG`, `PYTHONHOME`).
    pub extra_env: &'a [(String, String)],
    /// Arguments before any other (`hook run <i>` for a hook of a batch executable).
    pub hook_args: &'a [String],
    /// A webhook run: one more empty file, named by `$VALIDATING_RESPONSE_PATH`,
    /// `$ADMISSION_RESPONSE_PATH` and `$CONVERSION_RESPONSE_PATH`, read back into
    /// [`HookOutputs::webhook_response`].
    pub webhook_response: bool,
}

/// The result of a hook run. `outputs` is `None` unless the hook exited with 0.
#[derive(Debug, Clone)]
pub struct HookRunOutput {
    pub process: ProcessOutput,
    pub outputs: Option<HookOutputs>,
}

/// What an `enabled` script needs.
#[derive(Debug, Clone)]
pub struct EnabledScriptInvocation<'a> {
    pub module: &'a str,
    pub script_path: &'a Path,
    pub config_values: &'a Value,
    pub values: &'a Value,
    pub extra_env: &'a [(String, String)],
}

/// The raw result of an `enabled` script; `result`/`reason` are `None` unless it exited with 0.
#[derive(Debug, Clone)]
pub struct EnabledScriptOutput {
    pub process: ProcessOutput,
    /// Content of `$MODULE_ENABLED_RESULT` (upstream expects `true` or `false`).
    pub result: Option<String>,
    /// Content of `$MODULE_ENABLED_REASON` (optional explanation).
    pub reason: Option<String>,
    /// The last non-empty line of stdout (for scripts that echo their answer).
    pub stdout_last_line: Option<String>,
}

/// A hook run that could not be prepared, executed or read back.
#[derive(Debug, thiserror::Error)]
pub enum HookRunError {
    #[error("cannot serialize the {what} of hook '{hook}'")]
    SerializeInput {
        hook: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot prepare the tmp files of hook '{hook}'")]
    PrepareFiles {
        hook: String,
        #[source]
        source: TmpFileError,
    },
    #[error("cannot run hook '{hook}'")]
    Execute {
        hook: String,
        #[source]
        source: ExecError,
    },
    #[error("cannot read the output files of hook '{hook}'")]
    ReadOutputs {
        hook: String,
        #[source]
        source: TmpFileError,
    },
    #[error("the stdout of '{hook}' is larger than the limit of {limit} bytes")]
    OutputTooLarge { hook: String, limit: usize },
}

impl HookRunError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::SerializeInput { .. } => "hook_input",
            Self::PrepareFiles { source, .. } | Self::ReadOutputs { source, .. } => {
                source.category()
            }
            Self::Execute { source, .. } => source.category(),
            Self::OutputTooLarge { .. } => "hook_output_too_large",
        }
    }
}

/// The kinds of files a run takes from the pool (named `hook-<kind>-<random><suffix>` there).
mod kinds {
    use super::FileKind;

    const fn kind(stem: &'static str, suffix: &'static str) -> FileKind {
        FileKind { stem, suffix }
    }
    pub const CONTEXT: FileKind = kind("hook-binding-context", ".json");
    pub const CONFIG_VALUES: FileKind = kind("hook-config-values", ".json");
    pub const VALUES: FileKind = kind("hook-values", ".json");
    pub const CONFIG_PATCH: FileKind = kind("hook-config-values-patch", ".json-patch");
    pub const VALUES_PATCH: FileKind = kind("hook-values-patch", ".json-patch");
    pub const METRICS: FileKind = kind("hook-metrics", ".json");
    pub const KUBE_PATCH: FileKind = kind("hook-object-patch", "");
    pub const ENABLED_RESULT: FileKind = kind("module-enabled-result", "");
    pub const ENABLED_REASON: FileKind = kind("module-enabled-reason", "");
    pub const WEBHOOK_RESPONSE: FileKind = kind("hook-webhook-response", ".json");
}

/// Upstream's file name prefix of each kind for one owner's hook, made only for a file the run
/// makes itself (files from the pool are named by their kind).
struct Names<'a> {
    /// `None` for a global hook.
    module: Option<&'a str>,
    hook: &'a str,
}

impl Names<'_> {
    fn prefix(&self, kind: FileKind) -> String {
        let hook = tmp_files::safe_name(self.hook);
        let (owner, role) = match self.module {
            None => ("global-".to_string(), "global-hook"),
            Some(module) => (
                format!("{}.module-", tmp_files::safe_name(module)),
                "module-hook",
            ),
        };
        match kind {
            kinds::CONTEXT => format!("{owner}hook-{hook}-binding-context-"),
            kinds::CONFIG_VALUES => format!("{owner}config-values-"),
            kinds::VALUES => format!("{owner}values-"),
            kinds::CONFIG_PATCH => format!("{hook}.{role}-config-values-"),
            kinds::VALUES_PATCH => format!("{hook}.{role}-values-"),
            kinds::METRICS => format!("{hook}.{role}-metrics-"),
            kinds::KUBE_PATCH => format!("{hook}-object-patch-"),
            kinds::ENABLED_RESULT => format!("{owner}enabled-result-"),
            kinds::ENABLED_REASON => format!("{owner}enabled-reason-"),
            other => format!("{owner}{}-", other.stem),
        }
    }
}

/// A file of `kind` holding `content` for the run (named as upstream when the run makes it).
fn new_file(
    files: &mut RunFiles,
    names: &Names,
    kind: FileKind,
    content: &[u8],
) -> Result<PathBuf, TmpFileError> {
    files.file(kind, || names.prefix(kind), Content::Bytes(content))
}

fn run_files(settings: &HookRunSettings) -> Result<RunFiles, TmpFileError> {
    let pool = settings.pool.as_ref().filter(|_| !settings.keep_tmp_files);
    RunFiles::new(&settings.tmp_dir, settings.keep_tmp_files, pool)
}

fn to_json(hook: &str, what: &'static str, value: &Value) -> Result<Vec<u8>, HookRunError> {
    serde_json::to_vec(value).map_err(|source| HookRunError::SerializeInput {
        hook: hook.to_string(),
        what,
        source,
    })
}

fn path_env(name: &str, path: &Path) -> (String, String) {
    (name.to_string(), path.to_string_lossy().into_owned())
}

fn hook_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The process spec of `<hook> --config` (binding discovery): run in the hook's directory with
/// the settings' timeout, stdout captured. Run it with [`process::run`] and parse `stdout`.
pub fn config_spec(
    settings: &HookRunSettings,
    hook_path: &Path,
    working_dir: &Path,
) -> ProcessSpec {
    let mut launch = launch(hook_path, working_dir);
    launch.args.push("--config".to_string());
    launch.env.push(path_env("WORKING_DIR", working_dir));
    ProcessSpec {
        program: launch.program,
        args: launch.args,
        cwd: hook_dir(hook_path),
        env: launch.env,
        timeout: settings.timeout,
        kill_grace: settings.kill_grace,
        capture_stdout: true,
        clear_env: false,
    }
}

/// Runs one hook. Dropping the future kills it and removes its files.
pub async fn run_hook(
    settings: &HookRunSettings,
    invocation: &HookInvocation<'_>,
    cancel: &CancellationToken,
) -> Result<HookRunOutput, HookRunError> {
    let hook = invocation.hook_name;
    let names = Names {
        module: match &invocation.owner {
            HookOwner::Global => None,
            HookOwner::Module(module) => Some(module),
        },
        hook,
    };
    let config_values = to_json(hook, "config values", invocation.config_values)?;
    let values = to_json(hook, "values", invocation.values)?;
    let prepare = |source| HookRunError::PrepareFiles {
        hook: hook.to_string(),
        source,
    };

    let mut files = run_files(settings).map_err(prepare)?;
    let context_path = files
        .file(
            kinds::CONTEXT,
            || names.prefix(kinds::CONTEXT),
            Content::Filled(&mut |out| invocation.binding_context.write_to(out)),
        )
        .map_err(prepare)?;
    let mut file =
        |kind, content: &[u8]| new_file(&mut files, &names, kind, content).map_err(prepare);
    let config_path = file(kinds::CONFIG_VALUES, &config_values)?;
    let values_path = file(kinds::VALUES, &values)?;
    let config_patch = file(kinds::CONFIG_PATCH, b"")?;
    let values_patch = file(kinds::VALUES_PATCH, b"")?;
    let metrics = file(kinds::METRICS, b"")?;
    let kube_patch = file(kinds::KUBE_PATCH, b"")?;
    let response = match invocation.webhook_response {
        true => Some(file(kinds::WEBHOOK_RESPONSE, b"")?),
        false => None,
    };

    let mut env = vec![
        path_env("BINDING_CONTEXT_PATH", &context_path),
        path_env("CONFIG_VALUES_PATH", &config_path),
        path_env("VALUES_PATH", &values_path),
        path_env("CONFIG_VALUES_JSON_PATCH_PATH", &config_patch),
        path_env("VALUES_JSON_PATCH_PATH", &values_patch),
        path_env("METRICS_PATH", &metrics),
        path_env("KUBERNETES_PATCH_PATH", &kube_patch),
        path_env("WORKING_DIR", invocation.working_dir),
    ];
    if !invocation.hook_args.is_empty() {
        env.extend(batch_env(&invocation.owner));
    }
    if let Some(path) = &response {
        for name in [
            "VALIDATING_RESPONSE_PATH",
            "ADMISSION_RESPONSE_PATH",
            "CONVERSION_RESPONSE_PATH",
        ] {
            env.push(path_env(name, path));
        }
    }
    let mut launch = launch(invocation.hook_path, invocation.working_dir);
    launch.args.extend(invocation.hook_args.iter().cloned());
    env.extend(launch.env);
    env.extend(invocation.extra_env.iter().cloned());
    let spec = ProcessSpec {
        program: launch.program,
        args: launch.args,
        cwd: hook_dir(invocation.hook_path),
        env,
        timeout: settings.timeout,
        kill_grace: settings.kill_grace,
        capture_stdout: false,
        clear_env: false,
    };
    let log = LogFields {
        hook: hook.to_string(),
        module: module_of(&invocation.owner).to_string(),
        binding: invocation.binding.to_string(),
        quiet: false,
    };
    let process = process::run_notifying(&spec, &log, cancel, |_| wake_pool(settings))
        .await
        .map_err(|source| HookRunError::Execute {
            hook: hook.to_string(),
            source,
        })?;

    let outputs = if process.succeeded() {
        let read = |source| HookRunError::ReadOutputs {
            hook: hook.to_string(),
            source,
        };
        let patch = |path: &Path, env| {
            tmp_files::read_output(path, env, limits::PATCH_FILE_BYTES).map_err(read)
        };
        Some(HookOutputs {
            config_values_patch: patch(&config_patch, "CONFIG_VALUES_JSON_PATCH_PATH")?,
            values_patch: patch(&values_patch, "VALUES_JSON_PATCH_PATH")?,
            metrics: tmp_files::read_output(&metrics, "METRICS_PATH", limits::METRICS_FILE_BYTES)
                .map_err(read)?,
            kubernetes_patch: patch(&kube_patch, "KUBERNETES_PATCH_PATH")?,
            webhook_response: match &response {
                Some(path) => tmp_files::read_output(
                    path,
                    "VALIDATING_RESPONSE_PATH",
                    limits::WEBHOOK_RESPONSE_BYTES,
                )
                .map_err(read)?,
                None => String::new(),
            },
        })
    } else {
        None
    };
    files.finish();
    Ok(HookRunOutput { process, outputs })
}

/// The hook is running: the pool removes the files of earlier runs and refills now.
fn wake_pool(settings: &HookRunSettings) {
    if let Some(pool) = &settings.pool {
        pool.wake();
    }
}

/// What upstream's batch hook kind adds to a run's environment: `MODULE_NAME` (`global` for
/// global hooks) and the (empty, for modules) `APPLICATION_NAME` and `APPLICATION_NAMESPACE`.
fn batch_env(owner: &HookOwner) -> [(String, String); 3] {
    let module = match owner {
        HookOwner::Global => "global",
        HookOwner::Module(module) => module,
    };
    [
        ("MODULE_NAME".to_string(), module.to_string()),
        ("APPLICATION_NAME".to_string(), String::new()),
        ("APPLICATION_NAMESPACE".to_string(), String::new()),
    ]
}

fn module_of(owner: &HookOwner) -> &str {
    match owner {
        HookOwner::Global => "",
        HookOwner::Module(module) => module,
    }
}

/// Runs a module's `enabled` script.
pub async fn run_enabled_script(
    settings: &HookRunSettings,
    invocation: &EnabledScriptInvocation<'_>,
    cancel: &CancellationToken,
) -> Result<EnabledScriptOutput, HookRunError> {
    let hook = format!("{}/enabled", invocation.module);
    let config_values = to_json(&hook, "config values", invocation.config_values)?;
    let values = to_json(&hook, "values", invocation.values)?;
    let prepare = |source| HookRunError::PrepareFiles {
        hook: hook.clone(),
        source,
    };

    let names = Names {
        module: Some(invocation.module),
        hook: "",
    };
    let mut files = run_files(settings).map_err(prepare)?;
    let mut file =
        |kind, content: &[u8]| new_file(&mut files, &names, kind, content).map_err(prepare);
    let config_path = file(kinds::CONFIG_VALUES, &config_values)?;
    let values_path = file(kinds::VALUES, &values)?;
    let result_path = file(kinds::ENABLED_RESULT, b"")?;
    let reason_path = file(kinds::ENABLED_REASON, b"")?;

    let mut env = vec![
        path_env("CONFIG_VALUES_PATH", &config_path),
        path_env("VALUES_PATH", &values_path),
        path_env("MODULE_ENABLED_RESULT", &result_path),
        path_env("MODULE_ENABLED_REASON", &reason_path),
    ];
    env.extend(invocation.extra_env.iter().cloned());
    let spec = ProcessSpec {
        program: invocation.script_path.to_path_buf(),
        args: Vec::new(),
        cwd: hook_dir(invocation.script_path),
        env,
        timeout: settings.timeout,
        kill_grace: settings.kill_grace,
        capture_stdout: true,
        clear_env: false,
    };
    let log = LogFields {
        hook: "enabled".to_string(),
        module: invocation.module.to_string(),
        binding: String::new(),
        quiet: false,
    };
    let process = process::run_notifying(&spec, &log, cancel, |_| wake_pool(settings))
        .await
        .map_err(|source| HookRunError::Execute {
            hook: hook.clone(),
            source,
        })?;

    let read = |source| HookRunError::ReadOutputs {
        hook: hook.clone(),
        source,
    };
    if process.stdout_overflow {
        return Err(HookRunError::OutputTooLarge {
            hook,
            limit: process::MAX_CAPTURED_STDOUT,
        });
    }
    let answer = |path: &Path, env| {
        tmp_files::read_output(path, env, limits::ENABLED_FILE_BYTES).map_err(read)
    };
    let (result, reason) = if process.succeeded() {
        (
            Some(answer(&result_path, "MODULE_ENABLED_RESULT")?),
            Some(answer(&reason_path, "MODULE_ENABLED_REASON")?),
        )
    } else {
        (None, None)
    };
    let stdout_last_line = process
        .stdout
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .map(|line| line.trim().to_string());
    files.finish();
    Ok(EnabledScriptOutput {
        process,
        result,
        reason,
        stdout_last_line,
    })
}

#[cfg(test)]
#[path = "hook_run_tests.rs"]
mod tests;
