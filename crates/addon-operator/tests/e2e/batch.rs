//! Batch hooks (the Go operator's module-sdk protocol) written as a shell script: `check` lists
//! their hooks, `start` runs each with its binding contexts and applies its values patches.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use addon_operator_testkit::wait;
use serde_json::Value;

use crate::support::{Running, require_tool, run, start_command, write};

/// A batch executable in shell: two hooks and a readiness hook.
const BATCH: &str = r#"#!/bin/sh
case "$1 $2" in
"hook list") printf 'Found 2 items:\n0 - first\n1 - second\n' ;;
"hook config") cat <<'CFG'
{"version":"v1","hooks":[
 {"configVersion":"v1","metadata":{"name":"first","path":"hooks/batch"},"onStartup":1},
 {"configVersion":"v1","metadata":{"name":"second","path":"hooks/batch"},"beforeHelm":2}],
 "readiness":{"configVersion":"v1","metadata":{"name":"ready"},"schedule":[{"name":"probe","crontab":"*/1 * * * * *"}]}}
CFG
;;
"hook run")
  echo "run $3 $(jq -c '[.[].binding]' "$BINDING_CONTEXT_PATH") $(jq -r '.web.fromBatch // "-"' "$VALUES_PATH")" >> "$HOOK_LOG"
  echo "env $3 MODULE_NAME=${MODULE_NAME-unset} APPLICATION_NAME=${APPLICATION_NAME-unset}" >> "$HOOK_LOG"
  if [ "$3" = 0 ]; then echo '[{"op":"add","path":"/web/fromBatch","value":"yes"}]' > "$VALUES_JSON_PATCH_PATH"; fi ;;
"hook ready") echo "ready $(jq -c '[.[].binding]' "$BINDING_CONTEXT_PATH")" >> "$HOOK_LOG" ;;
*) exit 1 ;;
esac
"#;

/// A global batch executable: `beforeHelm` of a global batch hook is its `beforeAll`. Its text
/// does not hold the answer `Found ...` (it is built at run time, as a wrapper's would be): every
/// executable without an extension is asked, as upstream asks.
const GLOBAL_BATCH: &str = r#"#!/bin/sh
case "$1 $2" in
"hook list") echo "$(printf 'Fou')nd 1 items:" ;;
"hook config") echo '[{"configVersion":"v1","metadata":{"name":"g"},"beforeHelm":3}]' ;;
"hook run") echo "global $3 $(jq -c '[.[].binding]' "$BINDING_CONTEXT_PATH") MODULE_NAME=$MODULE_NAME" >> "$HOOK_LOG" ;;
*) exit 1 ;;
esac
"#;

fn tree(root: &Path) {
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\n",
        false,
    );
    write(&root.join("modules/010-web/hooks/batch"), BATCH, true);
    write(&root.join("global-hooks/gbatch"), GLOBAL_BATCH, true);
    write(
        &root.join("global-hooks/plain"),
        "#!/bin/sh\n[ \"$1\" = --config ] && echo '{\"configVersion\":\"v1\",\"onStartup\":1}' && exit 0\necho plain >> \"$HOOK_LOG\"\n",
        true,
    );
}

fn hooks(list: &Value) -> Vec<(String, Vec<String>)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let bindings = h["bindings"].as_array().unwrap();
            let bindings = bindings.iter().map(|b| b.as_str().unwrap().to_string());
            (h["name"].as_str().unwrap().to_string(), bindings.collect())
        })
        .collect()
}

#[test]
fn check_lists_every_hook_of_a_batch_executable() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    let out = run(&[
        "check",
        "--working-dir",
        tmp.path().to_str().unwrap(),
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["errors"], serde_json::json!([]), "{report:#}");
    let module = hooks(&report["modules"][0]["hooks"]);
    let names: Vec<_> = module.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "hooks/batch:first:0",
            "hooks/batch:second:1",
            "hooks/batch-readiness"
        ]
    );
    assert!(
        module[1].1.iter().any(|b| b.contains("beforeHelm")),
        "{module:?}"
    );
    assert!(
        module[2].1.iter().any(|b| b.contains("probe")),
        "{module:?}"
    );
    let global = hooks(&report["globalHooks"]);
    assert_eq!(global[0].0, "gbatch:g:0");
    assert!(
        global[0].1.iter().any(|b| b.contains("beforeAll")),
        "{global:?}"
    );
    assert_eq!(global[1].0, "plain", "a plain hook stays a plain hook");
}

#[test]
fn start_runs_batch_hooks_with_their_contexts_and_patches() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    let hook_log = root.join("hooks.log");
    let log = root.join("operator.log");
    let child = start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .env("HOOK_LOG", &hook_log)
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let wanted = [
        "global 0 [\"beforeAll\"] MODULE_NAME=global",
        "env 0 MODULE_NAME=web APPLICATION_NAME=",
        "run 0 [\"onStartup\"] -",
        "run 1 [\"beforeHelm\"] yes",
        "ready [\"probe\"]",
    ];
    let lines = || std::fs::read_to_string(&hook_log).unwrap_or_default();
    let context = || {
        let operator = std::fs::read_to_string(&log).unwrap_or_default();
        format!("hook log:\n{}\noperator log:\n{operator}", lines())
    };
    let all_ran = || wanted.iter().all(|w| lines().lines().any(|l| l == *w));
    wait::wait_for(
        "every hook's run",
        Duration::from_secs(30),
        all_ran,
        context,
    );
    assert!(lines().lines().any(|l| l == "plain"), "{}", lines());
}
