//! `start`'s log output: upstream JSON keys, `--log-no-time`, `--log-proxy-hook-json`, the `ready`
//! line, a quiet steady state, and no hang or crash when stderr/stdout are closed or broken pipes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use addon_operator::edges::exec::inherited_env;
use serde_json::Value;

use crate::support::{binary, path_with_tools, require_tool, start_command, write};

/// A tree with one global hook: onStartup plus a schedule every second; each run prints a JSON
/// record and `lines` plain lines.
fn chatty_tree(lines: usize) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let hook = format!(
        r#"#!/usr/bin/env bash
if [ "$1" = "--config" ]; then
  echo '{{"configVersion":"v1","onStartup":1,"schedule":[{{"name":"tick","crontab":"* * * * * *"}}]}}'
  exit 0
fi
echo '{{"level":"warn","msg":"from the hook","time":"ignored","disk":"low"}}'
for i in $(seq 1 {lines}); do echo "plain line $i"; done
"#
    );
    write(&root.path().join("global-hooks/chatty"), &hook, true);
    std::fs::create_dir_all(root.path().join("modules")).unwrap();
    root
}

fn operator(root: &Path, extra: &[&str]) -> Command {
    let mut cmd = start_command(root.join("tmp"), root.join("debug.socket"));
    cmd.arg("--working-dir")
        .arg(root)
        .args(extra)
        .env("LOG_LEVEL", "info")
        .env_remove("RUST_LOG")
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .stdin(Stdio::null());
    cmd
}

/// The operator started with `extra` flags, stdout dropped, and a reader of its stderr (the log).
fn spawn_reading_stderr(root: &Path, extra: &[&str]) -> (Child, BufReader<ChildStderr>) {
    reading_stderr(operator(root, extra))
}

/// `command` started with stdout dropped, and a reader of its stderr (the log).
fn reading_stderr(mut command: Command) -> (Child, BufReader<ChildStderr>) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    (child, stderr)
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for the child to exit after SIGTERM; `None` when it is still running after `limit`
/// (it is then killed so the test does not leak it).
fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Reads stderr lines until one satisfies `done` (at most 30 s), returning all lines read.
fn read_until(
    stderr: &mut BufReader<ChildStderr>,
    mut done: impl FnMut(&str) -> bool,
) -> Vec<String> {
    let started = Instant::now();
    let mut lines = Vec::new();
    while started.elapsed() < Duration::from_secs(30) {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let finished = done(&line);
        lines.push(line.trim_end().to_string());
        if finished {
            return lines;
        }
    }
    panic!("the awaited line never came; log:\n{}", lines.join("\n"));
}

