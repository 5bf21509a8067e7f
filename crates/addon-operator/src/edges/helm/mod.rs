//! The Helm edge: the `helm` binary and Helm's storage behind the runtime's `Helm` port
//! (`runtime::edges::helm`, re-exported here), the chart's files, the post-renderer and the
//! render-only `TemplateHelm`.

pub mod binary;
pub mod chart_files;
pub mod helmignore;
pub mod post_render;
pub mod template;

pub use crate::runtime::edges::helm::{CHECKSUM_KEY, Drift, Helm, HelmError, UpgradeRequest};
