//! `check`, `test` and `module render` draw a progress line on stderr when it is a terminal
//! (run under `script`, which gives the command a pseudo-terminal) and write nothing extra when
//! it is not.

use std::path::Path;
use std::process::Command;

use crate::support::{binary, path_with_tools, require_tool, run, run_ok};

/// What the terminal showed while `args` ran under a pseudo-terminal (stdout and stderr).
fn on_a_terminal(args: &[&str]) -> String {
    let command = std::iter::once(binary().display().to_string())
        .chain(args.iter().map(|a| format!("'{a}'")))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("PATH", path_with_tools())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{command}: {text}");
    text
}

fn tree(root: &Path) {
    run_ok(&[
        "module",
        "new",
        "my-module",
        "--working-dir",
        root.to_str().unwrap(),
    ]);
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
}

#[test]
fn long_commands_show_progress_on_a_terminal_and_nothing_extra_otherwise() {
    if !(require_tool("script") && require_tool("jq") && require_tool("helm")) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    let wd = root.to_str().unwrap();
    let commands: [(&[&str], &str); 3] = [
        (
            &["check", "--working-dir", wd],
            "check: running --config of 1 hook",
        ),
        (&["test", "--working-dir", wd], "test: cases 2/2"),
        (
            &["module", "render", "my-module", "--working-dir", wd],
            "module render: running the tree",
        ),
    ];
    for (args, shown) in commands {
        let terminal = on_a_terminal(args);
        assert!(terminal.contains(shown), "{args:?}: {terminal:?}");
        assert!(terminal.contains("\r\x1b[2K"), "{args:?}: {terminal:?}");
        let plain = run(args);
        assert!(plain.status.success());
        let stderr = String::from_utf8_lossy(&plain.stderr);
        assert!(
            !stderr.contains('\r') && !stderr.contains("\x1b[2K") && !stderr.contains(shown),
            "{args:?} without a terminal: {stderr:?}"
        );
    }
}