fn json_lines(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn json_logs_have_upstream_keys_and_proxy_hook_records() {
    if !require_tool("bash") {
        return;
    }
    let root = chatty_tree(1);
    let args = ["--log-type", "json", "--log-proxy-hook-json"];
    let (mut child, mut stderr) = spawn_reading_stderr(root.path(), &args);
    let lines = json_lines(&read_until(&mut stderr, |l| l.contains(r#""msg":"ready""#)));
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(10)).is_some());
    for line in &lines {
        let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "level", "{line}");
        assert_eq!(keys[1], "msg", "{line}");
        assert_eq!(keys.last().unwrap().as_str(), "time", "{line}");
        let level = line["level"].as_str().unwrap();
        assert!(["info", "warn", "error"].contains(&level), "{line}");
        let time = line["time"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(time).is_ok(), "{line}");
    }
    let proxied = lines
        .iter()
        .find(|l| l["msg"] == "from the hook")
        .expect("the hook's JSON record is logged");
    assert_eq!(proxied["level"], "warn");
    assert_eq!(proxied["hook_disk"], "low");
    assert_eq!(proxied["proxyJsonLog"], true);
    assert_eq!(proxied["hook"], "chatty");
    assert_eq!(proxied["binding"], "onStartup");
    assert_eq!(proxied["output"], "stdout");
    assert!(proxied.get("hook_time").is_none(), "{proxied}");
    let plain = lines.iter().find(|l| l["msg"] == "plain line 1").unwrap();
    assert!(plain.get("proxyJsonLog").is_none(), "{plain}");
    let ready = lines.last().unwrap();
    assert_eq!(ready["modules"], 0);
    assert!(ready["duration_ms"].is_u64(), "{ready}");
}

#[test]
fn no_time_leaves_the_time_out_and_steady_state_prints_one_line_per_task() {
    if !require_tool("bash") {
        return;
    }
    let root = chatty_tree(0);
    let args = ["--log-type", "json", "--log-no-time"];
    let (mut child, mut stderr) = spawn_reading_stderr(root.path(), &args);
    read_until(&mut stderr, |l| l.contains(r#""msg":"ready""#));
    // three schedule runs after the first converge
    let mut ticks = 0;
    let steady = read_until(&mut stderr, |l| {
        ticks += usize::from(l.contains("schedule"));
        ticks >= 3
    });
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(10)).is_some());
    let steady = json_lines(&steady);
    for line in &steady {
        assert!(line.get("time").is_none(), "{line}");
    }
    // besides what the hook itself prints, one line per task: "task done"
    let operator_lines: Vec<&Value> = steady
        .iter()
        .filter(|l| l.get("output").is_none())
        .collect();
    assert!(operator_lines.len() >= 3, "{steady:#?}");
    assert!(
        operator_lines.iter().all(|l| l["msg"] == "task done"),
        "{operator_lines:#?}"
    );
}

/// Text logs a person can read: one line per event, the hook's own output line right after
/// the level, each field once (span and event fields are not repeated), no empty fields.
#[test]
fn text_logs_put_the_hook_line_first_and_each_field_once() {
    if !require_tool("bash") {
        return;
    }
    let root = chatty_tree(1);
    let args = ["--log-type", "text", "--log-no-time"];
    let (mut child, mut stderr) = spawn_reading_stderr(root.path(), &args);
    let mut lines = read_until(&mut stderr, |l| l.contains("plain line 1"));
    let hook_line = lines.last().unwrap().clone();
    lines.extend(read_until(&mut stderr, |l| l.starts_with(" INFO ready")));
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(10)).is_some());
    assert!(hook_line.starts_with(" INFO plain line 1 "), "{hook_line}");
    assert_eq!(hook_line.matches("hook=chatty").count(), 1, "{hook_line}");
    assert!(hook_line.contains(" output=stdout"), "{hook_line}");
    for line in &lines {
        assert!(!line.contains("=\"\""), "an empty field: {line}");
        assert!(!line.contains("module= "), "an empty field: {line}");
    }
    let ready = lines.last().unwrap();
    assert!(ready.starts_with(" INFO ready modules=0"), "{ready}");
}

/// How the operator's stdio is broken in [`broken_output_never_hangs_or_crashes`].
#[derive(Debug, Clone, Copy)]
enum Broken {
    /// stderr is a pipe whose reader goes away after two lines (`2>&1 | head -2`).
    StderrPipe,
    /// stdout is a pipe closed before start, stderr as well after two lines.
    BothPipes,
    /// stderr is closed (`2>&-`).
    StderrClosed,
}

