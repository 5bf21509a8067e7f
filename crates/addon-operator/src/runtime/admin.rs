//! What the runtime tells cluster admins through the [`Reporter`](super::edges::Reporter) port:
//! the Events (a hook failed, a module installed, upgraded or deleted, a config edit refused) and
//! the status updates of each module, built from what the handlers and the worker saw.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use addon_core::names::ModuleName;
use addon_core::schema::SchemaError;
use addon_core::values::store::ValuesError;

use super::Shared;
use super::edges::report::bounded_tail;
use super::edges::{AdminEvent, LastError, Owner, Severity, StatusUpdate, Subject};
use super::error::HookError;
use super::state::State;
use super::task::Task;

/// Lines of a hook's stderr an Event or a status shows, at most.
pub const STDERR_LINES: usize = 5;
/// Bytes of a hook's stderr an Event or a status shows, at most.
pub const STDERR_BYTES: usize = 1024;

/// The last hook failure of each owner, until the worker reports the task that it failed.
#[derive(Debug, Default)]
pub struct HookFailures(Mutex<BTreeMap<Owner, LastError>>);

impl HookFailures {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Owner, LastError>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How the hook ended and the tail of its stderr, or what failed after it ran.
fn hook_message(error: &HookError) -> String {
    let HookError::Run(failure) = error else {
        let text = addon_core::error::error_chain(error);
        return bounded_tail(&text, STDERR_LINES, STDERR_BYTES);
    };
    if failure.exit.is_empty() {
        return bounded_tail(&failure.message, STDERR_LINES, STDERR_BYTES);
    }
    let stderr = bounded_tail(&failure.stderr_tail, STDERR_LINES, STDERR_BYTES);
    match stderr.is_empty() {
        true => failure.exit.clone(),
        false => format!("{}, stderr:\n{stderr}", failure.exit),
    }
}

fn subject(owner: &Owner) -> Subject {
    match owner {
        Owner::Module(m) => Subject::Module(m.clone()),
        Owner::Global => Subject::Global,
    }
}

/// The modules of the tree now (each gets a status object).
pub fn tree(shared: &Shared, modules: &[ModuleName]) {
    shared.edges.report.tree(modules);
}

/// A hook run failed (and is not allowed to): kept for the Event of its task.
pub fn hook_failed(
    shared: &Shared,
    module: Option<&ModuleName>,
    hook: &str,
    binding: &str,
    error: &HookError,
) {
    let failure = LastError {
        hook: hook.to_string(),
        binding: binding.to_string(),
        message: hook_message(error),
    };
    shared
        .hook_failures
        .lock()
        .insert(Owner::of(module), failure);
}

/// A task failed and is retried after `retry_in`: a Warning Event on its owner, and the
/// owner's status shows the error.
pub fn task_failed(shared: &Shared, task: &Task, message: &str, retry_in: Duration) {
    let owner = Owner::of(task.module());
    let hook = shared.hook_failures.lock().remove(&owner);
    let retry = format!("retry in {}s", retry_in.as_secs());
    let (reason, text, error) = match hook {
        Some(h) => {
            let text = format!(
                "hook {} (binding {}) failed, {retry}: {}",
                h.hook, h.binding, h.message
            );
            ("HookFailed", text, h)
        }
        None => {
            let error = LastError {
                hook: String::new(),
                binding: String::new(),
                message: bounded_tail(message, STDERR_LINES, STDERR_BYTES),
            };
            let what = match task {
                Task::ModuleRun { .. } => "ModuleRunFailed",
                Task::ModuleDelete { .. } => "ModuleDeleteFailed",
                _ => "TaskFailed",
            };
            let text = format!("{} failed, {retry}: {}", task.kind(), error.message);
            (what, text, error)
        }
    };
    let event = AdminEvent::new(subject(&owner), Severity::Warning, reason, text);
    shared.edges.report.event(event);
    shared
        .edges
        .report
        .status(owner, StatusUpdate::Failed(error));
}

/// A task succeeded: a global hook's success makes the global hooks' status Ready again.
pub fn task_done(shared: &Shared, task: &Task) {
    if let Task::Hook(h) = task
        && h.module.is_none()
    {
        let ready = StatusUpdate::Ready { revision: None };
        shared.edges.report.status(Owner::Global, ready);
    }
}

/// A module run (or delete) is starting.
pub fn running(shared: &Shared, module: &ModuleName) {
    let owner = Owner::Module(module.clone());
    shared.edges.report.status(owner, StatusUpdate::Running);
}

/// A module run succeeded; `upgraded` is set when Helm installed or upgraded its release, with
/// the release's revision when known.
pub fn module_ready(shared: &Shared, module: &ModuleName, upgraded: Option<Option<u64>>) {
    let revision = upgraded.flatten();
    if let Some(revision) = upgraded {
        let (reason, message) = match revision {
            Some(1) => ("Installed", "release installed (revision 1)".to_string()),
            Some(r) => ("Upgraded", format!("release upgraded to revision {r}")),
            None => ("Upgraded", "release installed or upgraded".to_string()),
        };
        let event = AdminEvent::new(
            Subject::Module(module.clone()),
            Severity::Normal,
            reason,
            message,
        );
        shared.edges.report.event(event);
    }
    let owner = Owner::Module(module.clone());
    shared
        .edges
        .report
        .status(owner, StatusUpdate::Ready { revision });
}

/// A disabled module's release and hooks are gone.
pub fn module_deleted(shared: &Shared, module: &ModuleName, had_release: bool) {
    let message = match had_release {
        true => "module disabled: its release was deleted",
        false => "module disabled: its hooks stopped",
    };
    let event = AdminEvent::new(
        Subject::Module(module.clone()),
        Severity::Normal,
        "Deleted",
        message,
    );
    shared.edges.report.event(event);
    shared
        .edges
        .report
        .status(Owner::Module(module.clone()), StatusUpdate::Deleted);
}

/// Discovery decided which modules are enabled; `reasons` are the `enabled` scripts' reasons
/// for those they disabled; `st.not_running` holds the unmet requirements of the others.
pub fn enablement(
    shared: &Shared,
    st: &State,
    enabled: &[ModuleName],
    reasons: &BTreeMap<ModuleName, String>,
) {
    let global = StatusUpdate::Enablement {
        enabled: true,
        reason: String::new(),
    };
    shared.edges.report.status(Owner::Global, global);
    // beforeAll hooks ran: the global hooks are well
    let ready = StatusUpdate::Ready { revision: None };
    shared.edges.report.status(Owner::Global, ready);
    for module in &st.module_order {
        let on = enabled.contains(module);
        let unmet = st.not_running.get(module);
        let reason = match (on, reasons.get(module), unmet) {
            (true, _, _) => String::new(),
            (false, Some(reason), _) => reason.clone(),
            (false, None, Some(unmet)) => format!("a requirement does not hold: {unmet}"),
            (false, None, None) => format!(
                "disabled by {}Enabled or its enabled script",
                module.values_key()
            ),
        };
        let update = StatusUpdate::Enablement {
            enabled: on,
            reason,
        };
        shared
            .edges
            .report
            .status(Owner::Module(module.clone()), update);
    }
}

/// A config edit the schemas refused: a Warning Event on each module (or the global hooks)
/// whose section was refused, naming the problems.
pub fn config_refused(shared: &Shared, error: &ValuesError) {
    let ValuesError::Validate { errors } = error else {
        let text = addon_core::error::error_chain(error);
        return refuse(shared, Subject::Global, &text);
    };
    for e in errors {
        let scope = match e {
            SchemaError::Validate { scope, .. }
            | SchemaError::ParseSchema { scope, .. }
            | SchemaError::ExtendTarget { scope, .. }
            | SchemaError::ExpandRefs { scope, .. }
            | SchemaError::CompileSchema { scope, .. }
            | SchemaError::CelRule { scope, .. } => scope.as_str(),
        };
        // the core names a module's scope `module 'name'`, the global one `global`
        let subject = (scope.strip_prefix("module '"))
            .and_then(|rest| rest.strip_suffix('\''))
            .and_then(|name| ModuleName::new(name).ok())
            .map_or(Subject::Global, Subject::Module);
        refuse(shared, subject, &addon_core::error::error_chain(e));
    }
}

/// A config edit a module's settings check (`hook check`) refused: a Warning Event on the module.
pub fn settings_refused(shared: &Shared, module: &ModuleName, message: &str) {
    let problem = format!("the settings check of module '{module}' refused it: {message}");
    refuse(shared, Subject::Module(module.clone()), &problem);
}

fn refuse(shared: &Shared, subject: Subject, problem: &str) {
    let message = format!(
        "config edit refused, the previous config stays in use: {}",
        bounded_tail(problem, STDERR_LINES, STDERR_BYTES)
    );
    let event = AdminEvent::new(subject, Severity::Warning, "ConfigRefused", message);
    shared.edges.report.event(event);
}
