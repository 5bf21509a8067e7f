//! Two operators with `--ha` on a real API server: the standby takes the Lease when the leader
//! gets SIGTERM (released at once) and when it is killed with SIGKILL (after the lease
//! expires), and the old leader runs no task after the new one started.

use std::path::Path;

use addon_operator::edges::helm::binary::kube_cache;
use addon_operator_testkit::real_cluster::{ExtraRules, OperatorIdentity, RealCluster};

use crate::support::{
    Operator, cluster, config_map, hook_log, operator_command, spawn, wait_until, write,
};

const NS: &str = "lease";

const TICKER: &str = "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"onStartup\": 1,\"schedule\":[{\"name\":\"tick\",\"crontab\":\"* * * * * *\"}]}'; exit 0; fi\nif grep -q onStartup \"$BINDING_CONTEXT_PATH\"; then echo \"startup $ADDON_OPERATOR_POD\" >> \"$HOOK_LOG\"; else echo \"tick $ADDON_OPERATOR_POD\" >> \"$HOOK_LOG\"; fi\n";

fn replica(work: &Path, tree: &Path, identity: &OperatorIdentity, pod: &str) -> Operator {
    let mut command = operator_command(work, pod, tree, &identity.kubeconfig, identity);
    // names the replica in the Lease and in the hook's lines
    command
        .args(["--ha", "--ha-lease-duration", "3s"])
        .env("ADDON_OPERATOR_POD", pod);
    spawn(work, pod, command)
}

fn holder(cluster: &RealCluster) -> String {
    cluster
        .kubectl(
            &[
                "-n",
                NS,
                "get",
                "leases",
                "-o",
                "jsonpath={.items[*].spec.holderIdentity}",
            ],
            None,
        )
        .unwrap_or_default()
}

/// No line of `old` after the first line of `new` in the hook log.
fn assert_no_task_after_hand_over(work: &Path, old: &str, new: &str) {
    let lines = hook_log(work);
    let first_new = lines
        .iter()
        .position(|l| l.ends_with(&format!(" {new}")))
        .unwrap();
    let late: Vec<&String> = lines[first_new..]
        .iter()
        .filter(|l| l.ends_with(&format!(" {old}")))
        .collect();
    assert!(late.is_empty(), "{old} ran after {new} led: {lines:?}");
}

#[test]
fn the_lease_passes_on_sigterm_and_after_sigkill() {
    let Some(cluster) = cluster() else { return };
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    write(&tree.join("global-hooks/ticker"), TICKER, true);
    std::fs::create_dir_all(tree.join("modules")).unwrap();
    let identity = cluster.operator_identity(NS, &ExtraRules::default());
    cluster.kubectl_ok(
        &["apply", "-f", "-"],
        Some(&config_map(NS, "addon-operator", "global: |\n  {}\n")),
    );
    let logged = |line: &str| hook_log(work.path()).iter().any(|l| l == line);

    let a = replica(work.path(), &tree, &identity, "a");
    wait_until("a leads", 90, &[&a], || logged("tick a"));
    let b = replica(work.path(), &tree, &identity, "b");
    wait_until("b waits as a standby", 60, &[&b], || {
        b.log_text().contains("addon-operator started")
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(!logged("startup b"), "b ran while a led");
    assert!(holder(cluster).contains('a'), "{}", holder(cluster));

    a.stop();
    wait_until("b takes over after a's SIGTERM", 30, &[&b], || {
        logged("tick b")
    });
    assert_no_task_after_hand_over(work.path(), "a", "b");
    assert_eq!(holder(cluster), "b");

    let c = replica(work.path(), &tree, &identity, "c");
    wait_until("c waits as a standby", 60, &[&c], || {
        c.log_text().contains("addon-operator started")
    });
    b.kill_hard();
    let b_cache = kube_cache::ram_name(&work.path().join("tmp-b"));
    let _ = std::fs::remove_dir_all(Path::new(kube_cache::RAM_DIRS[0]).join(b_cache));
    wait_until("c takes over after b's SIGKILL", 60, &[&c], || {
        logged("tick c")
    });
    assert_no_task_after_hand_over(work.path(), "b", "c");
    assert_eq!(holder(cluster), "c");
}
