//! Tests of the process runner: exits, timeouts, cancellation, output capture and logging.

use nix::sys::signal::killpg;

use super::output::Line;
use super::supervise::{exited_on_reactor, open_pidfd};
use super::*;
use addon_operator_testkit::wait::wait_for_async;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Runs the test `$name` on a current-thread runtime (the exit awaited on the blocking pool)
/// and on a multi-thread one (awaited on the reactor through a pidfd, as the operator does).
macro_rules! on_both_runtimes {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn current_thread() {
                super::$name().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn multi_thread() {
                super::$name().await
            }
        }
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reactor_sees_the_exit_and_leaves_the_zombie_to_reap() {
    let mut child = std::process::Command::new("sh")
        .args(["-c", "exit 7"])
        .spawn()
        .unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    let pidfd = open_pidfd(pid).expect("pidfds (Linux 5.3+)");
    tokio::time::timeout(Duration::from_secs(10), exited_on_reactor(pidfd))
        .await
        .expect("the exit is seen")
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    assert!(stat.contains(") Z "), "not reaped yet: {stat}");
    assert_eq!(child.wait().unwrap().code(), Some(7));
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn spec(program: PathBuf, timeout: Duration) -> ProcessSpec {
    ProcessSpec {
        cwd: program.parent().unwrap().to_path_buf(),
        program,
        args: vec![],
        env: vec![],
        timeout,
        kill_grace: Duration::from_millis(300),
        capture_stdout: true,
        clear_env: false,
    }
}

fn is_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.contains(") Z "),
        Err(_) => false,
    }
}

async fn wait_for_pid_file(path: &Path) -> i32 {
    let pid = || std::fs::read_to_string(path).ok()?.trim().parse().ok();
    let what = format!("{} to be written", path.display());
    let written = || async { pid().is_some() };
    wait_for_async(&what, Duration::from_secs(5), written, String::new).await;
    pid().unwrap_or_default()
}

async fn assert_dies_soon(pid: i32) {
    let dead = || async { !is_alive(pid) };
    let what = format!("process {pid} to die");
    wait_for_async(&what, Duration::from_secs(5), dead, String::new).await;
}

on_both_runtimes!(exit_code_and_captured_stdout_are_returned);
async fn exit_code_and_captured_stdout_are_returned() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "echo '{\"configVersion\":\"v1\"}'; exit 3",
    );
    let mut spec = spec(hook, Duration::from_secs(10));
    spec.args = vec!["--config".into()];
    let output = run(&spec, &LogFields::default()).await.unwrap();
    assert_eq!(output.exit, ExitKind::Code(3));
    assert_eq!(output.stdout, "{\"configVersion\":\"v1\"}\n");
    assert!(!output.succeeded());
    assert_eq!(output.failure_message(), "exit status 3");
}

#[tokio::test]
async fn arguments_are_passed_to_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(dir.path(), "hook", "echo \"$1\"");
    let mut spec = spec(hook, Duration::from_secs(10));
    spec.args = vec!["--config".into()];
    let output = run(&spec, &LogFields::default()).await.unwrap();
    assert!(output.succeeded());
    assert_eq!(output.stdout, "--config\n");
}

on_both_runtimes!(stderr_is_kept_as_the_failure_message);
async fn stderr_is_kept_as_the_failure_message() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "echo line1 >&2; echo 'bad thing' >&2; exit 1",
    );
    let output = run(&spec(hook, Duration::from_secs(10)), &LogFields::default())
        .await
        .unwrap();
    assert_eq!(output.stderr_tail, "line1\nbad thing\n");
    assert_eq!(output.failure_message(), "line1\nbad thing");
}

#[tokio::test]
async fn the_environment_is_inherited_and_extended_and_cwd_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "echo \"$EXTRA|${PATH:+has-path}|$(pwd)\"",
    );
    let mut spec = spec(hook, Duration::from_secs(10));
    spec.env = vec![("EXTRA".into(), "value".into())];
    let output = run(&spec, &LogFields::default()).await.unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(output.stdout, format!("value|has-path|{}\n", cwd.display()));
}

