//! The module-sdk extras with the real binary, real helm and kubectl against the emulator:
//! maintenance mode's labels, a settings check refusing a ConfigMap edit, the enabled script's
//! reason in `check`.

use std::path::Path;

use serde_json::Value;

use crate::cluster::{Cluster, operator_log, start_operator};
use crate::support::{require_tool, run, wait_for, write};

const LABEL: &str = "maintenance.deckhouse.io/no-resource-reconciliation";

/// `web` with a chart of one ConfigMap whose data follows the module's `greeting`.
fn chart_tree(root: &Path) {
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\nweb:\n  greeting: hi\n",
        false,
    );
    write(
        &root.join("modules/010-web/Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        false,
    );
    write(
        &root.join("modules/010-web/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-greeting\ndata:\n  greeting: {{ .Values.web.greeting | quote }}\n",
        false,
    );
    write(&root.join("global-hooks/.keep"), "", false);
}

fn json(cluster: &Cluster, args: &[&str]) -> Value {
    let text = cluster.kubectl(args, None).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The labels of the release's newest Secret.
fn release_labels(cluster: &Cluster) -> Value {
    let list = json(
        cluster,
        &[
            "get",
            "secrets",
            "-n",
            "default",
            "-l",
            "owner=helm,name=web",
            "-o",
            "json",
        ],
    );
    let newest = (list["items"].as_array().into_iter().flatten()).max_by_key(|s| {
        s["metadata"]["labels"]["version"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
    });
    newest.map_or(Value::Null, |s| s["metadata"]["labels"].clone())
}

fn object(cluster: &Cluster) -> Value {
    json(
        cluster,
        &[
            "get",
            "configmap",
            "web-greeting",
            "-n",
            "default",
            "-o",
            "json",
        ],
    )
}

#[test]
fn maintenance_labels_the_release_and_its_objects_skips_upgrades_and_leaving_it_removes_the_label()
{
    maintenance_with("helm3");
}

#[test]
fn maintenance_with_helm_4_labels_the_objects_through_its_post_renderer_plugin() {
    maintenance_with("helm4");
}

fn maintenance_with(helm: &str) {
    if !require_tool(helm) || !require_tool("kubectl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    chart_tree(root);
    let cluster = Cluster::start(root);
    let data = "--from-literal=webMaintenance=NoResourceReconciliation";
    cluster
        .kubectl(
            &[
                "create",
                "configmap",
                "addon-operator",
                "-n",
                "default",
                data,
            ],
            None,
        )
        .unwrap();
    let _op = start_operator(root, &cluster, &["--helm-binary", helm]);
    let log = root.join("operator.log");
    wait_for("the release labelled for maintenance", &log, || {
        release_labels(&cluster)[LABEL] == "true"
            && object(&cluster)["metadata"]["labels"][LABEL] == ""
    });

    // an edit of the module's section runs its hooks but not helm
    let patch = r#"{"data":{"web":"greeting: changed\n"}}"#;
    cluster
        .kubectl(
            &[
                "patch",
                "configmap",
                "addon-operator",
                "-n",
                "default",
                "--type=merge",
                "-p",
                patch,
            ],
            None,
        )
        .unwrap();
    wait_for("the skipped upgrade", &log, || {
        operator_log(root).contains("helm upgrade skipped")
    });
    assert_eq!(
        object(&cluster)["data"]["greeting"],
        "hi",
        "{}",
        operator_log(root)
    );

    // leaving maintenance upgrades: the new data, the label gone from the object, false on the release
    let leave = r#"[{"op":"remove","path":"/data/webMaintenance"}]"#;
    cluster
        .kubectl(
            &[
                "patch",
                "configmap",
                "addon-operator",
                "-n",
                "default",
                "--type=json",
                "-p",
                leave,
            ],
            None,
        )
        .unwrap();
    wait_for("the upgrade after maintenance", &log, || {
        let obj = object(&cluster);
        obj["data"]["greeting"] == "changed"
            && obj["metadata"]["labels"].get(LABEL).is_none()
            && release_labels(&cluster)[LABEL] == "false"
    });
}

#[test]
fn check_shows_why_an_enabled_script_disabled_a_module() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\n",
        false,
    );
    write(
        &root.join("modules/010-web/enabled"),
        "#!/bin/sh\necho false > \"$MODULE_ENABLED_RESULT\"\necho 'no nodes with role=web' > \"$MODULE_ENABLED_REASON\"\n",
        true,
    );
    write(&root.join("global-hooks/.keep"), "", false);
    let out = run(&[
        "check",
        "--working-dir",
        root.to_str().unwrap(),
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["modules"][0]["enabled"], false, "{report:#}");
    assert_eq!(
        report["modules"][0]["disabledReason"],
        "no nodes with role=web"
    );
    let out = run(&["check", "--working-dir", root.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[disabled: no nodes with role=web,"),
        "{text}"
    );
}

/// A module-sdk executable in shell: one beforeHelm hook and a settings check that refuses the
/// greeting `bad` and warns about `loud`.
const CHECKING_BATCH: &str = r#"#!/bin/sh
case "$1 $2" in
"hook list") echo 'Found 1 items:' ;;
"hook config") echo '{"version":"v1","hooks":[{"configVersion":"v1","metadata":{"name":"h"},"beforeHelm":1}],"has_settings_check":true}' ;;
"hook run") exit 0 ;;
"hook check")
  case "$(jq -r '.greeting' "$SETTINGS_PATH")" in
  bad) echo '{"valid":false,"message":"greeting bad is not allowed","warnings":null}' >&2; exit 1 ;;
  loud) echo '{"valid":true,"message":"","warnings":["a loud greeting"]}' >&2; exit 1 ;;
  esac ;;
