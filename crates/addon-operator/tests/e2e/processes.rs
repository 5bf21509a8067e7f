//! Process handling of `addon-operator start`: orphans of hooks are reaped (as a subreaper and as
//! PID 1), SIGTERM ends a hook that ignores it within the grace period, an unsafe tmp dir is
//! refused at startup.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{binary, path_with_tools, require_tool, wait_for, write};

/// A global `onStartup` hook in plain sh that runs `body` (with `$OUT` = the test's dir). Like
/// every executable without an extension it is asked `hook list` first (as upstream asks); it
/// answers nothing, so the probe leaves no processes behind.
fn tree(body: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let hook = format!(
        "#!/bin/sh\n[ \"$1\" = hook ] && exit 0\nif [ \"$1\" = --config ]; then echo '{{\"configVersion\":\"v1\",\"onStartup\":1}}'; exit 0; fi\n{body}\n"
    );
    write(&r.join("global-hooks/hook"), &hook, true);
    write(&r.join("modules/.keep"), "", false);
    write(&r.join("config.yaml"), "", false);
    root
}

/// `start` on `root` (optionally behind `wrapper`), logging to `operator.log`.
fn start(root: &Path, wrapper: &[&str], extra: &[&str]) -> Child {
    let (program, args) = match wrapper.split_first() {
        Some((program, args)) => (program.to_string(), args.to_vec()),
        None => (binary().display().to_string(), Vec::new()),
    };
    let mut cmd = Command::new(program);
    cmd.args(args);
    if !wrapper.is_empty() {
        cmd.arg(binary());
    }
    cmd.arg("start")
        .arg("--working-dir")
        .arg(root)
        .arg("--config-file")
        .arg(root.join("config.yaml"))
        .arg("--tmp-dir")
        .arg(root.join("tmp"))
        .args(["--prometheus-listen-address", "127.0.0.1"])
        .args(["--prometheus-listen-port", "0"])
        .arg("--debug-unix-socket")
        .arg(root.join("debug.socket"))
        .args(extra)
        .env("OUT", root)
        .env("PATH", path_with_tools())
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("operator.log")).unwrap());
    cmd.spawn().unwrap()
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join("operator.log")).unwrap_or_default()
}

/// `(pid, command, state)` of every process whose parent is `parent`.
fn children_of(parent: u32) -> Vec<(u32, String, char)> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.get(1).and_then(|ppid| ppid.parse().ok()) == Some(parent) {
            let pid = stat[..open].trim().parse().unwrap_or(0);
            let state = fields[0].chars().next().unwrap_or('?');
            children.push((pid, stat[open + 1..close].to_string(), state));
        }
    }
    children
}

