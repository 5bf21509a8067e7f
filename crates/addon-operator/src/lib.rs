//! Library side of the `addon-operator` binary: the runtime and its edges (hook processes, config
//! store, cron), shared by `main` and the integration tests.

pub mod config_file;
pub mod exec;
pub mod schedule;