on_both_runtimes!(timeout_kills_the_process_and_its_children_quickly);
async fn timeout_kills_the_process_and_its_children_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "sleep 100 &\necho $! > child.pid\nsleep 100",
    );
    let started = std::time::Instant::now();
    let output = run(
        &spec(hook, Duration::from_millis(300)),
        &LogFields::default(),
    )
    .await
    .unwrap();
    assert_eq!(output.exit, ExitKind::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_dies_soon(wait_for_pid_file(&dir.path().join("child.pid")).await).await;
}

on_both_runtimes!(a_process_ignoring_sigterm_is_killed_after_the_grace_period);
async fn a_process_ignoring_sigterm_is_killed_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "trap '' TERM\nwhile :; do sleep 0.05; done",
    );
    let started = std::time::Instant::now();
    let output = run(
        &spec(hook, Duration::from_millis(200)),
        &LogFields::default(),
    )
    .await
    .unwrap();
    assert_eq!(output.exit, ExitKind::TimedOut);
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(started.elapsed() < Duration::from_secs(5));
}

on_both_runtimes!(cancellation_terminates_the_process_group);
async fn cancellation_terminates_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(dir.path(), "hook", "echo $$ > hook.pid\nsleep 100");
    let cancel = CancellationToken::new();
    let spec = spec(hook, Duration::from_secs(100));
    let pid_file = dir.path().join("hook.pid");
    let trigger = cancel.clone();
    tokio::spawn(async move {
        wait_for_pid_file(&pid_file).await;
        trigger.cancel();
    });
    let output = run_until_cancelled(&spec, &LogFields::default(), &cancel)
        .await
        .unwrap();
    assert_eq!(output.exit, ExitKind::Cancelled);
}

on_both_runtimes!(dropping_the_run_kills_the_process_group);
async fn dropping_the_run_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "sleep 100 &\necho $! > child.pid\nsleep 100",
    );
    let spec = spec(hook, Duration::from_secs(100));
    let running = tokio::spawn(async move { run(&spec, &LogFields::default()).await });
    let child = wait_for_pid_file(&dir.path().join("child.pid")).await;
    running.abort();
    assert_dies_soon(child).await;
}

on_both_runtimes!(cpu_time_of_a_busy_hook_is_measured);
async fn cpu_time_of_a_busy_hook_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
    );
    let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
        .await
        .unwrap();
    assert!(output.succeeded());
    assert!(
        output.usage.user + output.usage.sys > Duration::ZERO,
        "{:?}",
        output.usage
    );
    assert!(output.usage.max_rss_kb > 0, "{:?}", output.usage);
}

#[tokio::test]
async fn stdin_is_dev_null_for_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(dir.path(), "hook", "readlink /proc/self/fd/0; cat");
    for _ in 0..2 {
        let output = run(
            &spec(hook.clone(), Duration::from_secs(10)),
            &LogFields::default(),
        )
        .await
        .unwrap();
        assert!(output.succeeded());
        assert_eq!(output.stdout, "/dev/null\n");
    }
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path().join("absent"), Duration::from_secs(1));
    let error = run(&spec, &LogFields::default()).await.unwrap_err();
    assert_eq!(error.category(), "spawn");
}

#[tokio::test]
async fn stdout_is_logged_when_not_captured() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(dir.path(), "hook", "echo to-the-log");
    let mut spec = spec(hook, Duration::from_secs(10));
    spec.capture_stdout = false;
    let output = run(&spec, &LogFields::default()).await.unwrap();
    assert!(output.succeeded());
    assert_eq!(output.stdout, "");
}

on_both_runtimes!(a_background_child_holding_the_pipes_does_not_block_the_run);
async fn a_background_child_holding_the_pipes_does_not_block_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "echo config\nsleep 30 &\necho $! > child.pid\necho done",
    );
    let started = std::time::Instant::now();
    let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
        .await
        .unwrap();
    assert!(output.succeeded());
    assert_eq!(output.stdout, "config\ndone\n");
    assert!(started.elapsed() < Duration::from_secs(10));
    let child = wait_for_pid_file(&dir.path().join("child.pid")).await;
    let _ = killpg(Pid::from_raw(child), Signal::SIGKILL);
    let _ = nix::sys::signal::kill(Pid::from_raw(child), Signal::SIGKILL);
}

