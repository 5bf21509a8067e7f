//! kubectl 1.35 against the emulator: apply (client and server side), get, patch, delete, watch.

use std::time::Duration;

use serde_json::Value;

use crate::common::{start, tool};

const APP: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: demo
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  labels: {app: web, tier: front}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo, labels: {app: web}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80, name: http}]
"#;

fn json(text: &str) -> Value {
    serde_json::from_str(text).expect("kubectl printed JSON")
}

#[tokio::test]
async fn kubectl_applies_client_and_server_side_and_gets_by_label_and_across_namespaces() {
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let env = start().await;
    let manifest = env.dir.path().join("app.yaml");
    std::fs::write(&manifest, APP).unwrap();
    let file = manifest.to_str().unwrap();
    let out = env
        .run(&kubectl, &["apply", "-f", file, "--validate=false"])
        .await;
    assert!(out.contains("deployment.apps/web created"), "{out}");

    std::fs::write(&manifest, APP.replace("nginx:1", "nginx:2")).unwrap();
    let out = env
        .run(&kubectl, &["apply", "-f", file, "--validate=false"])
        .await;
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    let deploy = env
        .emu
        .object("apps", "deployments", "demo", "web")
        .unwrap();
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    assert_eq!(deploy["metadata"]["generation"], 2);

    std::fs::write(&manifest, APP.replace("nginx:1", "nginx:3")).unwrap();
    let out = env
        .run(
            &kubectl,
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "-f",
                file,
                "--validate=false",
            ],
        )
        .await;
    assert!(
        out.contains("deployment.apps/web serverside-applied"),
        "{out}"
    );
    let deploy = env
        .emu
        .object("apps", "deployments", "demo", "web")
        .unwrap();
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:3"
    );

    let all = json(
        &env.run(
            &kubectl,
            &["get", "services,deployments", "-A", "-o", "json"],
        )
        .await,
    );
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "web"]);
    let labelled = env
        .run(
            &kubectl,
            &[
                "get",
                "deploy",
                "-A",
                "-l",
                "tier in (front),app!=db",
                "-o",
                "name",
            ],
        )
        .await;
    assert_eq!(labelled.trim(), "deployment.apps/web");
    let none = env
        .run(
            &kubectl,
            &["get", "deploy", "-A", "-l", "!tier", "-o", "name"],
        )
        .await;
    assert_eq!(none.trim(), "");
}

#[tokio::test]
async fn kubectl_patches_strategic_merge_and_json_scales_then_deletes() {
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let env = start().await;
    let manifest = env.dir.path().join("app.yaml");
    std::fs::write(&manifest, APP).unwrap();
    env.run(
        &kubectl,
        &[
            "apply",
            "-f",
            manifest.to_str().unwrap(),
            "--validate=false",
        ],
    )
    .await;

    let sidecar =
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}"#;
    env.run(
        &kubectl,
        &["patch", "deploy", "web", "-n", "demo", "-p", sidecar],
    )
    .await;
    env.run(
        &kubectl,
        &[
            "patch",
            "deploy",
            "web",
            "-n",
            "demo",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"m":"1"}}}"#,
        ],
    )
    .await;
    let replicas = r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#;
    env.run(
        &kubectl,
        &[
            "patch",
            "deploy",
            "web",
            "-n",
            "demo",
            "--type=json",
            "-p",
            replicas,
        ],
    )
    .await;
    let deploy = json(
        &env.run(
            &kubectl,
            &["get", "deploy", "web", "-n", "demo", "-o", "json"],
        )
        .await,
    );
    let containers = deploy["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    // a strategic merge patch's new element goes first, as kube-apiserver orders it (the
    // conformance corpus's step deployment-strategic-patch)
    assert_eq!(
        containers
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["side", "app"]
    );
    assert_eq!(deploy["metadata"]["labels"]["m"], "1");
    assert_eq!(deploy["spec"]["replicas"], 5);
    env.run(
        &kubectl,
        &["scale", "deploy", "web", "-n", "demo", "--replicas=7"],
    )
    .await;
    let scaled = env
        .emu
        .object("apps", "deployments", "demo", "web")
        .unwrap();
    assert_eq!(
        (
            scaled["spec"]["replicas"].as_i64(),
            scaled["status"]["readyReplicas"].as_i64()
        ),
        (Some(7), Some(7))
    );

    env.run(&kubectl, &["delete", "service", "web", "-n", "demo"])
        .await;
    assert!(env.emu.object("", "services", "demo", "web").is_none());
    let out = env
        .try_run(&kubectl, &["get", "service", "web", "-n", "demo"])
        .await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("NotFound"));
    env.run(&kubectl, &["delete", "namespace", "demo"]).await;
    assert!(
        env.emu
            .object("apps", "deployments", "demo", "web")
            .is_none()
    );
    assert!(env.emu.object("", "namespaces", "", "demo").is_none());
}

