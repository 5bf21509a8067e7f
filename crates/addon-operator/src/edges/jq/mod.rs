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

use std::sync::Arc;

use addon_core::jq::{JqError, JqFilter};
use futures::future::BoxFuture;
use serde_json::Value;

pub use crate::runtime::edges::jq::{JqBatch, JqRunner, MAX_BATCH};

pub use process::{
    DEFAULT_MAX_REPLY_BYTES, DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_TIMEOUT, JqSandbox,
    SandboxSettings,
};

impl JqRunner {
    /// Filters evaluated in a sandbox child with these settings.
    pub fn sandbox(settings: SandboxSettings) -> Self {
        Self::Sandbox(Arc::new(JqSandbox::new(settings)))
    }
}

impl JqBatch for JqSandbox {
    fn run_batch<'a>(
        &'a self,
        filter: &'a JqFilter,
        inputs: &'a [&'a Value],
    ) -> BoxFuture<'a, Result<Vec<Result<Value, JqError>>, JqError>> {
        Box::pin(self.run(filter, inputs))
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
