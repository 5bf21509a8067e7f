//! Environment fallbacks of flags: the Go shell-operator's `SHELL_OPERATOR_*` variables, read
//! by the command line and by the flag groups of the edges.

/// The default of a flag whose Go counterpart also reads a `SHELL_OPERATOR_*` variable: that
/// variable when set (and not empty), else `default`. The `ADDON_OPERATOR_*` variable and the
/// flag still win over it.
pub fn shell_operator_default(name: &str, default: &str) -> String {
    fallback_with(&|n| std::env::var(n).ok(), name, default)
}

pub(crate) fn fallback_with(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: &str,
) -> String {
    env(name)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}
