//! Running hook processes: a generic child-process runner and the hook I/O contract on top of it.

pub mod hook_run;
pub mod hooks;
pub mod inherited_env;
pub mod launch;
pub mod process;
pub mod reaper;
pub mod settings_check;
pub mod tmp_files;
pub mod tmp_pool;
pub mod usage;