#[tokio::test]
async fn kubectl_create_configmap_and_secret_send_protobuf_that_is_stored_as_json() {
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let env = start().await;
    env.run(
        &kubectl,
        &[
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
        ],
    )
    .await;
    env.run(
        &kubectl,
        &[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=s3cret",
        ],
    )
    .await;
    let cm = env
        .emu
        .object("", "configmaps", "default", "settings")
        .unwrap();
    assert_eq!(cm["data"]["mode"], "fast");
    let secret = env.emu.object("", "secrets", "default", "creds").unwrap();
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    assert_eq!(secret["type"], "Opaque");
    let shown = json(
        &env.run(&kubectl, &["get", "secret", "creds", "-o", "json"])
            .await,
    );
    assert_eq!(shown["data"]["password"], "czNjcmV0");
}

#[tokio::test]
async fn kubectl_get_watch_sees_creations_and_deletions() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let env = start().await;
    env.run(&kubectl, &["create", "configmap", "first"]).await;
    let mut watcher = env
        .command(&kubectl)
        .args(["get", "configmaps", "--watch", "-o", "name"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watcher.stdout.take().unwrap()).lines();
    let mut next_line = async || {
        tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    };
    assert_eq!(next_line().await, "configmap/first");
    env.run(
        &kubectl,
        &["create", "configmap", "watched", "--from-literal=a=b"],
    )
    .await;
    assert_eq!(next_line().await, "configmap/watched");
    env.run(&kubectl, &["delete", "configmap", "watched"]).await;
    assert_eq!(next_line().await, "configmap/watched");
    watcher.start_kill().unwrap();
}

#[tokio::test]
async fn kubectl_create_subcommands_send_protobuf_bodies_the_emulator_decodes() {
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let env = start().await;
    let commands: &[&[&str]] = &[
        &["create", "namespace", "team"],
        &["create", "serviceaccount", "bot", "-n", "team"],
        &[
            "create",
            "deployment",
            "web",
            "-n",
            "team",
            "--image=nginx",
            "--port=80",
            "--replicas=2",
        ],
        &[
            "create",
            "job",
            "once",
            "-n",
            "team",
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ],
        &[
            "create",
            "cronjob",
            "tick",
            "-n",
            "team",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--",
            "date",
        ],
        &[
            "create",
            "service",
            "clusterip",
            "web",
            "-n",
            "team",
            "--tcp=80:8080",
        ],
        &[
            "create",
            "role",
            "reader",
            "-n",
            "team",
            "--verb=get",
            "--resource=pods",
        ],
        &[
            "create",
            "rolebinding",
            "reader",
            "-n",
            "team",
            "--role=reader",
            "--serviceaccount=team:bot",
        ],
        &[
            "create",
            "clusterrole",
            "nodes",
            "--verb=list",
            "--resource=nodes",
        ],
        &[
            "create",
            "clusterrolebinding",
            "nodes",
            "--clusterrole=nodes",
            "--user=alice",
        ],
        &["create", "priorityclass", "high", "--value=1000"],
        &["create", "quota", "small", "-n", "team", "--hard=pods=2"],
        &[
            "create",
            "pdb",
            "web",
            "-n",
            "team",
            "--selector=app=web",
            "--min-available=1",
        ],
    ];
    for args in commands {
        env.run(&kubectl, args).await;
    }
    let web = env
        .emu
        .object("apps", "deployments", "team", "web")
        .unwrap();
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );
    let job = env.emu.object("batch", "jobs", "team", "once").unwrap();
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        serde_json::json!(["echo", "hi"])
    );
    let svc = env.emu.object("", "services", "team", "web").unwrap();
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    let binding = env
        .emu
        .object(
            "rbac.authorization.k8s.io",
            "rolebindings",
            "team",
            "reader",
        )
        .unwrap();
    assert_eq!(binding["subjects"][0]["name"], "bot");
    assert_eq!(binding["roleRef"]["name"], "reader");
    let high = env
        .emu
        .object("scheduling.k8s.io", "priorityclasses", "", "high")
        .unwrap();
    assert_eq!(high["value"], 1000);
}

#[tokio::test]
async fn kubectl_get_prints_server_side_tables_with_the_usual_columns() {
    let Some(kubectl) = tool("kubectl") else {
        return;
    };
    let env = start().await;
    let manifest = env.dir.path().join("app.yaml");
    std::fs::write(&manifest, APP).unwrap();
    env.run(
        &kubectl,
        &[
            "apply",
            "-f",
            manifest.to_str().unwrap(),
            "--validate=false",
        ],
    )
    .await;
    let out = env
        .run(&kubectl, &["get", "deployments,services", "-A"])
        .await;
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAMESPACE",
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE"
        ],
        "{out}"
    );
    assert_eq!(
        lines[1][..5],
        ["demo", "deployment.apps/web", "2/2", "2", "2"],
        "{out}"
    );
    assert_eq!(lines[3][..3], ["NAMESPACE", "NAME", "TYPE"], "{out}");
    assert_eq!(
        lines[4][..5],
        ["demo", "service/web", "ClusterIP", lines[4][3], "<none>"],
        "{out}"
    );
    assert!(lines[4][3].starts_with("10.96."), "{out}");
}
