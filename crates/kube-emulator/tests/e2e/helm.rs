//! helm 3 and helm 4 against the emulator: install, upgrade, list, status, get, uninstall.

use std::path::Path;

use crate::common::{TestEnv, start, tool};

const CHART_YAML: &str = "apiVersion: v2\nname: demo\nversion: 0.1.0\nappVersion: \"1.0\"\n";
const VALUES_YAML: &str = "image: nginx:1\nreplicas: 1\ngreeting: hello\nextra: true\n";
const TEMPLATES: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    base: "1"
    {{- if .Values.extra }}
    extra: "yes"
    {{- end }}
data:
  greeting: {{ .Values.greeting | quote }}
  {{- if .Values.extra }}
  extra: "yes"
  {{- end }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 80}]
"#;

fn write_chart(dir: &Path) -> String {
    let chart = dir.join("chart");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(chart.join("Chart.yaml"), CHART_YAML).unwrap();
    std::fs::write(chart.join("values.yaml"), VALUES_YAML).unwrap();
    std::fs::write(chart.join("templates/all.yaml"), TEMPLATES).unwrap();
    chart.to_str().unwrap().to_string()
}

/// The whole release lifecycle with one helm binary.
async fn release_lifecycle(env: &TestEnv, helm: &Path) {
    let chart = write_chart(env.dir.path());
    let ns = "apps";
    env.run(
        helm,
        &[
            "upgrade",
            "--install",
            "rel",
            &chart,
            "-n",
            ns,
            "--create-namespace",
        ],
    )
    .await;
    let cm = env
        .emu
        .object("", "configmaps", ns, "rel-config")
        .expect("configmap installed");
    assert_eq!(cm["data"]["greeting"], "hello");
    assert!(
        env.emu
            .object("apps", "deployments", ns, "rel-web")
            .is_some()
    );
    assert!(env.emu.object("", "services", ns, "rel-svc").is_some());

    env.run(
        helm,
        &[
            "upgrade",
            "--install",
            "rel",
            &chart,
            "-n",
            ns,
            "--set",
            "greeting=bye",
            "--set",
            "image=nginx:2",
            "--set",
            "extra=false",
        ],
    )
    .await;
    let cm = env.emu.object("", "configmaps", ns, "rel-config").unwrap();
    assert_eq!(
        cm["data"],
        serde_json::json!({"greeting": "bye"}),
        "removed values leave the object"
    );
    assert!(cm["metadata"]["labels"].get("extra").is_none(), "{cm}");
    let deploy = env
        .emu
        .object("apps", "deployments", ns, "rel-web")
        .unwrap();
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    let releases: Vec<String> = env
        .emu
        .objects("", "secrets")
        .iter()
        .filter_map(|s| s["metadata"]["name"].as_str().map(String::from))
        .collect();
    assert_eq!(
        releases,
        ["sh.helm.release.v1.rel.v1", "sh.helm.release.v1.rel.v2"]
    );

    let list = env.run(helm, &["list", "-n", ns]).await;
    assert!(list.contains("rel") && list.contains("deployed"), "{list}");
    let status = env.run(helm, &["status", "rel", "-n", ns]).await;
    assert!(
        status.contains("STATUS: deployed") && status.contains("REVISION: 2"),
        "{status}"
    );
    let values = env.run(helm, &["get", "values", "rel", "-n", ns]).await;
    assert!(values.contains("greeting: bye"), "{values}");
    let manifest = env.run(helm, &["get", "manifest", "rel", "-n", ns]).await;
    assert!(
        manifest.contains("name: rel-web") && manifest.contains("nginx:2"),
        "{manifest}"
    );

    env.run(helm, &["uninstall", "rel", "-n", ns]).await;
    assert!(env.emu.object("", "configmaps", ns, "rel-config").is_none());
    assert!(
        env.emu
            .object("apps", "deployments", ns, "rel-web")
            .is_none()
    );
    assert!(env.emu.object("", "services", ns, "rel-svc").is_none());
    assert!(env.emu.objects("", "secrets").is_empty());
    let list = env.run(helm, &["list", "-n", ns]).await;
    assert!(!list.contains("rel"), "{list}");
}

