//! Drift on a real API server with the shipped RBAC: a ConfigMap of the demo's release edited by
//! hand is written back in `enforce` mode (the guard's watch, its JSON patch with a
//! resourceVersion test, and the kind discovery all pass the operator's Role).

use crate::support::{cluster, start_demo, wait_until};

#[test]
fn a_release_configmap_edited_by_hand_is_written_back_with_the_shipped_rbac() {
    let Some(cluster) = cluster() else { return };
    let namespace = "drift-enforce";
    let work = tempfile::tempdir().unwrap();
    let op = start_demo(
        cluster,
        work.path(),
        namespace,
        &["--drift-mode", "enforce"],
    );
    let message = || {
        let args = [
            "-n",
            namespace,
            "get",
            "configmap",
            "echo-server",
            "-o",
            "jsonpath={.data.message}",
        ];
        cluster.kubectl(&args, None).unwrap_or_default()
    };
    wait_until("the echo-server release is tracked", 120, &[&op], || {
        op.log_text().contains("the module's release is ready")
    });
    assert_eq!(message(), "hello from a real API server");
    cluster.kubectl_ok(
        &[
            "-n",
            namespace,
            "patch",
            "configmap",
            "echo-server",
            "--type=merge",
            "-p",
            r#"{"data":{"message":"edited by hand"}}"#,
        ],
        None,
    );
    wait_until("the edited field to be written back", 60, &[&op], || {
        message() == "hello from a real API server"
    });
    let log = op.log_text();
    assert!(log.contains("drift restored"), "{log}");
    assert!(
        !log.contains("Forbidden"),
        "the operator was refused something:\n{log}"
    );
}
