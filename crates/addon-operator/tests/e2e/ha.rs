//! `--ha`: two operators on one API server; only the Lease holder runs hooks, and the other takes
//! over when the leader stops.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use addon_operator::edges::helm::binary::kube_cache;

use crate::cluster::{Cluster, get, http_addr_in};

use crate::support::{Running, start_command, write};

fn operator(root: &std::path::Path, kubeconfig: &std::path::Path, pod: &str) -> Running {
    operator_with_lease(root, kubeconfig, pod, "3s")
}

fn operator_with_lease(
    root: &std::path::Path,
    kubeconfig: &std::path::Path,
    pod: &str,
    lease: &str,
) -> Running {
    let child = start_command(
        root.join(format!("tmp-{pod}")),
        root.join(format!("{pod}.socket")),
    )
    .arg("--working-dir")
    .arg(root)
    .arg("--kube-config")
    .arg(kubeconfig)
    .args(["--ha", "--ha-lease-duration", lease])
    .env("ADDON_OPERATOR_POD", pod)
    .env("HOOK_LOG", root.join("hooks.log"))
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(root.join(format!("{pod}.log"))).unwrap())
    .spawn()
    .unwrap();
    Running(child)
}

fn hook_log(root: &std::path::Path) -> String {
    std::fs::read_to_string(root.join("hooks.log")).unwrap_or_default()
}

fn wait_for(root: &std::path::Path, line: &str) {
    let logged = || hook_log(root).lines().any(|l| l == line);
    let context = || {
        let log = |pod: &str| std::fs::read_to_string(root.join(pod)).unwrap_or_default();
        format!(
            "hooks: {:?}; a: {} b: {}",
            hook_log(root),
            log("a.log"),
            log("b.log")
        )
    };
    let limit = Duration::from_secs(30);
    addon_operator_testkit::wait::wait_for(&format!("'{line}'"), limit, logged, context);
}

#[test]
fn only_the_lease_holder_works_and_a_standby_takes_over() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cluster = Cluster::start(root);
    let kubeconfig = cluster.kubeconfig.clone();
    write(
        &root.join("global-hooks/startup"),
        "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"onStartup\": 1}'; exit 0; fi\necho \"startup $ADDON_OPERATOR_POD\" >> \"$HOOK_LOG\"\n",
        true,
    );
    std::fs::create_dir_all(root.join("modules")).unwrap();

    let a = operator(root, &kubeconfig, "a");
    wait_for(root, "startup a");
    let b = operator(root, &kubeconfig, "b");
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !hook_log(root).contains("startup b"),
        "b is a standby while a leads"
    );
    // addon_operator_leader says who works
    let (a_http, b_http) = (
        http_addr_in(&root.join("a.log")),
        http_addr_in(&root.join("b.log")),
    );
    assert_eq!(leader_gauge(&a_http), Some(1.0));
    assert_eq!(leader_gauge(&b_http), Some(0.0));

    a.kill_hard(); // the leader dies without releasing the lease
    // what a restart of a with the same --tmp-dir would take over and remove: the test removes it
    let a_cache = kube_cache::ram_name(&root.join("tmp-a"));
    let _ = std::fs::remove_dir_all(std::path::Path::new(kube_cache::RAM_DIRS[0]).join(a_cache));
    wait_for(root, "startup b");
    assert_eq!(leader_gauge(&b_http), Some(1.0));
    drop(b);
    drop(cluster);
}

/// The value of `addon_operator_leader` on the operator serving metrics at `addr`.
fn leader_gauge(addr: &str) -> Option<f64> {
    let (_, text) = get(addr, "/metrics")?;
    let line = text
        .lines()
        .find(|l| l.starts_with("addon_operator_leader "))?;
    line.rsplit(' ').next()?.parse().ok()
}