*) exit 1 ;;
esac
"#;

#[test]
fn a_configmap_edit_the_settings_check_refuses_changes_nothing() {
    if !require_tool("helm") || !require_tool("kubectl") || !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    chart_tree(root);
    write(
        &root.join("modules/010-web/hooks/sdk"),
        CHECKING_BATCH,
        true,
    );
    let cluster = Cluster::start(root);
    cluster
        .kubectl(
            &["create", "configmap", "addon-operator", "-n", "default"],
            None,
        )
        .unwrap();
    let _op = start_operator(root, &cluster, &[]);
    let log = root.join("operator.log");
    wait_for("the first install", &log, || {
        object(&cluster)["data"]["greeting"] == "hi"
    });

    let edit = |greeting: &str| {
        let patch = format!(r#"{{"data":{{"web":"greeting: {greeting}\n"}}}}"#);
        let args = [
            "patch",
            "configmap",
            "addon-operator",
            "-n",
            "default",
            "--type=merge",
            "-p",
            &patch,
        ];
        cluster.kubectl(&args, None).unwrap();
    };
    edit("bad");
    wait_for("the refusal", &log, || {
        let text = operator_log(root);
        text.contains("refused by the module's settings check")
            && text.contains("greeting bad is not allowed")
    });
    assert_eq!(
        object(&cluster)["data"]["greeting"],
        "hi",
        "{}",
        operator_log(root)
    );
    edit("loud");
    wait_for("the allowed edit installed", &log, || {
        object(&cluster)["data"]["greeting"] == "loud"
    });
    let text = operator_log(root);
    assert!(text.contains("a loud greeting"), "{text}");
}

/// A module hook with `beforeDeleteHelm` and `afterDeleteHelm` and a ConfigMap watch: it logs
/// each run's binding, snapshot and values; `beforeDeleteHelm` patches the values, and fails
/// while `$FAIL_MARK` exists.
const DELETE_HOOK: &str = r#"#!/bin/bash
if [ "$1" = --config ]; then
  echo '{"configVersion":"v1","beforeDeleteHelm":1,"afterDeleteHelm":1,"kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["default"]}},"executeHookOnEvent":[],"executeHookOnSynchronization":false,"jqFilter":".metadata.name"}]}'
  exit 0
fi
binding=$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")
module=$(basename "$(dirname "$(dirname "$0")")")
names=$(jq -r '[.[0].snapshots.cms[]?.filterResult] | sort | join(",")' "$BINDING_CONTEXT_PATH")
from=$(jq -r --arg m "${module#*-}" '.[$m].fromBefore // "-"' "$VALUES_PATH")
echo "${module#*-} $binding snapshot=$names fromBefore=$from" >> "$HOOK_LOG"
if [ "$binding" = beforeDeleteHelm ]; then
  [ -e "$FAIL_MARK" ] && exit 1
  key="${module#*-}"
  echo "[{\"op\":\"add\",\"path\":\"/$key/fromBefore\",\"value\":\"yes\"}]" > "$VALUES_JSON_PATCH_PATH"
fi
exit 0
"#;

#[test]
fn before_delete_helm_sees_snapshots_its_failure_blocks_the_uninstall_and_its_patch_reaches_after_delete_helm()
 {
    if !require_tool("helm") || !require_tool("kubectl") || !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    chart_tree(root);
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\ntoolEnabled: true\nweb:\n  greeting: hi\n",
        false,
    );
    write(
        &root.join("modules/010-web/hooks/delete"),
        DELETE_HOOK,
        true,
    );
    // a module without a chart: no release, so no beforeDeleteHelm
    write(
        &root.join("modules/020-tool/hooks/delete"),
        DELETE_HOOK,
        true,
    );
    let (hook_log, fail_mark) = (root.join("hooks.log"), root.join("fail"));
    std::fs::write(&fail_mark, "").unwrap();
    let cluster = Cluster::start(root);
    cluster
        .kubectl(
            &["create", "configmap", "addon-operator", "-n", "default"],
            None,
        )
        .unwrap();
    let child = crate::support::start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--kube-config")
        .arg(&cluster.kubeconfig)
        .args([
            "--namespace",
            "default",
            "--retry-initial-delay",
            "200ms",
            "--retry-max-delay",
            "1s",
        ])
        .env("HOOK_LOG", &hook_log)
        .env("FAIL_MARK", &fail_mark)
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(root.join("operator.log")).unwrap())
        .spawn()
        .unwrap();
    let _op = crate::support::Running(child);
    let log = root.join("operator.log");
    let lines = || std::fs::read_to_string(&hook_log).unwrap_or_default();
    wait_for("the first install", &log, || {
        object(&cluster)["data"]["greeting"] == "hi"
    });

    let disable = r#"{"data":{"webEnabled":"false","toolEnabled":"false"}}"#;
    cluster
        .kubectl(
            &[
                "patch",
                "configmap",
                "addon-operator",
                "-n",
                "default",
                "--type=merge",
                "-p",
                disable,
            ],
            None,
        )
        .unwrap();
    let before = "web beforeDeleteHelm snapshot=addon-operator,web-greeting fromBefore=-";
    wait_for("two failed beforeDeleteHelm runs", &log, || {
        lines().lines().filter(|l| *l == before).count() >= 2
    });
    // the failure blocks the uninstall and afterDeleteHelm
    assert_eq!(object(&cluster)["data"]["greeting"], "hi", "{}", lines());
    assert!(!lines().contains("web afterDeleteHelm"), "{}", lines());

    std::fs::remove_file(&fail_mark).unwrap();
    wait_for("the uninstall and afterDeleteHelm", &log, || {
        lines()
            .lines()
            .any(|l| l.starts_with("web afterDeleteHelm") && l.ends_with("fromBefore=yes"))
            && release_labels(&cluster).is_null()
    });
    assert!(
        lines()
            .lines()
            .any(|l| l.starts_with("tool afterDeleteHelm")),
        "{}",
        lines()
    );
    assert!(!lines().contains("tool beforeDeleteHelm"), "{}", lines());
}