#[tokio::test]
async fn helm3_installs_upgrades_inspects_and_uninstalls_a_release() {
    let Some(helm) = tool("helm3") else { return };
    let env = start().await;
    release_lifecycle(&env, &helm).await;
}

#[tokio::test]
async fn helm4_installs_upgrades_inspects_and_uninstalls_a_release() {
    let Some(helm) = tool("helm4") else { return };
    let env = start().await;
    release_lifecycle(&env, &helm).await;
}

const SETTLING_CHART: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade
    "helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Service
metadata: {name: public}
spec:
  type: LoadBalancer
  selector: {app: db}
  ports: [{port: 80}]
"#;

/// `--wait` and a pre-install hook Job finish because the emulator settles their status.
async fn waits_for_hooks_and_workloads(helm: &Path) {
    let env = start().await;
    let chart = env.dir.path().join("settle");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: settle\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(chart.join("templates/all.yaml"), SETTLING_CHART).unwrap();
    let chart = chart.to_str().unwrap();
    for _ in 0..2 {
        env.run(
            helm,
            &[
                "upgrade",
                "--install",
                "s",
                chart,
                "-n",
                "default",
                "--wait",
                "--timeout",
                "20s",
            ],
        )
        .await;
    }
    let db = env
        .emu
        .object("apps", "statefulsets", "default", "db")
        .unwrap();
    assert_eq!(db["status"]["readyReplicas"], 2);
    assert!(
        env.emu.objects("batch", "jobs").is_empty(),
        "the succeeded hook job was deleted"
    );
}

#[tokio::test]
async fn helm3_waits_for_hook_jobs_and_workloads_the_emulator_settles() {
    let Some(helm) = tool("helm3") else { return };
    waits_for_hooks_and_workloads(&helm).await;
}

#[tokio::test]
async fn helm4_waits_for_hook_jobs_and_workloads_the_emulator_settles() {
    let Some(helm) = tool("helm4") else { return };
    waits_for_hooks_and_workloads(&helm).await;
}

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

#[tokio::test]
async fn helm3_and_helm4_install_crds_from_the_crds_folder_then_custom_resources() {
    for name in ["helm3", "helm4"] {
        let Some(helm) = tool(name) else { return };
        let env = start().await;
        let chart = env.dir.path().join("crdchart");
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::create_dir_all(chart.join("crds")).unwrap();
        std::fs::write(
            chart.join("Chart.yaml"),
            "apiVersion: v2\nname: crdc\nversion: 0.1.0\n",
        )
        .unwrap();
        std::fs::write(chart.join("crds/widget.yaml"), WIDGET_CRD).unwrap();
        let widget = "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: {{ .Values.size | default 1 }}}\n";
        std::fs::write(chart.join("templates/widget.yaml"), widget).unwrap();
        let chart = chart.to_str().unwrap();
        env.run(
            &helm,
            &["upgrade", "--install", "c", chart, "-n", "default"],
        )
        .await;
        env.run(
            &helm,
            &[
                "upgrade",
                "--install",
                "c",
                chart,
                "-n",
                "default",
                "--set",
                "size=5",
            ],
        )
        .await;
        let w1 = env
            .emu
            .object("example.io", "widgets", "default", "w1")
            .expect("widget created");
        assert_eq!(w1["spec"]["size"], 5, "{name}");
        env.run(&helm, &["uninstall", "c", "-n", "default"]).await;
        assert!(
            env.emu.objects("example.io", "widgets").is_empty(),
            "{name}"
        );
        assert!(
            env.emu
                .object(
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    "",
                    "widgets.example.io"
                )
                .is_some()
        );
    }
}
