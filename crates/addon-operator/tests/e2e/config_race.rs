//! The config ConfigMap shared by the operator and a person: a global hook increments
//! `global.counter` on every tick of a fast-changing object while a client edits another key with
//! kubectl-style GET + PUT. Nothing may be lost: no user edit reverted, no hook increment dropped,
//! no reload caused by the operator's own writes. Then the client writes the hook's own key: the
//! later write wins and the hook continues from it. `CONFIG_RACE_EDITS` sets the number of edits
//! (`bench/config-race` runs 1,000 and prints the figures).

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_emulator::{Emulator, EmulatorConfig};
use serde_json::json;

use crate::support::{Running, binary, path_with_tools, require_tool, wait_for, write};

const NS: &str = "race";
const NAME: &str = "addon-operator";

/// Counts its own runs in `$RUNS_LOG` only after its patch is written, and increments the
/// counter of the config values it was given.
const COUNTER_HOOK: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"ticker","kind":"ConfigMap","nameSelector":{"matchNames":["ticker"]},"namespace":{"nameSelector":{"matchNames":["race"]}},"jqFilter":".data"}]}'
  exit 0
fi
next=$(( $(jq -r '.global.counter // 0' "$CONFIG_VALUES_PATH") + 1 ))
echo "[{\"op\":\"add\",\"path\":\"/global/counter\",\"value\":$next}]" > "$CONFIG_VALUES_JSON_PATCH_PATH"
echo "$next" >> "$RUNS_LOG"
"#;

/// What one race measured.
#[derive(Debug, Default)]
struct Figures {
    edits: usize,
    conflicts: usize,
    lost_edits: usize,
    hook_runs: usize,
    counter: usize,
    own_write_reloads: usize,
    external_reloads: usize,
    own_write_echoes: usize,
    /// After a user's write of `global.counter` itself, the hook continued from the user's value.
    same_key_last_write_wins: bool,
}

fn operator(root: &Path, kubeconfig: &Path, port: u16) -> Running {
    let child = Command::new(binary())
        .arg("start")
        .arg("--working-dir")
        .arg(root)
        .arg("--kube-config")
        .arg(kubeconfig)
        .args(["--namespace", NS])
        .arg("--tmp-dir")
        .arg(root.join("tmp"))
        .args(["--retry-initial-delay", "200ms", "--retry-max-delay", "1s"])
        // no client-side rate limit (5 requests a second by default): the operator's writes
        // race the user's edits at full speed, and the quiet the test waits for is a real one
        .args([
            "--kube-client-qps=-1",
            "--object-patcher-kube-client-qps=-1",
        ])
        .args(["--prometheus-listen-address", "127.0.0.1"])
        .args(["--prometheus-listen-port", &port.to_string()])
        .arg("--debug-unix-socket")
        .arg(root.join("debug.socket"))
        .env("RUNS_LOG", root.join("runs.log"))
        .env("PATH", path_with_tools())
        .env("LOG_LEVEL", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("operator.log")).unwrap())
        .spawn()
        .unwrap();
    Running(child)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn hook_runs(root: &Path) -> usize {
    std::fs::read_to_string(root.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// The operator's `/metrics` text.
fn metrics(port: u16) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}

fn counter_value(text: &str, series: &str) -> usize {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0, |v| v as usize)
}

fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn create_objects(api: &Api<ConfigMap>, client: kube::Client) {
    let ns = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client)
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    for (name, d) in [
        (
            NAME,
            data(&[("global", "counter: 0\n"), ("notes", "edit: 0\n")]),
        ),
        ("ticker", data(&[("tick", "0")])),
    ] {
        let cm = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            data: Some(d),
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
}

