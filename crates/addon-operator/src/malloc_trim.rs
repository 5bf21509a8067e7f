//! glibc's malloc gives freed memory back to the system only above a trim threshold, and raises
//! that threshold (up to 64 MiB) each time a large block is freed: after a watch's listing or a
//! burst of events the operator would keep the peak for good. `start` therefore runs itself once
//! more with `MALLOC_TRIM_THRESHOLD_` set, which fixes the threshold (docs/operations.md, memory).
//! Hooks do not inherit the setting.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;

/// glibc's variable (the trailing underscore is part of its name).
pub const VARIABLE: &str = "MALLOC_TRIM_THRESHOLD_";
/// 64 KiB: freed memory above it at the top of a heap goes back to the system.
pub const THRESHOLD: &str = "65536";
/// Set beside [`VARIABLE`] when the operator set it, so that hooks get neither.
const MARKER: &str = "ADDON_OPERATOR_MALLOC_TRIM_SET";

/// Runs this program again with [`VARIABLE`] set, unless it is set already (by the user, or by
/// this same step before the exec). Returns only when nothing was done or the exec failed (the
/// operator then runs with glibc's default).
pub fn reexec_if_unset() {
    reexec_with(
        &|name| std::env::var_os(name),
        std::env::args_os().collect(),
    );
}

fn reexec_with(env: &dyn Fn(&str) -> Option<OsString>, args: Vec<OsString>) {
    if env(VARIABLE).is_some() || env("ADDON_OPERATOR_MALLOC_TRIM").is_some_and(|v| v == "off") {
        return;
    }
    let Ok(program) = std::env::current_exe() else {
        return;
    };
    let mut args = args.into_iter();
    let mut command = std::process::Command::new(program);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    let error = command
        .args(args)
        .env(VARIABLE, THRESHOLD)
        .env(MARKER, "1")
        .exec();
    // logging is not set up yet: one line on stderr, and the operator goes on untuned
    crate::cli::support::print_err(&format!(
        "addon-operator: cannot restart with {VARIABLE}={THRESHOLD} ({error}); glibc's default applies"
    ));
}

/// The variables a hook's environment must not get from the operator's: the ones this step set
/// (read once; every process the operator starts asks).
pub fn hidden_from_hooks() -> &'static [&'static str] {
    static HIDDEN: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    HIDDEN.get_or_init(|| match std::env::var_os(MARKER) {
        Some(_) => &[VARIABLE, MARKER],
        None => &[],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_happens_when_the_variable_is_set_or_the_user_turned_it_off() {
        // returning at all proves no exec happened
        let set = |name: &str| (name == VARIABLE).then(|| OsString::from("131072"));
        reexec_with(&set, vec!["addon-operator".into(), "start".into()]);
        let off =
            |name: &str| (name == "ADDON_OPERATOR_MALLOC_TRIM").then(|| OsString::from("off"));
        reexec_with(&off, vec!["addon-operator".into(), "start".into()]);
    }
}
