//! Admission and conversion webhooks answered by hooks: the reviews the API server sends, the hooks' response files, the replies, conversion chains and the cluster objects that register the webhooks. Pure: the servers live in the operator.

pub mod admission;
pub mod chain;
pub mod configuration;
pub mod conversion;

pub use admission::{AdmissionRequest, AdmissionResponse};
pub use chain::{next_step, versions_match};
pub use configuration::{
    OWNED_WEBHOOKS_ANNOTATION, ServiceRef, configuration_kind, conversion_stanza,
    merge_configuration, webhook_entry,
};
pub use conversion::{ConversionRequest, ConversionResponse};

use crate::hook_config::ADMISSION_CONFIGURATION_ID;

/// The largest response file read from a hook (a conversion may carry many objects).
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// A review or a response file that cannot be used; the operator answers with a denial (or a
/// failed conversion) carrying this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("bad review: {message}")]
    BadReview { message: String },
    #[error("{file} is empty")]
    EmptyResponse { file: &'static str },
    #[error("{file} is too large: {bytes} bytes (limit {MAX_RESPONSE_BYTES})")]
    ResponseTooLarge { file: &'static str, bytes: usize },
    #[error("{file} {message}")]
    BadResponse { file: &'static str, message: String },
    #[error("{file}: '{key}' must be {expected}")]
    BadResponseField {
        file: &'static str,
        key: &'static str,
        expected: &'static str,
    },
    #[error("patch in $VALIDATING_RESPONSE_PATH is {message}")]
    BadPatch { message: String },
    #[error("conversion: {message}")]
    BadConversion { message: String },
}

/// The webhook segment of an admission URL path `/<configuration>/<webhook>` (the configuration
/// segment is `hooks`); `None` for other paths.
pub fn admission_path_webhook(path: &str) -> Option<&str> {
    let rest = path.strip_prefix('/')?;
    let (configuration, webhook) = rest.split_once('/')?;
    let webhook = webhook.trim_end_matches('/');
    (configuration == ADMISSION_CONFIGURATION_ID && !webhook.is_empty()).then_some(webhook)
}

/// The CRD name of a conversion URL path `/<crdName>`; `None` for other paths.
pub fn conversion_path_crd(path: &str) -> Option<&str> {
    let crd = path.strip_prefix('/')?.trim_end_matches('/');
    (!crd.is_empty() && !crd.contains('/')).then_some(crd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_paths_name_the_configuration_and_the_webhook() {
        assert_eq!(
            admission_path_webhook("/hooks/policy-example-com"),
            Some("policy-example-com")
        );
        assert_eq!(admission_path_webhook("/other/policy-example-com"), None);
        assert_eq!(admission_path_webhook("/hooks/"), None);
        assert_eq!(admission_path_webhook("/healthz"), None);
    }

    #[test]
    fn conversion_paths_name_the_crd() {
        assert_eq!(
            conversion_path_crd("/crontabs.stable.example.com"),
            Some("crontabs.stable.example.com")
        );
        assert_eq!(conversion_path_crd("/"), None);
        assert_eq!(conversion_path_crd("/a/b"), None);
    }
}
