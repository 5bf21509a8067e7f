//! Helm's release storage as data: decoding a stored revision (`base64(gzip(JSON))`) and the
//! in-memory map of every release's revisions that the storage watch keeps up to date.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::sync::Arc;

use base64::Engine as _;

use super::cluster::{ManifestObject, manifest_objects};
use super::release::ReleaseState;

/// Why a stored revision could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("the storage object has no `release` data")]
    Missing,
    #[error("the `release` data is not base64")]
    Base64(#[source] base64::DecodeError),
    #[error("the `release` data is not gzip")]
    Gzip(#[source] std::io::Error),
    #[error("the `release` data unpacks to more than {MAX_RELEASE_JSON} bytes")]
    TooLarge,
    #[error("the `release` data is not a Helm release")]
    Json(#[source] serde_json::Error),
}

/// The most bytes a stored release may unpack to: the storage object is API input, and a few
/// hundred KiB of gzip could otherwise unpack to gigabytes in the operator.
pub(crate) const MAX_RELEASE_JSON: u64 = 64 << 20;

/// The bytes of Helm's `release` field (already without the API's own base64 for a Secret):
/// base64 of the gzip of the release JSON; helm also reads it without gzip, so do we.
pub(crate) fn decode(release_field: &[u8]) -> Result<ReleaseState, DecodeError> {
    let trimmed = release_field.trim_ascii();
    if trimmed.is_empty() {
        return Err(DecodeError::Missing);
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(trimmed)
        .map_err(DecodeError::Base64)?;
    let json = if bytes.starts_with(&[0x1f, 0x8b, 0x08]) {
        let mut text = Vec::with_capacity(bytes.len() * 4);
        flate2::read::GzDecoder::new(bytes.as_slice())
            .take(MAX_RELEASE_JSON + 1)
            .read_to_end(&mut text)
            .map_err(DecodeError::Gzip)?;
        if text.len() as u64 > MAX_RELEASE_JSON {
            return Err(DecodeError::TooLarge);
        }
        text
    } else {
        bytes
    };
    ReleaseState::from_status_slice(&json).map_err(DecodeError::Json)
}

/// What the decision needs of one stored revision: its state without the manifest text, and the
/// identities of the manifest's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Revision {
    pub status: String,
    pub checksum: Option<String>,
    pub objects: Arc<Vec<ManifestObject>>,
    /// `metadata.resourceVersion` of the storage object, when numeric.
    pub object_version: Option<u64>,
}

/// The latest revision of a release, as the decision reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Latest {
    pub revision: u64,
    pub status: String,
    pub checksum: Option<String>,
    pub objects: Arc<Vec<ManifestObject>>,
}

impl Latest {
    /// The release part of [`ReleaseState`] (the manifest is kept as objects, not text).
    pub fn state(&self) -> ReleaseState {
        ReleaseState {
            status: self.status.clone(),
            revision: self.revision,
            checksum: self.checksum.clone(),
            manifest: String::new(),
        }
    }
}

/// Every release of the namespace: release → revision → [`Revision`].
#[derive(Debug, Default)]
pub(crate) struct ReleaseCache {
    releases: HashMap<String, BTreeMap<u64, Revision>>,
    /// release → resourceVersion of the last targeted list of its revisions; watch events at or
    /// below it are older than what the cache holds and are ignored.
    floors: HashMap<String, u64>,
}

/// One storage object seen by the watch or a list, already decoded.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub release: String,
    pub revision: u64,
    pub state: ReleaseState,
    pub object_version: Option<u64>,
}

impl Stored {
    fn into_revision(self) -> (String, u64, Revision) {
        let objects = Arc::new(manifest_objects(&self.state.manifest));
        let revision = Revision {
            status: self.state.status,
            checksum: self.state.checksum,
            objects,
            object_version: self.object_version,
        };
        (self.release, self.revision, revision)
    }
}

impl ReleaseCache {
    /// A revision created or changed (watch `ADDED`/`MODIFIED`).
    pub fn apply(&mut self, stored: Stored) {
        if self.is_older(&stored.release, stored.object_version) {
            return;
        }
        let (release, number, revision) = stored.into_revision();
        self.releases
            .entry(release)
            .or_default()
            .insert(number, revision);
    }

    /// A revision deleted (watch `DELETED`, helm's history limit, uninstall, unstick).
    pub fn delete(&mut self, release: &str, revision: u64, object_version: Option<u64>) {
        if self.is_older(release, object_version) {
            return;
        }
        if let Some(revisions) = self.releases.get_mut(release) {
            revisions.remove(&revision);
            if revisions.is_empty() {
                self.releases.remove(release);
            }
        }
    }

    /// Replaces everything with a full list (the watch's first list or a re-list).
    pub fn replace(&mut self, all: Vec<Stored>) {
        self.releases.clear();
        self.floors.clear();
        for stored in all {
            self.apply(stored);
        }
    }

    /// Replaces one release's revisions with a targeted list taken at `list_version`.
    pub fn replace_release(&mut self, release: &str, revisions: Vec<Stored>, list_version: u64) {
        self.releases.remove(release);
        for stored in revisions.into_iter().filter(|s| s.release == release) {
            let (name, number, revision) = stored.into_revision();
            self.releases
                .entry(name)
                .or_default()
                .insert(number, revision);
        }
        self.floors.insert(release.to_string(), list_version);
    }

    /// The highest revision of `release`, or `None` when it has none.
    pub fn latest(&self, release: &str) -> Option<Latest> {
        let (number, revision) = self.releases.get(release)?.iter().next_back()?;
        Some(Latest {
            revision: *number,
            status: revision.status.clone(),
            checksum: revision.checksum.clone(),
            objects: Arc::clone(&revision.objects),
        })
    }

