//! What a Helm release (`helm status -o json` or a storage revision) and `helm list -o json`
//! say, and the pure part of the upgrade decision.

use serde::Deserialize;

use crate::edges::helm::CHECKSUM_KEY;

/// The latest revision of a release, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReleaseState {
    /// `deployed`, `failed`, `pending-install`, `pending-upgrade`, `pending-rollback`, ...
    pub status: String,
    /// Revision number (`sh.helm.release.v1.<name>.v<revision>`).
    pub revision: u64,
    /// [`CHECKSUM_KEY`] from the values the revision was installed with.
    pub checksum: Option<String>,
    /// The rendered manifest (without hooks).
    pub manifest: String,
}

#[derive(Deserialize)]
struct StatusJson {
    #[serde(default)]
    info: InfoJson,
    #[serde(default)]
    config: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    manifest: String,
    #[serde(default)]
    version: u64,
}

#[derive(Deserialize, Default)]
struct InfoJson {
    #[serde(default)]
    status: String,
}

#[derive(Deserialize)]
struct ListItem {
    name: String,
}

impl ReleaseState {
    /// Parses the output of `helm status RELEASE -o json` (same shape in helm 3 and 4).
    pub fn from_status_json(text: &str) -> Result<Self, serde_json::Error> {
        Self::from_status_slice(text.as_bytes())
    }

    /// Parses a release as JSON bytes: `helm status -o json`, or a decoded storage revision.
    pub fn from_status_slice(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        let status: StatusJson = serde_json::from_slice(bytes)?;
        let checksum = status
            .config
            .as_ref()
            .and_then(|config| config.get(CHECKSUM_KEY))
            .and_then(|v| v.as_str())
            .map(str::to_string);
        Ok(Self {
            status: status.info.status,
            revision: status.version,
            checksum,
            manifest: status.manifest,
        })
    }

    /// Whether an earlier helm process died in the middle of this revision; helm refuses to
    /// touch such a release ("another operation is in progress").
    pub fn is_pending(&self) -> bool {
        self.status.starts_with("pending-")
    }

    /// The reason an upgrade is needed, judging by the release alone (the resources in the
    /// cluster are checked separately).
    pub fn upgrade_reason(&self, checksum: &str) -> Option<String> {
        if self.status != "deployed" {
            return Some(format!("last release status is '{}'", self.status));
        }
        match &self.checksum {
            Some(stored) if stored == checksum => None,
            Some(stored) => Some(format!("checksum changed from {stored} to {checksum}")),
            None => Some("the release has no stored checksum".to_string()),
        }
    }
}

/// Release names from `helm list -o json`.
pub(crate) fn names_from_list_json(text: &str) -> Result<Vec<String>, serde_json::Error> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<ListItem> = serde_json::from_str(text)?;
    Ok(items.into_iter().map(|i| i.name).collect())
}

/// Whether helm's stderr says the release does not exist.
pub(crate) fn is_not_found(stderr: &str) -> bool {
    stderr.contains("release: not found")
}

/// Whether helm refused an upgrade because the latest revision is `pending-*`.
pub(crate) fn is_in_progress(stderr: &str) -> bool {
    stderr.contains("another operation (install/upgrade/rollback) is in progress")
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = r#"{"name":"web","info":{"first_deployed":"x","status":"deployed"},
        "config":{"replicas":1,"_addonOperatorModuleChecksum":"abc"},
        "manifest":"---\nkind: ConfigMap\n","version":3,"namespace":"apps"}"#;

    #[test]
    fn status_json_gives_status_revision_checksum_and_manifest() {
        let state = ReleaseState::from_status_json(STATUS).unwrap();
        assert_eq!(state.status, "deployed");
        assert_eq!(state.revision, 3);
        assert_eq!(state.checksum.as_deref(), Some("abc"));
        assert!(state.manifest.contains("ConfigMap"));
    }

    #[test]
    fn a_deployed_release_with_the_same_checksum_needs_no_upgrade() {
        let state = ReleaseState::from_status_json(STATUS).unwrap();
        assert_eq!(state.upgrade_reason("abc"), None);
        assert!(state.upgrade_reason("def").unwrap().contains("checksum"));
    }

    #[test]
    fn failed_and_pending_releases_need_an_upgrade() {
        let mut state = ReleaseState::from_status_json(STATUS).unwrap();
        state.status = "failed".into();
        assert!(state.upgrade_reason("abc").is_some());
        state.status = "pending-upgrade".into();
        assert!(state.is_pending());
        assert!(
            state
                .upgrade_reason("abc")
                .unwrap()
                .contains("pending-upgrade")
        );
    }

    #[test]
    fn a_release_without_a_stored_checksum_needs_an_upgrade() {
        for text in [
            r#"{"info":{"status":"deployed"},"config":null,"version":1}"#,
            r#"{"info":{"status":"deployed"},"version":1}"#,
        ] {
            let state = ReleaseState::from_status_json(text).unwrap();
            assert!(state.upgrade_reason("abc").is_some());
        }
    }

    #[test]
    fn list_json_gives_names_and_empty_output_means_none() {
        let names = names_from_list_json(
            r#"[{"name":"a","namespace":"n","status":"deployed"},{"name":"b","status":"failed"}]"#,
        )
        .unwrap();
        assert_eq!(names, ["a", "b"]);
        assert!(names_from_list_json("[]\n").unwrap().is_empty());
        assert!(names_from_list_json("").unwrap().is_empty());
    }

    #[test]
    fn helm_3_and_4_not_found_messages_are_recognised() {
        assert!(is_not_found("Error: release: not found"));
        assert!(is_not_found(
            "Error: uninstall: Release not loaded: nope: release: not found"
        ));
        assert!(!is_not_found("Error: connection refused"));
        assert!(is_in_progress(
            "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress"
        ));
        assert!(!is_in_progress("Error: connection refused"));
    }
}