fn signal(child: &Running, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// An emulator, a kubeconfig and a tree whose global hook logs its onStartup and a tick every
/// second, each line naming the replica.
fn ha_env() -> (Cluster, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cluster = Cluster::start(root);
    write(
        &root.join("global-hooks/ticker"),
        "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"onStartup\": 1,\"schedule\":[{\"name\":\"tick\",\"crontab\":\"* * * * * *\"}]}'; exit 0; fi\nif grep -q onStartup \"$BINDING_CONTEXT_PATH\"; then echo \"startup $ADDON_OPERATOR_POD\" >> \"$HOOK_LOG\"; else echo \"tick $ADDON_OPERATOR_POD\" >> \"$HOOK_LOG\"; fi\n",
        true,
    );
    std::fs::create_dir_all(root.join("modules")).unwrap();
    (cluster, tmp)
}

/// SIGTERM of the leader releases the Lease: the standby leads within one retry period (1 s for
/// a 7.5 s lease), not after the lease duration.
#[test]
fn sigterm_of_the_leader_hands_over_within_one_retry_period() {
    let (cluster, tmp) = ha_env();
    let root = tmp.path();
    let kubeconfig = root.join("kubeconfig");
    let a = operator_with_lease(root, &kubeconfig, "a", "7500ms");
    wait_for(root, "startup a");
    let b = operator_with_lease(root, &kubeconfig, "b", "7500ms");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !hook_log(root).contains("startup b"),
        "b waits while a leads"
    );
    let stopped = Instant::now();
    drop(a); // SIGTERM, then reaped
    wait_for(root, "startup b");
    let hand_over = stopped.elapsed();
    eprintln!("hand-over after SIGTERM: {} ms", hand_over.as_millis());
    assert!(
        hand_over <= Duration::from_millis(2000),
        "hand-over took {hand_over:?}; retry period 1 s + 1 s allowed"
    );
    drop(b);
    drop(cluster);
}

/// A leader frozen past its lease (SIGSTOP) and resumed (SIGCONT) starts no task after the new
/// leader's first one: its last renewal is older than the renew deadline, so it is fenced, and
/// it stops as soon as it learns it lost.
#[test]
fn a_frozen_leader_runs_no_task_after_the_new_leader_started() {
    let (cluster, tmp) = ha_env();
    let root = tmp.path();
    let kubeconfig = root.join("kubeconfig");
    let mut a = operator_with_lease(root, &kubeconfig, "a", "3s");
    wait_for(root, "tick a");
    let b = operator_with_lease(root, &kubeconfig, "b", "3s");
    let b_log = root.join("b.log");
    crate::support::wait_for("b to start as a standby", &b_log, || {
        std::fs::read_to_string(&b_log).is_ok_and(|l| l.contains("addon-operator started"))
    });
    signal(&a, "-STOP");
    wait_for(root, "startup b");
    wait_for(root, "tick b");
    signal(&a, "-CONT");
    let mut status = None;
    let stopped = || {
        status = a.0.try_wait().unwrap();
        status.is_some()
    };
    let a_log = || std::fs::read_to_string(root.join("a.log")).unwrap_or_default();
    addon_operator_testkit::wait::wait_for("a to stop", Duration::from_secs(10), stopped, a_log);
    let status = status.unwrap();
    assert!(
        !status.success(),
        "a stops with an error after losing the lease"
    );
    std::thread::sleep(Duration::from_secs(2));
    let log = hook_log(root);
    let first_b = log.lines().position(|l| l.ends_with(" b")).unwrap();
    let late_a: Vec<&str> = log
        .lines()
        .skip(first_b)
        .filter(|l| l.ends_with(" a"))
        .collect();
    assert!(late_a.is_empty(), "a ran after b led:\n{log}");
    drop(b);
    drop(cluster);
}

#[test]
fn a_standby_with_a_broken_module_hook_stops_at_once() {
    let (cluster, tmp) = ha_env();
    let root = tmp.path();
    let kubeconfig = cluster.kubeconfig.clone();
    let _leader = operator(root, &kubeconfig, "a");
    wait_for(root, "startup a");

    // the new replica's tree (a rollout of a broken change) waits for the same lease
    let broken = root.join("broken");
    write(&broken.join("modules/values.yaml"), "", false);
    write(
        &broken.join("modules/010-web/hooks/bad.sh"),
        "#!/bin/sh\necho '{\"configVersion\":\"v1\",\"beforeHelm\":\"later\"}'\n",
        true,
    );
    let mut standby = operator(&broken, &kubeconfig, "b");
    let mut status = None;
    addon_operator_testkit::wait::wait_for(
        "the standby to exit instead of waiting for the lease",
        Duration::from_secs(20),
        || {
            status = standby.0.try_wait().unwrap();
            status.is_some()
        },
        || std::fs::read_to_string(broken.join("b.log")).unwrap_or_default(),
    );
    let status = status.unwrap();
    let log = std::fs::read_to_string(broken.join("b.log")).unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains("module 'web'") && log.contains("beforeHelm"),
        "{log}"
    );
    assert!(!hook_log(root).contains("startup b"), "{}", hook_log(root));
}
