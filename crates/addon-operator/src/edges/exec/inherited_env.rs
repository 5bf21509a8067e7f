//! The environment every hook inherits: a pod that keeps Kubernetes' service links gets seven or
//! more variables per Service of its namespace, and every spawn copies them all, so `start` warns
//! when it finds many.

use std::ffi::{OsStr, OsString};

/// From this many Services' link variables on, `start` warns (about 70 variables, 0.1 ms more per
/// hook spawn; 50 Services cost 0.6 ms, see docs/operations.md).
const SERVICE_LINKS_WARN_AT: usize = 10;

/// What the inherited environment holds.
#[derive(Debug, Default)]
struct EnvSize {
    variables: usize,
    /// `NAME=value` strings with their NUL bytes, as a child's `exec` copies them.
    bytes: usize,
    /// Services with a `<NAME>_SERVICE_HOST` link variable, the API server's own not counted.
    linked_services: usize,
}

/// Whether `name` is the `<NAME>_SERVICE_HOST` link variable of a Service other than the API
/// server's (`KUBERNETES_SERVICE_HOST` is set with or without links).
pub fn is_service_link_host(name: &OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.ends_with(b"_SERVICE_HOST") && name != b"KUBERNETES_SERVICE_HOST"
}

/// Measures `vars` (the process environment in `start`).
fn env_size(vars: impl IntoIterator<Item = (OsString, OsString)>) -> EnvSize {
    let mut size = EnvSize::default();
    for (name, value) in vars {
        size.variables += 1;
        size.bytes += name.len() + value.len() + 2;
        if is_service_link_host(&name) {
            size.linked_services += 1;
        }
    }
    size
}

/// Warns when the operator's environment holds the link variables of many Services.
pub fn warn_if_linked_services() {
    let size = env_size(std::env::vars_os());
    if size.linked_services >= SERVICE_LINKS_WARN_AT {
        tracing::warn!(
            services = size.linked_services,
            variables = size.variables,
            bytes = size.bytes,
            "the environment holds the service-link variables of many Services, and every hook \
             spawn copies it: set enableServiceLinks: false in the pod spec (docs/operations.md)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names
            .iter()
            .map(|name| (OsString::from(name), OsString::from("10.96.0.1")))
            .collect()
    }

    #[test]
    fn services_are_counted_by_their_host_variable_without_the_api_server() {
        let size = env_size(vars(&[
            "KUBERNETES_SERVICE_HOST",
            "KUBERNETES_SERVICE_PORT",
            "FOO_SERVICE_HOST",
            "FOO_SERVICE_PORT",
            "FOO_PORT_8080_TCP_ADDR",
            "BAR_SERVICE_HOST",
            "PATH",
        ]));
        assert_eq!(size.linked_services, 2);
        assert_eq!(size.variables, 7);
    }

    #[test]
    fn bytes_count_name_value_and_the_separators() {
        let size = env_size([(OsString::from("A"), OsString::from("bc"))]);
        assert_eq!(size.bytes, "A=bc\0".len());
    }
}
