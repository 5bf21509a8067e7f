//! The addon-operator application: command line, runtime, and the edges it talks to (filesystem,
//! hook processes, Helm, Kubernetes, HTTP).

pub mod loader;
