//! Shared harness: the helm binaries, one emulator + `BinaryHelm` per test, module charts.

use std::path::{Path, PathBuf};

use addon_operator::edges::helm::UpgradeRequest;
use addon_operator::edges::helm::binary::{BinaryHelm, HelmSettings};
use addon_operator::edges::helm::post_render::PostRenderer;
use addon_operator_testkit::wait::wait_for_async;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube_emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use serde_json::Value;
use tempfile::TempDir;

/// Namespace of every release in these tests.
pub const NS: &str = "addons";

/// `helm3` or `helm4` from `<workspace>/.tools/bin`, else from PATH; `None` (skip) only outside CI.
pub fn helm_binary(name: &str) -> Option<PathBuf> {
    let local = addon_operator_testkit::tools::tools_dir().join(name);
    if local.is_file() {
        return Some(local);
    }
    let in_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if in_path.is_some() {
        return in_path;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{name} is missing from .tools/bin and PATH: run scripts/install-tools (CI never skips)"
        );
    }
    eprintln!("SKIPPED: {name} not found in .tools/bin or PATH; run scripts/install-tools");
    None
}

/// An emulator, a private temp dir with its kubeconfig, and the edge under test.
pub struct Env {
    pub emu: EmulatorHandle,
    pub dir: TempDir,
    pub helm: BinaryHelm,
    pub client: kube::Client,
    /// helm's storage driver: `secret` or `configmap`.
    pub driver: String,
}

impl Env {
    /// Starts everything for the helm binary `name`; `None` when it is missing (outside CI).
    pub async fn start(name: &str) -> Option<Self> {
        Self::start_with_driver(name, "secret").await
    }

