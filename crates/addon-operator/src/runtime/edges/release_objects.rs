//! What the release guard watches: the kinds of a release's objects (per namespace) and the
//! changes the kube edge reports for them.

use serde_json::Value;

/// One kind of release objects in one namespace (`None`, or a cluster-scoped kind: all).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatchedKind {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
}

/// A change to an object of a watched kind; every object of the kind is reported (the watch
/// lists them first), the guard keeps only those of releases.
#[derive(Debug, Clone)]
pub struct ObjectChange {
    pub kind: WatchedKind,
    pub deleted: bool,
    pub object: Value,
}
