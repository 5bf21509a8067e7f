//! Where the operator evaluates untrusted jq filters (`jqFilter` of bindings, `JQPatch`): in a sandbox child process, so a filter that loops, recurses or allocates without end costs one evaluation, never the operator.
//!
//! An evaluation cannot be interrupted from outside and a failed allocation aborts the whole
//! process, so no in-process bound can close this class of bug. The child is the operator's own
//! binary (`addon-operator jq-sandbox`, hidden), long-lived, with an address-space limit; it
//! answers one JSON line per request. The deadline is CPU time enforced by the kernel
//! (`RLIMIT_CPU` raised before each request to the time used so far plus `--jq-timeout`, rounded
//! up to whole seconds), so it needs no timer in the operator and works the same under paused
//! test time. A child that dies fails that request with a [`JqError::Limit`] naming the cause;
//! the next request starts a new child.

mod process;
pub mod protocol;

use std::borrow::Borrow;
use std::sync::Arc;

use addon_core::hook_config::{FilteredObject, KubernetesBinding};
use addon_core::jq::{JqError, JqFilter, JqLimits};
use serde_json::Value;

pub use process::{
    DEFAULT_MAX_REPLY_BYTES, DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_TIMEOUT, JqSandbox,
    SandboxSettings,
};

/// Inputs sent in one request; larger lists are split, each part with its own deadline.
pub const MAX_BATCH: usize = 256;

/// How filters are evaluated: in the sandbox (the operator, `hook run`) or in this process
/// (tests with trusted filters, and the default of settings built in code).
#[derive(Clone, Debug)]
pub enum JqRunner {
    InProcess(JqLimits),
    Sandbox(Arc<JqSandbox>),
}

impl Default for JqRunner {
    fn default() -> Self {
        Self::InProcess(JqLimits::default())
    }
}

impl JqRunner {
    pub fn sandbox(settings: SandboxSettings) -> Self {
        Self::Sandbox(Arc::new(JqSandbox::new(settings)))
    }

    /// Evaluates `filter` on every input; the outer error fails the whole list.
    pub async fn run<V: Borrow<Value> + Sync>(
        &self,
        filter: &JqFilter,
        inputs: &[V],
    ) -> Result<Vec<Result<Value, JqError>>, JqError> {
        match self {
            Self::InProcess(limits) => Ok(inputs
                .iter()
                .map(|input| filter.apply_bounded(input.borrow(), limits))
                .collect()),
            Self::Sandbox(sandbox) => {
                let mut results = Vec::with_capacity(inputs.len());
                for chunk in inputs.chunks(MAX_BATCH) {
                    results.extend(sandbox.run(filter, chunk).await?);
                }
                Ok(results)
            }
        }
    }

    /// Evaluates `filter` on one input.
    pub async fn apply(&self, filter: &JqFilter, input: &Value) -> Result<Value, JqError> {
        let mut results = self.run(filter, std::slice::from_ref(input)).await?;
        results
            .pop()
            .unwrap_or_else(|| Err(JqError::apply_failed(filter.source(), "no result")))
    }

    /// The objects as `binding` sees them (filter results and checksums); the first failure
    /// fails the list.
    pub async fn filter_objects<V: Borrow<Value> + Sync>(
        &self,
        binding: &KubernetesBinding,
        objects: &[V],
    ) -> Result<Vec<FilteredObject>, JqError> {
        self.filter_with(binding.jq_filter.as_ref(), objects).await
    }

    /// [`JqRunner::filter_objects`] for a binding whose jqFilter is `filter`.
    pub async fn filter_with<V: Borrow<Value> + Sync>(
        &self,
        filter: Option<&JqFilter>,
        objects: &[V],
    ) -> Result<Vec<FilteredObject>, JqError> {
        let Some(filter) = filter else {
            return Ok(objects
                .iter()
                .map(|o| FilteredObject::new(o.borrow(), None))
                .collect());
        };
        let results = self.run(filter, objects).await?;
        objects
            .iter()
            .zip(results)
            .map(|(object, result)| Ok(FilteredObject::new(object.borrow(), Some(result?))))
            .collect()
    }
}

/// `addon-operator jq-sandbox`: sets the address-space limit (and no core dumps), then serves
/// requests on stdin/stdout until stdin ends. Runs on a thread with a big stack so that deep
/// filters within the compile limits evaluate; deeper recursion aborts this process only.
pub fn run_child(memory_limit_bytes: u64) -> anyhow::Result<std::process::ExitCode> {
    use nix::sys::resource::{Resource, setrlimit};
    setrlimit(Resource::RLIMIT_CORE, 0, 0)?;
    setrlimit(Resource::RLIMIT_AS, memory_limit_bytes, memory_limit_bytes)?;
    let serving = std::thread::Builder::new()
        .name("jq-sandbox".to_string())
        .stack_size(EVAL_STACK_BYTES)
        .spawn(|| {
            let (stdin, stdout) = (std::io::stdin().lock(), std::io::stdout().lock());
            protocol::serve(stdin, stdout, set_cpu_deadline)
        })?;
    match serving.join() {
        Ok(result) => result?,
        Err(_) => anyhow::bail!("the jq sandbox failed"),
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Lets this process use `seconds` more CPU seconds from now; past them the kernel sends
/// `SIGXCPU`, which ends it. A failure leaves the previous limit (the operator still sees a
/// dead child or a reply).
fn set_cpu_deadline(seconds: u64) {
    use nix::sys::resource::{Resource, UsageWho, getrlimit, getrusage, setrlimit};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else {
        return;
    };
    let used = usage.user_time().tv_sec() + usage.system_time().tv_sec() + 1;
    let soft = u64::try_from(used)
        .unwrap_or(0)
        .saturating_add(seconds.max(1));
    let hard = getrlimit(Resource::RLIMIT_CPU).map_or(u64::MAX, |(_, hard)| hard);
    let _ = setrlimit(Resource::RLIMIT_CPU, soft.min(hard), hard);
}

/// The stack of the sandbox's evaluating thread.
const EVAL_STACK_BYTES: usize = 64 << 20;