fn terminate(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// A hook that leaves two background `sleep`s: one double-forked, one in a session of its own.
const DOUBLE_FORK: &str = "( sleep 3 </dev/null >/dev/null 2>&1 & )\n\
     ( setsid sleep 3 </dev/null >/dev/null 2>&1 & )\n\
     echo done > \"$OUT/hook.done\"";

/// Waits until `operator` adopted the hook's two sleeps, then until none of its children is a
/// sleep or a zombie.
fn assert_orphans_are_adopted_and_reaped(root: &Path, operator: u32) {
    wait_for(
        "the operator to adopt both orphans",
        &root.join("operator.log"),
        || {
            let children = children_of(operator);
            children
                .iter()
                .filter(|(_, name, _)| name == "sleep")
                .count()
                == 2
        },
    );
    wait_for(
        "the orphans to exit and be reaped",
        &root.join("operator.log"),
        || {
            children_of(operator)
                .iter()
                .all(|(_, name, state)| name != "sleep" && *state != 'Z')
        },
    );
}

#[test]
fn a_subreaper_operator_reaps_the_orphans_of_its_hooks() {
    let root = tree(DOUBLE_FORK);
    let r = root.path();
    let mut operator = start(r, &[], &[]);
    assert_orphans_are_adopted_and_reaped(r, operator.id());
    assert!(r.join("hook.done").exists());
    terminate(&mut operator);
}

/// An `unshare` command line that runs a program as PID 1 of a new pid namespace (with its own
/// `/proc`), as root or, for other users, in a user namespace; `None` when neither is allowed.
fn pid_namespace_wrapper() -> Option<Vec<&'static str>> {
    let variants = [
        vec!["unshare", "--pid", "--fork", "--mount-proc"],
        vec![
            "unshare",
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--mount-proc",
        ],
    ];
    variants.into_iter().find(|wrapper| {
        Command::new(wrapper[0])
            .args(&wrapper[1..])
            .arg("true")
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}

#[test]
fn as_pid_1_in_a_pid_namespace_the_operator_reaps_orphans() {
    let Some(wrapper) = pid_namespace_wrapper() else {
        eprintln!(
            "skipping: unshare cannot make a pid namespace here (the subreaper test covers the reaper)"
        );
        return;
    };
    let root = tree(DOUBLE_FORK);
    let r = root.path();
    let mut unshare = start(r, &wrapper, &[]);
    wait_for(
        "the operator to start inside the namespace",
        &r.join("operator.log"),
        || !children_of(unshare.id()).is_empty(),
    );
    let operator = children_of(unshare.id())[0].0;
    assert_orphans_are_adopted_and_reaped(r, operator);
    let _ = Command::new("kill")
        .args(["-TERM", &operator.to_string()])
        .status();
    let status = unshare.wait().unwrap();
    assert!(status.success(), "{}", log(r));
}

#[test]
fn sigterm_kills_a_hook_ignoring_it_after_the_grace_period_and_exits_0() {
    let root = tree("trap '' TERM\necho $$ > \"$OUT/hook.pid\"\nwhile :; do sleep 0.1; done");
    let r = root.path();
    let grace = Duration::from_secs(2);
    let mut operator = start(r, &[], &["--hook-kill-grace", "2s"]);
    // the shell creates the file before it writes the pid: wait for the whole line
    wait_for("the hook to start", &r.join("operator.log"), || {
        std::fs::read_to_string(r.join("hook.pid")).is_ok_and(|pid| pid.ends_with('\n'))
    });
    let hook_pid = std::fs::read_to_string(r.join("hook.pid")).unwrap();
    assert!(hook_pid.trim().parse::<u32>().is_ok(), "{hook_pid:?}");
    let started = Instant::now();
    Command::new("kill")
        .args(["-TERM", &operator.id().to_string()])
        .status()
        .unwrap();
    let status = operator.wait().unwrap();
    let took = started.elapsed();
    assert!(status.success(), "{status}\n{}", log(r));
    assert!(took < grace + Duration::from_secs(2), "took {took:?}");
    // killed: gone, or a zombie its new parent (init) has not reaped yet
    let hook_stat = Path::new("/proc").join(hook_pid.trim()).join("stat");
    let state = std::fs::read_to_string(&hook_stat).unwrap_or_default();
    let running = state
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.chars().next())
        .is_some_and(|s| s != 'Z' && s != 'X');
    assert!(!running, "the hook outlived the operator: {state}");
}

#[test]
fn a_tmp_dir_writable_by_others_stops_the_start() {
    use std::os::unix::fs::PermissionsExt;
    let root = tree("true");
    let r = root.path();
    std::fs::create_dir(r.join("tmp")).unwrap();
    std::fs::set_permissions(r.join("tmp"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut operator = start(r, &[], &[]);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = operator.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            terminate(&mut operator);
            panic!("the operator started with an unsafe tmp dir:\n{}", log(r));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "{}", log(r));
    let log = log(r);
    assert!(log.contains("refuse the tmp dir"), "{log}");
    assert!(log.contains("mode 0777"), "{log}");
}

fn vm_hwm_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn endless_output_lines_and_a_1g_metrics_file_cost_the_operator_no_memory() {
    let root = tree(
        "head -c 200000000 /dev/zero | tr '\\0' x\n\
         head -c 200000000 /dev/zero | tr '\\0' y >&2\n\
         truncate -s 1G \"$METRICS_PATH\"\n\
         echo done >> \"$OUT/hook.done\"",
    );
    let r = root.path();
    let mut operator = start(r, &[], &["--retry-initial-delay", "60s"]);
    wait_for(
        "the hook to fail on its metrics file",
        &r.join("operator.log"),
        || log(r).contains("is larger than the limit of 67108864 bytes"),
    );
    let peak_mb = vm_hwm_kb(operator.id()) / 1024;
    let text = log(r);
    terminate(&mut operator);
    assert!(peak_mb < 150, "the operator grew to {peak_mb} MB");
    assert!(
        text.contains("cannot read the output files of hook 'hook': the file $METRICS_PATH"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "[line truncated: {} more bytes dropped]",
            200_000_000 - 10_000
        )),
        "{}",
        &text[..text.len().min(3000)]
    );
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 20_000, "a log line of {longest} bytes");
}

#[test]
fn check_fails_on_a_config_answer_over_the_cap_instead_of_parsing_a_part() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let hook = "#!/bin/sh\necho '{\"configVersion\":\"v1\",\"onStartup\":1}'\nhead -c 70000000 /dev/zero | tr '\\0' ' '\n";
    write(&r.join("global-hooks/hook"), hook, true);
    write(&r.join("modules/.keep"), "", false);
    let out = Command::new(binary())
        .args(["check", "--working-dir"])
        .arg(r)
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("printed more than the limit of 67108864 bytes"),
        "{text}"
    );
}

#[test]
fn planted_symlinks_never_redirect_the_embedded_kubeconfig() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    if !require_tool("helm") {
        return;
    }
    let root = tree("true");
    let r = root.path();
    let tmp = r.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o700)).unwrap();
    let victim = r.join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    symlink(&victim, tmp.join("embedded-cluster.tmp")).unwrap();
    symlink(&victim, tmp.join("embedded-cluster.kubeconfig")).unwrap();
    let kubeconfig = tmp.join("embedded-cluster.kubeconfig");
    let mut operator = start(
        r,
        &[],
        &["--embedded-cluster", "--embedded-cluster-port", "0"],
    );
    wait_for(
        "the kubeconfig to be written",
        &r.join("operator.log"),
        || std::fs::symlink_metadata(&kubeconfig).is_ok_and(|meta| meta.is_file()),
    );
    terminate(&mut operator);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    let mode = std::fs::metadata(&kubeconfig).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        std::fs::read_to_string(&kubeconfig)
            .unwrap()
            .contains("server: http")
    );
}
