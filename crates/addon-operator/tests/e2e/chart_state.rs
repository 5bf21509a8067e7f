//! The example `examples/crds` against the emulator with real helm: its `crds/` make one
//! converge work, a restart with nothing changed upgrades nothing, and an edit of a subchart, of
//! `crds/` or of a file read with `.Files.Get` each upgrades the release.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::ListParams;

use crate::support::{Running, require_tool, start_command};

const MODULE: &str = "modules/010-crontabs";

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/crds")
}

fn operator(root: &Path, run: usize) -> Running {
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root.join("tree"))
        .arg("--kube-config")
        .arg(root.join("kubeconfig"))
        .env("HOOK_LOG", root.join("hooks.log"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join(format!("operator-{run}.log"))).unwrap())
        .spawn()
        .unwrap();
    Running(child)
}

fn after_helm_runs(root: &Path) -> usize {
    std::fs::read_to_string(root.join("hooks.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == "afterHelm")
        .count()
}

fn hook_log(root: &Path) -> String {
    std::fs::read_to_string(root.join("hooks.log")).unwrap_or_default()
}

/// Starts the operator, waits for the module's run to finish (and for the hook to see the
/// `CronTab` in the first run), stops it; returns its log up to the shutdown.
fn run_once(root: &Path, run: usize) -> String {
    let operator = operator(root, run);
    let started = Instant::now();
    let log_file = root.join(format!("operator-{run}.log"));
    while after_helm_runs(root) < run || !hook_log(root).contains("Added crontab nightly") {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "run {run} did not finish: {}",
            std::fs::read_to_string(&log_file).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(&log_file).unwrap();
    drop(operator);
    log
}

fn revisions(tokio: &tokio::runtime::Runtime, client: &kube::Client) -> usize {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let params = ListParams::default().labels("owner=helm,name=crontabs");
    tokio.block_on(secrets.list(&params)).unwrap().items.len()
}

fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let path = root.join("tree").join(MODULE).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

#[test]
fn crds_make_one_converge_work_and_only_chart_edits_upgrade_the_release() {
    if !require_tool("helm") || !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cluster = Cluster::start(root);
    let tokio = &cluster.tokio;
    let copied = Command::new("cp")
        .arg("-r")
        .arg(example_dir())
        .arg(root.join("tree"))
        .status()
        .unwrap();
    assert!(copied.success());
    let client = tokio
        .block_on(addon_operator::edges::kube::connect(Some(
            &root.join("kubeconfig"),
        )))
        .unwrap();

    let log = run_once(root, 1);
    assert!(
        !log.contains("task failed"),
        "one converge is enough:\n{log}"
    );
    let hooks = std::fs::read_to_string(root.join("hooks.log")).unwrap();
    assert_eq!(revisions(tokio, &client), 1);
    let started = Instant::now();
    while !std::fs::read_to_string(root.join("hooks.log"))
        .unwrap()
        .contains("Added crontab nightly")
    {
        assert!(started.elapsed() < Duration::from_secs(10), "{hooks}");
        std::thread::sleep(Duration::from_millis(100));
    }

    run_once(root, 2);
    assert_eq!(
        revisions(tokio, &client),
        1,
        "a restart with nothing changed"
    );

    std::fs::write(root.join("tree").join(MODULE).join("notes.swp"), "x").unwrap();
    run_once(root, 3);
    assert_eq!(revisions(tokio, &client), 1, "a file .helmignore skips");

    edit(
        root,
        "charts/notes/templates/notes.yaml",
        "installed",
        "set up",
    );
    run_once(root, 4);
    assert_eq!(revisions(tokio, &client), 2, "a subchart edit");

    edit(
        root,
        "crds/crontab.yaml",
        "singular: crontab",
        "singular: crontab\n    shortNames: [ct]",
    );
    run_once(root, 5);
    assert_eq!(revisions(tokio, &client), 3, "a crds/ edit");

    edit(root, "files/settings.conf", "retention=7", "retention=30");
    run_once(root, 6);
    assert_eq!(revisions(tokio, &client), 4, "a file read with .Files.Get");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let settings = tokio
        .block_on(config_maps.get("crontabs-settings"))
        .unwrap();
    assert_eq!(settings.data.unwrap()["settings.conf"], "retention=30\n");
    drop(cluster);
}