    /// Like [`Env::start`] with helm's storage driver (`HELM_DRIVER`) set through `extra_env`.
    pub async fn start_with_driver(name: &str, driver: &str) -> Option<Self> {
        let binary = helm_binary(name)?;
        let emu = Emulator::start(EmulatorConfig::default())
            .await
            .expect("emulator starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let binary = counting_wrapper(&binary, dir.path());
        let kubeconfig = dir.path().join("kubeconfig");
        emu.write_kubeconfig(&kubeconfig)
            .expect("kubeconfig written");
        let mut settings = HelmSettings::new(binary, NS.into(), dir.path().join("tmp"));
        settings.kubeconfig = Some(kubeconfig);
        settings.extra_env = vec![("HELM_DRIVER".into(), driver.into())];
        // as `start` does: the operator's own binary labels the release objects
        settings.post_renderer = Some(PostRenderer::of_binary(PathBuf::from(env!(
            "CARGO_BIN_EXE_addon-operator"
        ))));
        let helm = BinaryHelm::new(settings).await.expect("helm edge starts");
        let client = client_for(&emu.kubeconfig_yaml()).await;
        let env = Self {
            emu,
            dir,
            helm,
            client,
            driver: driver.into(),
        };
        // the operator's namespace exists where it runs (its ConfigMap lives there): helm is
        // never asked to create it
        env.ensure_namespace().await;
        Some(env)
    }

    /// Polls `should_upgrade` until it says yes (for changes made behind the edge's back, which
    /// reach it through its storage watch); fails the test naming `why` after 30 s.
    pub async fn wait_until_needs_upgrade(&self, req: &UpgradeRequest, why: &str) {
        use addon_operator::edges::helm::Helm;
        let needed = || async { self.helm.should_upgrade(req).await.unwrap() };
        let limit = std::time::Duration::from_secs(30);
        let what = format!("an upgrade to be needed ({why})");
        wait_for_async(&what, limit, needed, || self.helm_calls().join("\n")).await;
    }

    /// Every helm command line the edge ran so far (one per process), in order.
    pub fn helm_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("helm-calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// A module directory named `name` with the standard templates; `chart_yaml` decides
    /// whether it has its own `Chart.yaml`.
    pub fn module(&self, name: &str, chart_yaml: bool) -> PathBuf {
        let dir = self.dir.path().join("modules").join(name);
        std::fs::create_dir_all(dir.join("templates")).unwrap();
        std::fs::write(dir.join("templates/all.yaml"), TEMPLATES).unwrap();
        if chart_yaml {
            std::fs::write(
                dir.join("Chart.yaml"),
                format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
            )
            .unwrap();
        }
        dir
    }

    /// An upgrade of `module` with `greeting` in its values.
    pub fn request(&self, chart_dir: &Path, greeting: &str, checksum: &str) -> UpgradeRequest {
        let release = chart_dir.file_name().unwrap().to_str().unwrap().to_string();
        UpgradeRequest {
            values_yaml: format!("global: {{}}\nweb:\n  greeting: {greeting}\n  replicas: 2\n"),
            release,
            chart_dir: chart_dir.to_path_buf(),
            checksum: checksum.into(),
            maintenance: false,
        }
    }

    pub fn config_map(&self, name: &str) -> Option<Value> {
        self.emu.object("", "configmaps", NS, name)
    }

    pub fn deployment(&self, name: &str) -> Option<Value> {
        self.emu.object("apps", "deployments", NS, name)
    }

    /// Deletes an object behind helm's back, as a person or a controller might.
    pub async fn delete_deployment(&self, name: &str) {
        let api: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(self.client.clone(), NS);
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }

    /// Names of helm's release storage Secrets.
    pub fn release_secrets(&self) -> Vec<String> {
        self.emu
            .objects("", "secrets")
            .iter()
            .filter_map(|s| s["metadata"]["name"].as_str().map(String::from))
            .collect()
    }

    /// Writes a release revision the way helm's storage driver does (base64 JSON, which helm
    /// reads with or without gzip), e.g. one left `pending-upgrade` by a killed helm.
    pub async fn write_revision(&self, release: &str, revision: u64, status: &str) {
        use base64::Engine as _;
        let body = serde_json::json!({
            "name": release,
            "namespace": NS,
            "version": revision,
            "info": {"status": status, "description": "crafted by the test"},
            "chart": {"metadata": {"apiVersion": "v2", "name": release, "version": "0.1.0"}},
            "config": {},
            "manifest": "",
        });
        let encoded = base64::engine::general_purpose::STANDARD.encode(body.to_string());
        let metadata = serde_json::json!({
            "name": format!("sh.helm.release.v1.{release}.v{revision}"),
            "labels": {"name": release, "owner": "helm", "status": status,
                       "version": revision.to_string()},
        });
        self.ensure_namespace().await;
        if self.driver == "configmap" {
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                "metadata": metadata,
                "data": {"release": encoded},
            }))
            .unwrap();
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), NS);
            api.create(&PostParams::default(), &cm).await.unwrap();
            return;
        }
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "type": "helm.sh/release.v1",
            "metadata": metadata,
            "data": {"release": base64::engine::general_purpose::STANDARD.encode(encoded)},
        }))
        .unwrap();
        let api: Api<Secret> = Api::namespaced(self.client.clone(), NS);
        api.create(&PostParams::default(), &secret).await.unwrap();
    }

    async fn ensure_namespace(&self) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        if api.get_opt(NS).await.unwrap().is_none() {
            let ns: Namespace =
                serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).unwrap();
            api.create(&PostParams::default(), &ns).await.unwrap();
        }
    }
}

/// A script that appends its arguments to `<dir>/helm-calls`, then runs the real helm.
fn counting_wrapper(helm: &Path, dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("helm-wrapper");
    let log = dir.join("helm-calls");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
        log.display(),
        helm.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A kube-rs client from kubeconfig text.
async fn client_for(kubeconfig: &str) -> kube::Client {
    let kc = Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(config).expect("client")
}

/// A ConfigMap and a Deployment, named after the release.
const TEMPLATES: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    tier: config # the chart's own label
data:
  greeting: {{ .Values.web.greeting | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.web.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: nginx:1
"#;
