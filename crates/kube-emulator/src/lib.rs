//! Kubernetes API server emulator on loopback: enough of the API for kube-rs, kubectl and helm.
//!
//! Start one with [`Emulator::start`], point clients at [`EmulatorHandle::url`] or a kubeconfig
//! from [`EmulatorHandle::write_kubeconfig`]. See `docs/kube-emulator.md` for what is emulated.

mod admission;
mod api;
mod app;
mod apply;
mod body;
mod clock;
mod conversion;
mod defaults;
mod discovery;
mod events;
mod faults;
mod kubeconfig;
mod managed;
mod meta;
mod patch;
mod persist;
mod protobuf;
mod request;
mod resources;
mod schema;
mod selector;
mod server;
mod simulate;
mod status;
mod store;
mod table;
mod watch;

pub use admission::ENDPOINT_ANNOTATION;
pub use kubeconfig::kubeconfig_yaml;
pub use persist::PersistError;
pub use server::{Emulator, EmulatorConfig, EmulatorError, EmulatorHandle};
pub use status::ApiError;
