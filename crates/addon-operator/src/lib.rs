//! The addon-operator application: command line, runtime, and the edges it talks to (filesystem,
//! hook processes, Helm, Kubernetes, HTTP).

pub mod check;
pub mod cli;
pub mod dirs;
pub mod helm;
pub mod loader;
pub mod logging;
