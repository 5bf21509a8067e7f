//! How a hook is started: the executable itself, or, for a `*.py` hook whose hooks directory has
//! a `venv/bin/python3`, that interpreter with `PYTHONHOME` set (as the Go operator does).

use std::path::{Path, PathBuf};

/// Program, leading arguments and extra environment of a hook's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// The launch of `hook`, whose hooks directory (`$WORKING_DIR`) is `working_dir`.
pub fn launch(hook: &Path, working_dir: &Path) -> Launch {
    let venv = working_dir.join("venv");
    let python = venv.join("bin/python3");
    let is_python = hook.extension().is_some_and(|e| e == "py");
    if is_python && is_executable(&python) {
        return Launch {
            program: python,
            args: vec![hook.display().to_string()],
            env: vec![("PYTHONHOME".to_string(), venv.display().to_string())],
        };
    }
    Launch {
        program: hook.to_path_buf(),
        args: Vec::new(),
        env: Vec::new(),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn python_hooks_use_the_venv_interpreter_when_there_is_one() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks = tmp.path();
        let hook = hooks.join("sub/hook.py");
        let plain = launch(&hook, hooks);
        assert_eq!(plain.program, hook);
        assert!(plain.env.is_empty());

        let python = hooks.join("venv/bin/python3");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let venv = launch(&hook, hooks);
        assert_eq!(venv.program, python);
        assert_eq!(venv.args, [hook.display().to_string()]);
        assert_eq!(venv.env[0].0, "PYTHONHOME");

        let shell = launch(&hooks.join("hook.sh"), hooks);
        assert_eq!(
            shell.program,
            hooks.join("hook.sh"),
            "only .py hooks use the venv"
        );
    }
}