#[tokio::test(start_paused = true)]
async fn hooks_run_normally_under_paused_time() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "sleep 0.3\necho '{\"a\":1}'\necho warn >&2",
    );
    let output = run(&spec(hook, Duration::from_secs(1)), &LogFields::default())
        .await
        .unwrap();
    assert_eq!(output.exit, ExitKind::Code(0));
    assert_eq!(output.stdout, "{\"a\":1}\n");
    assert_eq!(output.stderr_tail, "warn\n");
}

#[tokio::test]
async fn a_long_line_without_newline_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(dir.path(), "hook", "head -c 300000 /dev/zero | tr '\\0' x");
    let output = run(&spec(hook, Duration::from_secs(10)), &LogFields::default())
        .await
        .unwrap();
    assert_eq!(output.stdout.len(), 300_000);
}

#[test]
fn a_line_keeps_its_first_bytes_and_counts_the_rest() {
    let mut line = Line::default();
    assert!(!line.push(&vec![b'x'; 3 * MAX_LINE_BYTES]));
    assert!(line.push(b"yz\n"));
    assert_eq!(line.bytes.len(), MAX_LINE_BYTES);
    assert_eq!(line.dropped, 2 * MAX_LINE_BYTES + 2);
}

#[tokio::test]
async fn an_endless_stderr_line_is_cut_and_the_cut_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "head -c 20000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last >&2; exit 1",
    );
    let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
        .await
        .unwrap();
    let dropped = 20_000_000 - MAX_LINE_BYTES;
    assert!(
        output.stderr_tail.ends_with(&format!(
            "x [line truncated: {dropped} more bytes dropped]\nlast\n"
        )),
        "{}",
        &output.stderr_tail[output.stderr_tail.len() - 100..]
    );
    let message = output.failure_message();
    assert!(message.len() < 300, "{message}");
    assert!(message.ends_with("dropped]\nlast"), "{message}");
}

#[tokio::test]
async fn an_endless_logged_stdout_line_does_not_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "head -c 20000000 /dev/zero | tr '\\0' x; echo done >&2",
    );
    let mut spec = spec(hook, Duration::from_secs(60));
    spec.capture_stdout = false;
    let output = run(&spec, &LogFields::default()).await.unwrap();
    assert!(output.succeeded());
    assert_eq!(output.stderr_tail, "done\n");
    assert!(!output.stdout_overflow);
}

#[tokio::test]
async fn captured_stdout_over_the_cap_is_dropped_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        &format!(
            "echo '{{\"configVersion\":\"v1\"}}'; head -c {} /dev/zero",
            MAX_CAPTURED_STDOUT
        ),
    );
    let output = run(&spec(hook, Duration::from_secs(60)), &LogFields::default())
        .await
        .unwrap();
    // exit 0, but a cut answer is not a success for any caller
    assert_eq!(output.exit, ExitKind::Code(0));
    assert!(output.stdout_overflow && !output.succeeded());
    assert!(output.failure_message().contains("more than the limit"));
    assert_eq!(output.stdout, "");
}

on_both_runtimes!(max_rss_is_the_peak_of_the_whole_process_tree);
async fn max_rss_is_the_peak_of_the_whole_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        "( big=$(head -c 60000000 /dev/zero | tr '\\0' x); sleep 0.5; echo ${#big} )",
    );
    let mut spec = spec(hook, Duration::from_secs(60));
    spec.capture_stdout = true;
    let output = run(&spec, &LogFields::default()).await.unwrap();
    assert_eq!(output.stdout, "60000000\n");
    assert!(
        output.usage.max_rss_kb > 50_000,
        "the subshell held 60 MB: {:?}",
        output.usage
    );
}