/// Changes the ticker every 50 ms until `stop`.
async fn tick(api: Api<ConfigMap>, stop: Arc<AtomicBool>) {
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        i += 1;
        let patch = json!({"data": {"tick": i.to_string()}});
        let _ = api
            .patch("ticker", &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `n` edits of the `notes` key, each a GET + PUT with the read resourceVersion (retried on 409);
/// each GET also checks that the previous edit is still there.
async fn edit(api: &Api<ConfigMap>, n: usize, figures: &mut Figures) {
    for i in 1..=n {
        loop {
            let mut cm = api.get(NAME).await.unwrap();
            let data = cm.data.get_or_insert_default();
            if data.get("notes").map(String::as_str) != Some(&format!("edit: {}\n", i - 1)) {
                figures.lost_edits += 1;
            }
            data.insert("notes".into(), format!("edit: {i}\n"));
            match api.replace(NAME, &PostParams::default(), &cm).await {
                Ok(_) => break,
                Err(kube::Error::Api(status)) if status.code == 409 => figures.conflicts += 1,
                Err(e) => panic!("edit {i}: {e}"),
            }
        }
        figures.edits += 1;
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// The user sets `global.counter` (the hook's own key) to 10000; the ticker ticks once more. The
/// later write wins: the hook continues from 10000 and the ConfigMap ends with its last value.
fn same_key_edit(
    rt: &tokio::runtime::Runtime,
    api: &Api<ConfigMap>,
    root: &Path,
    port: u16,
) -> bool {
    let external = || {
        counter_value(
            &metrics(port),
            "addon_operator_config_reloads_total{cause=\"external\"}",
        )
    };
    let before = external();
    rt.block_on(async {
        loop {
            let mut cm = api.get(NAME).await.unwrap();
            cm.data
                .get_or_insert_default()
                .insert("global".into(), "counter: 10000\n".into());
            if api.replace(NAME, &PostParams::default(), &cm).await.is_ok() {
                break;
            }
        }
    });
    wait_for(
        "the operator to take the user's write",
        &root.join("operator.log"),
        || external() > before,
    );
    rt.block_on(async {
        let patch = json!({"data": {"tick": "after-the-user"}});
        api.patch("ticker", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    });
    let last_run = || {
        std::fs::read_to_string(root.join("runs.log"))
            .unwrap_or_default()
            .lines()
            .last()
            .and_then(|l| l.parse::<u64>().ok())
            .unwrap_or(0)
    };
    wait_for(
        "the hook's run after the user's write",
        &root.join("operator.log"),
        || last_run() > 10000,
    );
    std::thread::sleep(Duration::from_millis(500));
    let global = rt
        .block_on(api.get(NAME))
        .unwrap()
        .data
        .unwrap_or_default()
        .remove("global")
        .unwrap_or_default();
    last_run() == 10001 && global == "counter: 10001\n"
}

fn race(edits: usize) -> Figures {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let emulator = rt
        .block_on(Emulator::start(EmulatorConfig::default()))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let kubeconfig = root.join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig).unwrap();
    write(&root.join("global-hooks/counter"), COUNTER_HOOK, true);
    std::fs::create_dir_all(root.join("modules")).unwrap();
    let client = rt
        .block_on(addon_operator::edges::kube::connect(Some(&kubeconfig)))
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    rt.block_on(create_objects(&api, client));

    let port = free_port();
    let _operator = operator(root, &kubeconfig, port);
    wait_for("the first hook run", &root.join("operator.log"), || {
        hook_runs(root) > 0
    });
    let stop = Arc::new(AtomicBool::new(false));
    let ticker = rt.spawn(tick(api.clone(), stop.clone()));
    let mut figures = Figures::default();
    rt.block_on(edit(&api, edits, &mut figures));
    stop.store(true, Ordering::SeqCst);
    rt.block_on(ticker).unwrap();

    // Quiet: the counter in the ConfigMap catches up with the runs counted, or never does.
    let counter = || {
        let cm = rt.block_on(api.get(NAME)).unwrap();
        let global = cm
            .data
            .unwrap_or_default()
            .remove("global")
            .unwrap_or_default();
        let value: serde_json::Value = serde_saphyr::from_str(&global).unwrap();
        value["counter"].as_u64().unwrap_or(0) as usize
    };
    let settled = Instant::now();
    let mut last = (usize::MAX, usize::MAX);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = (hook_runs(root), counter());
        if now == last || settled.elapsed() > Duration::from_secs(30) {
            break;
        }
        last = now;
    }
    figures.hook_runs = hook_runs(root);
    figures.counter = counter();
    let final_notes = rt.block_on(api.get(NAME)).unwrap().data.unwrap_or_default();
    if final_notes.get("notes") != Some(&format!("edit: {edits}\n")) {
        figures.lost_edits += 1;
    }
    let text = metrics(port);
    figures.external_reloads = counter_value(
        &text,
        "addon_operator_config_reloads_total{cause=\"external\"}",
    );
    figures.own_write_echoes = counter_value(
        &text,
        "addon_operator_config_reloads_total{cause=\"own_write\"}",
    );
    let log = std::fs::read_to_string(root.join("operator.log")).unwrap_or_default();
    // Only the hook writes `global`: a reload of all modules for a changed global section can
    // only come from the operator's own write read back as an edit.
    figures.own_write_reloads = log
        .matches("config changed the global section or enable flags")
        .count();
    figures.same_key_last_write_wins = same_key_edit(&rt, &api, root, port);
    drop(emulator);
    figures
}

#[test]
fn hook_patches_and_user_edits_of_the_config_configmap_lose_nothing() {
    if !require_tool("jq") {
        return;
    }
    let edits = std::env::var("CONFIG_RACE_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let f = race(edits);
    println!(
        "config-race: {} user edits ({} conflicts retried), {} hook runs: lost edits {}/{}, lost increments {}/{}, own-write reloads {}, external reloads {}, own-write echoes ignored {}, same key: later write wins {}",
        f.edits,
        f.conflicts,
        f.hook_runs,
        f.lost_edits,
        f.edits,
        f.hook_runs.abs_diff(f.counter),
        f.hook_runs,
        f.own_write_reloads,
        f.external_reloads,
        f.own_write_echoes,
        f.same_key_last_write_wins
    );
    assert_eq!(f.lost_edits, 0, "{f:?}");
    assert_eq!(
        f.counter, f.hook_runs,
        "every increment is in the ConfigMap: {f:?}"
    );
    assert!(f.hook_runs > 1, "the hook raced the edits: {f:?}");
    assert_eq!(f.own_write_reloads, 0, "{f:?}");
    assert!(f.same_key_last_write_wins, "{f:?}");
    assert!(
        f.external_reloads <= f.edits,
        "each user edit reloads at most once, our writes never: {f:?}"
    );
    assert!(
        f.own_write_echoes > 0,
        "our writes came back and were recognised: {f:?}"
    );
}
