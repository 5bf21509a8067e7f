//! `--ha`: two operators on one API server; only the Lease holder runs hooks, and the other takes
//! over when the leader stops.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kube_emulator::{Emulator, EmulatorConfig};

use crate::support::{Running, binary, path_with_tools, write};

fn operator(root: &std::path::Path, kubeconfig: &std::path::Path, pod: &str) -> Running {
    let child = Command::new(binary())
        .arg("start")
        .arg("--working-dir")
        .arg(root)
        .arg("--kube-config")
        .arg(kubeconfig)
        .args(["--ha", "--ha-lease-duration", "1s"])
        .arg("--tmp-dir")
        .arg(root.join(format!("tmp-{pod}")))
        .args([
            "--prometheus-listen-address",
            "127.0.0.1",
            "--prometheus-listen-port",
            "0",
        ])
        .arg("--debug-unix-socket")
        .arg(root.join(format!("{pod}.socket")))
        .env("ADDON_OPERATOR_POD", pod)
        .env("HOOK_LOG", root.join("hooks.log"))
        .env("PATH", path_with_tools())
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
    let started = Instant::now();
    while !hook_log(root).lines().any(|l| l == line) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no '{line}' in {:?}; a: {} b: {}",
            hook_log(root),
            std::fs::read_to_string(root.join("a.log")).unwrap_or_default(),
            std::fs::read_to_string(root.join("b.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn only_the_lease_holder_works_and_a_standby_takes_over() {
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let emulator = tokio
        .block_on(Emulator::start(EmulatorConfig::default()))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let kubeconfig = root.join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig).unwrap();
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

    a.kill_hard(); // the leader dies without releasing the lease
    wait_for(root, "startup b");
    drop(b);
    drop(emulator);
}