fn spawn_broken(root: &Path, log_type: &str, how: Broken) -> Child {
    let args = ["--log-type", log_type];
    match how {
        Broken::StderrPipe | Broken::BothPipes => {
            let mut child = operator(root, &args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take();
            if matches!(how, Broken::BothPipes) {
                drop(stdout);
            }
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            let mut seen = 0;
            read_until(&mut stderr, |_| {
                seen += 1;
                seen >= 2
            });
            drop(stderr);
            child
        }
        Broken::StderrClosed => {
            let mut wrapped = Command::new("sh");
            let cmd = operator(root, &args);
            wrapped
                .arg("-c")
                .arg(r#"exec "$0" "$@" 2>&-"#)
                .arg(cmd.get_program())
                .args(cmd.get_args())
                .env("PATH", path_with_tools())
                .stdout(Stdio::null());
            wrapped.spawn().unwrap()
        }
    }
}

#[test]
fn broken_output_never_hangs_or_crashes() {
    if !require_tool("bash") {
        return;
    }
    const ROUNDS: usize = 3;
    for round in 0..ROUNDS {
        for log_type in ["json", "text"] {
            for how in [Broken::StderrPipe, Broken::BothPipes, Broken::StderrClosed] {
                let root = chatty_tree(200);
                let mut child = spawn_broken(root.path(), log_type, how);
                // let it log into the broken output for a while: hooks, tasks, schedules
                std::thread::sleep(Duration::from_millis(1500));
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "round {round}, {log_type}, {how:?}: died before SIGTERM"
                );
                sigterm(&child);
                let status = exit_within(&mut child, Duration::from_secs(10));
                let status = status.unwrap_or_else(|| {
                    panic!("round {round}, {log_type}, {how:?}: still running 10 s after SIGTERM")
                });
                assert!(
                    status.success(),
                    "round {round}, {log_type}, {how:?}: {status}"
                );
            }
        }
    }
}

#[test]
fn the_log_level_changes_at_run_time_through_the_debug_socket() {
    if !require_tool("bash") {
        return;
    }
    let root = chatty_tree(0);
    let (mut child, mut stderr) = spawn_reading_stderr(root.path(), &["--log-type", "json"]);
    let before = read_until(&mut stderr, |l| l.contains(r#""msg":"ready""#));
    assert!(!before.iter().any(|l| l.contains(r#""level":"debug""#)));
    let socket = root.path().join("debug.socket");
    let debug = |args: &[&str]| {
        let out = Command::new(binary())
            .args(["debug", "log-level"])
            .args(args)
            .arg("--debug-unix-socket")
            .arg(&socket)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(debug(&[]), "info\n");
    assert_eq!(debug(&["debug"]), "log.level set to debug\n");
    assert_eq!(debug(&[]), "debug\n");
    // the next schedule run logs its task start at debug level
    read_until(&mut stderr, |l| {
        l.contains(r#""level":"debug""#) && l.contains("task started")
    });
    // a level given a duration reverts by itself, as upstream's `config set log.level`
    assert_eq!(debug(&["trace", "1s"]), "log.level set to trace\n");
    let reverted = read_until(&mut stderr, |l| l.contains("temporary log level expired"));
    assert!(
        reverted
            .last()
            .is_some_and(|l| l.contains(r#""to":"info""#)),
        "{reverted:?}"
    );
    assert_eq!(debug(&[]), "info\n");
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(10)).is_some());
}

#[test]
fn no_command_means_start_and_version_completion_and_man_print() {
    let root = chatty_tree(0);
    // `addon-operator --working-dir ...` without `start`
    let plain = operator(root.path(), &[]);
    let args: Vec<_> = plain.get_args().skip(1).map(|a| a.to_owned()).collect();
    let mut child = Command::new(binary())
        .args(args)
        .envs(plain.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    read_until(&mut stderr, |l| l.contains(" ready modules=0"));
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(10)).is_some_and(|s| s.success()));

    let version = crate::support::run_ok(&["--version"]);
    let re_like = version.trim_end();
    assert!(
        re_like.starts_with(&format!(
            "addon-operator {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{version}"
    );
    assert!(
        re_like.contains(", built 20") && re_like.ends_with("Z)"),
        "{version}"
    );
    assert_eq!(crate::support::run_ok(&["version"]), version);

    for shell in ["bash", "zsh", "fish"] {
        let script = crate::support::run_ok(&["completion", shell]);
        assert!(script.contains("addon-operator"), "{shell}");
        assert!(script.contains("log-level"), "{shell}: flags are completed");
    }
    let man = crate::support::run_ok(&["man"]);
    assert!(man.starts_with(".ie"), "roff");
    assert!(man.contains(".TH addon-operator 1"));
    assert!(
        man.contains("addon\\-operator start"),
        "a section per command"
    );
}

#[test]
fn commands_printing_to_a_closed_pipe_exit_normally_instead_of_panicking() {
    if !require_tool("bash") {
        return;
    }
    let root = chatty_tree(0);
    let dir = root.path().to_str().unwrap();
    write(
        &root.path().join("global-hooks/broken"),
        "#!/bin/sh\necho not-json\n",
        true,
    );
    let cases: [(&[&str], Option<i32>); 3] = [
        (&["check", "--working-dir", dir], Some(1)),
        (&["check", "--working-dir", dir, "-o", "json"], Some(1)),
        (&["start", "--working-dir", dir, "--tmp-dir", dir], Some(1)),
    ];
    for (args, expected) in cases {
        let mut child = Command::new(binary())
            .args(args)
            .env("PATH", path_with_tools())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // both readers go away before the command prints anything
        drop(child.stdout.take());
        drop(child.stderr.take());
        let status = exit_within(&mut child, Duration::from_secs(30)).expect("exits");
        assert_eq!(status.code(), expected, "{args:?}: 101 would be a panic");
    }
}

#[test]
fn a_failed_task_logs_the_kind_of_what_failed() {
    if !require_tool("bash") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let hook = r#"#!/usr/bin/env bash
if [ "$1" = "--config" ]; then
  echo '{"configVersion":"v1","onStartup":1}'
  exit 0
fi
exit 3
"#;
    write(&root.path().join("global-hooks/broken"), hook, true);
    std::fs::create_dir_all(root.path().join("modules")).unwrap();
    let (mut child, mut stderr) = spawn_reading_stderr(root.path(), &["--log-type", "json"]);
    let lines = read_until(&mut stderr, |l| l.contains("task failed"));
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(10)).is_some());
    let failed = json_lines(&lines[lines.len() - 1..]).remove(0);
    assert_eq!(failed["level"], "error", "{failed}");
    assert_eq!(failed["error.kind"], "hook", "{failed}");
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(error.contains("broken"), "{failed}");
}

/// The log lines until `ready` of an operator whose environment holds the link variables of
/// `services` Services (three of each, as a pod gets them).
fn log_with_linked_services(services: usize) -> Vec<Value> {
    let root = chatty_tree(0);
    let mut command = operator(root.path(), &["--log-type", "json"]);
    // the test's own environment may hold links (a CI runner in a pod): only ours count
    for (name, _) in std::env::vars_os() {
        if inherited_env::is_service_link_host(&name) {
            command.env_remove(name);
        }
    }
    for index in 0..services {
        command
            .env(format!("SVC{index}_SERVICE_HOST"), "10.96.0.10")
            .env(format!("SVC{index}_SERVICE_PORT"), "8080")
            .env(format!("SVC{index}_PORT_8080_TCP_PORT"), "8080");
    }
    let (mut child, mut stderr) = reading_stderr(command);
    let lines = read_until(&mut stderr, |l| l.contains(r#""msg":"ready""#));
    sigterm(&child);
    assert!(exit_within(&mut child, Duration::from_secs(10)).is_some());
    json_lines(&lines)
}

#[test]
fn many_service_link_variables_are_warned_about_once() {
    if !require_tool("bash") {
        return;
    }
    let is_warning = |line: &&Value| {
        line["msg"]
            .as_str()
            .unwrap_or("")
            .contains("enableServiceLinks")
    };
    let lines = log_with_linked_services(12);
    let warnings: Vec<&Value> = lines.iter().filter(is_warning).collect();
    assert_eq!(warnings.len(), 1, "{lines:?}");
    assert_eq!(warnings[0]["level"], "warn");
    assert_eq!(warnings[0]["services"], 12);
    let few = log_with_linked_services(9);
    assert!(!few.iter().any(|line| is_warning(&line)), "{few:?}");
}

/// A start that fails (here: a hook whose `--config` exits 127) is one JSON `error` line with a
/// JSON log, so a pipeline keeping only JSON lines sees it, and the readable text otherwise.
#[test]
fn a_failed_start_is_a_json_error_line_with_a_json_log() {
    if !require_tool("bash") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let hook = "#!/usr/bin/env bash\nsource /nonexistent/functions.sh\nmissing_function \"$@\"\n";
    write(&root.path().join("global-hooks/broken"), hook, true);
    std::fs::create_dir_all(root.path().join("modules")).unwrap();
    let output = |log_type: &str| {
        let out = operator(root.path(), &["--log-type", log_type])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let json = output("json");
    // every line is JSON (json_lines fails on one that is not)
    let parsed = json_lines(&json.lines().map(String::from).collect::<Vec<_>>());
    let failed = parsed.last().unwrap();
    assert_eq!(failed["level"], "error", "{json}");
    assert_eq!(failed["msg"], "cannot start, 1 problem(s)", "{json}");
    let errors = failed["errors"].as_str().unwrap_or_default();
    assert!(
        errors.contains("'broken --config' failed (exit status 127)"),
        "{json}"
    );
    let text = output("text");
    assert!(
        text.contains("addon-operator: cannot start, 1 problem(s):\n  'broken --config' failed"),
        "{text}"
    );
}