    /// Names of the releases that have at least one revision, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.releases.keys().cloned().collect();
        names.sort();
        names
    }

    fn is_older(&self, release: &str, object_version: Option<u64>) -> bool {
        match (self.floors.get(release), object_version) {
            (Some(floor), Some(version)) => version <= *floor,
            _ => false,
        }
    }
}

/// Release name and revision from the storage object's labels (`name`, `version`), or from its
/// name `sh.helm.release.v1.<release>.v<revision>` when a label is missing.
pub(crate) fn identity(
    object_name: &str,
    labels: Option<&BTreeMap<String, String>>,
) -> Option<(String, u64)> {
    let label = |key: &str| labels.and_then(|l| l.get(key)).cloned();
    let from_name = object_name
        .strip_prefix("sh.helm.release.v1.")
        .and_then(|rest| rest.rsplit_once(".v"))
        .and_then(|(name, rev)| Some((name.to_string(), rev.parse::<u64>().ok()?)));
    let release = label("name").or_else(|| from_name.as_ref().map(|(n, _)| n.clone()))?;
    let revision = label("version")
        .and_then(|v| v.parse().ok())
        .or_else(|| from_name.map(|(_, r)| r))?;
    Some((release, revision))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn helm_encode(json: &str) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(json.as_bytes()).unwrap();
        let bytes = gz.finish().unwrap();
        base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .into_bytes()
    }

    #[test]
    fn a_release_that_unpacks_past_the_limit_is_refused_without_unpacking_it_whole() {
        // 65 MiB of spaces gzip to about 64 KiB: a storage object small enough for the API
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..65 {
            gz.write_all(&chunk).unwrap();
        }
        let field = base64::engine::general_purpose::STANDARD
            .encode(gz.finish().unwrap())
            .into_bytes();
        assert!(field.len() < 1 << 20);
        assert!(matches!(decode(&field), Err(DecodeError::TooLarge)));
    }

    const RELEASE: &str = r#"{"name":"web","version":2,"info":{"status":"deployed"},
        "chart":{"metadata":{"name":"web"}},"config":{"_addonOperatorModuleChecksum":"abc"},
        "manifest":"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n"}"#;

    fn stored(revision: u64, status: &str, object_version: u64) -> Stored {
        Stored {
            release: "web".into(),
            revision,
            state: ReleaseState {
                status: status.into(),
                revision,
                checksum: Some("abc".into()),
                manifest: String::new(),
            },
            object_version: Some(object_version),
        }
    }

    #[test]
    fn a_gzipped_release_decodes_to_status_checksum_and_manifest() {
        let state = decode(&helm_encode(RELEASE)).unwrap();
        assert_eq!(state.status, "deployed");
        assert_eq!(state.revision, 2);
        assert_eq!(state.checksum.as_deref(), Some("abc"));
        assert!(state.manifest.contains("web-config"));
    }

    #[test]
    fn a_release_without_gzip_decodes_too_and_garbage_is_an_error() {
        let plain = base64::engine::general_purpose::STANDARD.encode(RELEASE);
        assert_eq!(decode(plain.as_bytes()).unwrap().revision, 2);
        assert!(matches!(decode(b"%%%"), Err(DecodeError::Base64(_))));
        assert!(matches!(decode(b""), Err(DecodeError::Missing)));
        let not_json = base64::engine::general_purpose::STANDARD.encode("nope");
        assert!(matches!(
            decode(not_json.as_bytes()),
            Err(DecodeError::Json(_))
        ));
    }

    #[test]
    fn the_latest_revision_is_the_highest_and_deleting_it_falls_back() {
        let mut cache = ReleaseCache::default();
        cache.apply(stored(1, "superseded", 5));
        cache.apply(stored(2, "pending-upgrade", 7));
        assert_eq!(cache.latest("web").unwrap().revision, 2);
        cache.delete("web", 2, Some(8));
        let latest = cache.latest("web").unwrap();
        assert_eq!((latest.revision, latest.status.as_str()), (1, "superseded"));
        cache.delete("web", 1, Some(9));
        assert!(cache.latest("web").is_none());
        assert!(cache.names().is_empty());
    }

    #[test]
    fn watch_events_older_than_a_targeted_list_are_ignored() {
        let mut cache = ReleaseCache::default();
        cache.replace_release("web", vec![stored(2, "deployed", 10)], 12);
        // the watch delivers the pending state of v2 that the list already saw replaced
        cache.apply(stored(2, "pending-upgrade", 9));
        cache.delete("web", 2, Some(11));
        assert_eq!(cache.latest("web").unwrap().status, "deployed");
        cache.apply(stored(3, "deployed", 13));
        assert_eq!(cache.latest("web").unwrap().revision, 3);
    }

    #[test]
    fn a_full_list_replaces_everything() {
        let mut cache = ReleaseCache::default();
        cache.replace_release("old", Vec::new(), 50);
        cache.apply(stored(1, "deployed", 3));
        cache.replace(vec![Stored {
            release: "api".into(),
            ..stored(4, "failed", 60)
        }]);
        assert_eq!(cache.names(), ["api"]);
    }

    #[test]
    fn identity_comes_from_labels_or_the_object_name() {
        let labels: BTreeMap<String, String> = [("name", "web"), ("version", "3")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(identity("whatever", Some(&labels)), Some(("web".into(), 3)));
        assert_eq!(
            identity("sh.helm.release.v1.my.web.v12", None),
            Some(("my.web".into(), 12))
        );
        assert_eq!(identity("other", None), None);
    }
}
