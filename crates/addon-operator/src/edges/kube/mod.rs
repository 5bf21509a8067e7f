//! The Kubernetes edge: the client, kind discovery, binding watches, the ConfigMap config store and the object patcher.

pub mod api_guard;
pub mod client;
pub mod configmap;
pub mod crds;
pub mod discovery;
pub mod edge;
pub mod events;
pub mod known;
pub mod leader;
mod namespaces;
pub mod no_cluster;
pub mod own_release;
pub mod patcher;
pub mod rate_limit;
mod raw_object;
pub mod recorder;
pub mod release_watch;
mod shared;
pub mod watch;

pub use api_guard::ApiSettings;
pub use client::{ClientError, ClusterTarget, connect, connect_with};
pub use configmap::{ConfigMapStore, DEFAULT_CONFIGMAP_NAME};
pub use discovery::{DiscoveryError, KindResolver, ResolvedKind};
pub use edge::KubeEdge;
pub use events::KubeWatches;
pub use patcher::{ObjectPatcher, PatchError, PatcherSettings};
pub use rate_limit::RateLimit;