#[test]
fn the_reason_of_an_enabled_script_is_in_the_log_line_of_the_modules_deletion() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\n",
        false,
    );
    // enabled until $OFF exists, then disabled with a reason
    write(
        &root.join("modules/010-web/enabled"),
        "#!/bin/sh\nif [ -e \"$OFF\" ]; then echo false > \"$MODULE_ENABLED_RESULT\"; echo 'switched off by the test' > \"$MODULE_ENABLED_REASON\"; else echo true > \"$MODULE_ENABLED_RESULT\"; fi\n",
        true,
    );
    std::fs::create_dir_all(root.join("global-hooks")).unwrap();
    let config = root.join("config.yaml");
    write(&config, "global: {a: 1}\n", false);
    let (log, off) = (root.join("operator.log"), root.join("off"));
    let child = crate::support::start_command(root.join("tmp"), root.join("debug.socket"))
        .arg("--working-dir")
        .arg(root)
        .arg("--config-file")
        .arg(&config)
        .env("OFF", &off)
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _running = crate::support::Running(child);
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("the first converge", &log, || {
        text().contains("ModuleRun:web")
    });
    std::fs::write(&off, "").unwrap();
    // a change of the global section runs discovery again
    write(&config, "global: {a: 2}\n", false);
    wait_for("the deletion with its reason", &log, || {
        text().lines().any(|l| {
            l.contains("task done")
                && l.contains("ModuleDelete")
                && l.contains("reason=\"switched off by the test\"")
        })
    });
}
