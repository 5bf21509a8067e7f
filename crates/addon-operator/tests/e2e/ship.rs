//! What ships: the Dockerfile (parsed: stages, user, entrypoint, the release build) and the
//! manifests in deploy/ applied with real kubectl to the emulator (objects, RBAC, security).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cluster::Cluster;
use serde_json::Value;

use crate::support::{path_with_tools, require_tool};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One `FROM` stage: its base image, its name and its instructions (keyword upper-cased).
#[derive(Debug)]
struct Stage {
    base: String,
    name: String,
    instructions: Vec<(String, String)>,
}

impl Stage {
    fn all(&self, keyword: &str) -> Vec<&str> {
        let matching = self.instructions.iter().filter(|(k, _)| k == keyword);
        matching.map(|(_, args)| args.as_str()).collect()
    }

    fn last(&self, keyword: &str) -> Option<&str> {
        self.all(keyword).last().copied()
    }
}

/// Parses a Dockerfile: comments dropped, `\` continuations joined, one entry per instruction.
fn parse_dockerfile(text: &str) -> Vec<Stage> {
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                joined.push(std::mem::take(&mut current));
            }
        }
    }
    let mut stages: Vec<Stage> = Vec::new();
    for instruction in joined.iter().filter(|i| !i.trim().is_empty()) {
        let (keyword, args) = instruction.split_once(' ').unwrap_or((instruction, ""));
        let (keyword, args) = (keyword.to_ascii_uppercase(), args.trim().to_string());
        if keyword == "FROM" {
            let words: Vec<&str> = args.split_whitespace().collect();
            let name = match words.as_slice() {
                [_, as_, name] if as_.eq_ignore_ascii_case("as") => name.to_string(),
                _ => String::new(),
            };
            stages.push(Stage {
                base: words[0].to_string(),
                name,
                instructions: Vec::new(),
            });
        } else if let Some(stage) = stages.last_mut() {
            stage.instructions.push((keyword, args));
        }
    }
    stages
}

#[test]
fn the_dockerfile_builds_the_release_binary_and_runs_it_as_a_non_root_user() {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let stages = parse_dockerfile(&text);
    let names: Vec<&str> = stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["builder", "tools", "runtime"], "{stages:#?}");

    let builder = &stages[0];
    assert!(builder.base.starts_with("rust:"), "{}", builder.base);
    let toolchain = std::fs::read_to_string(repo().join("rust-toolchain.toml")).unwrap();
    assert!(
        text.contains(&format!(
            "ARG RUST_VERSION={}",
            toolchain_channel(&toolchain)
        )),
        "the builder uses the pinned toolchain"
    );
    let build = builder.all("RUN").join("\n");
    assert!(
        build.contains("cargo build --release --locked -p addon-operator --bin addon-operator"),
        "{build}"
    );

    let tools = &stages[1];
    assert!(tools.all("RUN").join(" ").contains("install-tools"));

    let runtime = &stages[2];
    let packages = runtime.all("RUN").join(" ");
    for package in ["bash", "jq", "ca-certificates"] {
        assert!(packages.contains(package), "{package} in {packages}");
    }
    let copies = runtime.all("COPY").join("\n");
    assert!(copies.contains("--from=builder /addon-operator /usr/local/bin/addon-operator"));
    assert!(copies.contains("--from=tools /usr/local/bin/helm "));
    assert!(copies.contains("--from=tools /usr/local/bin/kubectl "));
    let user = runtime.last("USER").expect("the runtime stage sets USER");
    let uid = user.split(':').next().unwrap();
    assert!(uid != "0" && uid != "root", "non-root user, got {user}");
    let entrypoint: Vec<String> =
        serde_json::from_str(runtime.last("ENTRYPOINT").unwrap()).expect("exec form");
    assert_eq!(entrypoint, ["/usr/local/bin/addon-operator"]);
    let cmd: Vec<String> = serde_json::from_str(runtime.last("CMD").unwrap()).unwrap();
    assert_eq!(cmd, ["start"]);

    let ignore = std::fs::read_to_string(repo().join(".dockerignore")).unwrap();
    for kept_out in ["target/", ".git/", ".tools/"] {
        assert!(ignore.lines().any(|l| l.trim() == kept_out), "{kept_out}");
    }
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let release = manifest.split("[profile.release]").nth(1).unwrap();
    for setting in ["lto = true", "codegen-units = 1", "strip = true"] {
        assert!(release.contains(setting), "{setting}");
    }
}

fn toolchain_channel(toml: &str) -> String {
    let line = toml.lines().find(|l| l.starts_with("channel")).unwrap();
    line.split('"').nth(1).unwrap().to_string()
}

fn kubectl(kubeconfig: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .env("PATH", path_with_tools())
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl {args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

fn get(kubeconfig: &Path, home: &Path, what: &[&str]) -> Value {
    let args: Vec<&str> = ["get"]
        .iter()
        .chain(what)
        .chain(&["-o", "json"])
        .copied()
        .collect();
    serde_json::from_str(&kubectl(kubeconfig, home, &args)).unwrap()
}

#[test]
fn deploy_applies_with_least_privilege_and_a_locked_down_pod() {
    if !require_tool("kubectl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(dir.path());
    let (kc, home) = (cluster.kubeconfig.as_path(), dir.path());

    kubectl(kc, home, &["apply", "--validate=false", "-k", "deploy/"]);
    let ns = ["-n", "addon-operator"];
    for (kind, name) in [
        ("namespace", "addon-operator"),
        ("serviceaccount", "addon-operator"),
        ("role", "addon-operator"),
        ("rolebinding", "addon-operator"),
        ("clusterrole", "addon-operator-bindings"),
        ("clusterrolebinding", "addon-operator-modules"),
        ("configmap", "addon-operator"),
        ("service", "addon-operator"),
        ("deployment", "addon-operator"),
    ] {
        get(kc, home, &[kind, name, ns[0], ns[1]]);
    }
    check_rbac(kc, home);
    let deployment = get(kc, home, &["deployment", "addon-operator", ns[0], ns[1]]);
    check_pod(&deployment["spec"]["template"]["spec"]);
    assert_eq!(deployment["spec"]["replicas"], 1);
    let service = get(kc, home, &["service", "addon-operator", ns[0], ns[1]]);
    assert_eq!(service["spec"]["ports"][0]["port"], 9650);

    kubectl(kc, home, &["apply", "--validate=false", "-k", "deploy/ha"]);
    let ha = get(kc, home, &["deployment", "addon-operator", ns[0], ns[1]]);
    assert_eq!(ha["spec"]["replicas"], 2);
    let env = &ha["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env_value(env, "ADDON_OPERATOR_HA"), Some("true"));
    check_pod(&ha["spec"]["template"]["spec"]);
}

/// No wildcard, no cluster-admin, and the cluster-wide grants are reads only.
fn check_rbac(kc: &Path, home: &Path) {
    let role = get(
        kc,
        home,
        &["role", "addon-operator", "-n", "addon-operator"],
    );
    let granted = |rules: &Value, resource: &str, verb: &str| {
        rules.as_array().into_iter().flatten().any(|r| {
            let has =
                |key: &str, v: &str| r[key].as_array().is_some_and(|a| a.iter().any(|x| x == v));
            has("resources", resource) && has("verbs", verb)
        })
    };
    for (resource, verb) in [
        ("configmaps", "watch"),
        ("secrets", "create"),
        ("leases", "update"),
    ] {
        assert!(granted(&role["rules"], resource, verb), "{resource} {verb}");
    }
    let bindings = get(kc, home, &["clusterrole", "addon-operator-bindings"]);
    for rule in bindings["rules"].as_array().unwrap() {
        for verb in rule["verbs"].as_array().unwrap() {
            assert!(
                ["get", "list", "watch"].contains(&verb.as_str().unwrap()),
                "{rule}"
            );
        }
    }
    for doc in [
        &role,
        &bindings,
        &get(kc, home, &["clusterrole", "addon-operator-modules"]),
    ] {
        assert!(
            !doc["rules"].to_string().contains("\"*\""),
            "no wildcards: {doc}"
        );
    }
    let crbs = get(kc, home, &["clusterrolebindings"]);
    for crb in crbs["items"].as_array().unwrap() {
        assert_ne!(crb["roleRef"]["name"], "cluster-admin", "{crb}");
    }
}

/// Probes on 9650, resources, non-root, read-only root with writable emptyDirs, no escalation,
/// no service-link variables (every hook spawn copies the environment).
fn check_pod(pod: &Value) {
    assert_eq!(pod["serviceAccountName"], "addon-operator");
    assert_eq!(pod["enableServiceLinks"], false, "{pod}");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let c = &pod["containers"][0];
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["ports"][0]["containerPort"], 9650);
    assert!(c["resources"]["requests"]["memory"].is_string());
    assert!(c["resources"]["limits"]["memory"].is_string());
    let sc = &c["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    let tmp_dir = env_value(&c["env"], "ADDON_OPERATOR_TMP_DIR").unwrap();
    let socket = env_value(&c["env"], "DEBUG_UNIX_SOCKET").unwrap();
    let mounts = c["volumeMounts"].as_array().unwrap();
    for path in [tmp_dir, socket] {
        let mount = mounts
            .iter()
            .find(|m| path.starts_with(m["mountPath"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("{path} is on a writable volume"));
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap();
        assert!(volume.get("emptyDir").is_some(), "{volume}");
    }
}

fn env_value<'a>(env: &'a Value, name: &str) -> Option<&'a str> {
    let var = env.as_array()?.iter().find(|e| e["name"] == name)?;
    var["value"].as_str()
}

/// `helm` (from .tools/bin) against `cluster`, with private helm directories under `home`.
fn helm(kubeconfig: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new("helm")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("HOME", home)
        .env("HELM_CACHE_HOME", home.join("helm/cache"))
        .env("HELM_CONFIG_HOME", home.join("helm/config"))
        .env("HELM_DATA_HOME", home.join("helm/data"))
        .env("PATH", path_with_tools())
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "helm {args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

const CHART: &str = "deploy/helm/addon-operator";

/// The chart, installed by `helm install` with its defaults, makes what deploy/base makes: the
/// same least-privilege RBAC, the locked-down pod with probes, the config ConfigMap from values,
/// the metrics Service; with `ha.enabled` two replicas with leader election; extra RBAC rules and
/// the optional objects come from values.
#[test]
fn the_helm_chart_installs_with_default_values_and_with_ha() {
    if !require_tool("kubectl") || !require_tool("helm") {
        return;
    }
    let ns = ["-n", "addon-operator"];
    for ha in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let cluster = Cluster::start(dir.path());
        let (kc, home) = (cluster.kubeconfig.as_path(), dir.path());
        let mut args = vec![
            "install",
            "addon-operator",
            CHART,
            "-n",
            "addon-operator",
            "--create-namespace",
            "--set-json",
            r#"config.values={"global":{"clusterName":"kind"},"echoServerEnabled":true}"#,
            "--set-json",
            r#"rbac.moduleRules=[{"apiGroups":["apps"],"resources":["deployments"],"verbs":["get","list","watch","create","update","patch","delete"]}]"#,
        ];
        if ha {
            args.extend(["--set", "ha.enabled=true"]);
        }
        helm(kc, home, &args);
        check_rbac(kc, home);
        let modules = get(kc, home, &["clusterrole", "addon-operator-modules"]);
        assert_eq!(modules["rules"][0]["resources"][0], "deployments");
        let config = get(kc, home, &["configmap", "addon-operator", ns[0], ns[1]]);
        let global = addon_core::yaml::parse(config["data"]["global"].as_str().unwrap()).unwrap();
        assert_eq!(global, serde_json::json!({"clusterName": "kind"}));
        assert_eq!(config["data"]["echoServerEnabled"], "true");
        let service = get(kc, home, &["service", "addon-operator", ns[0], ns[1]]);
        assert_eq!(service["spec"]["ports"][0]["port"], 9650);
        let deployment = get(kc, home, &["deployment", "addon-operator", ns[0], ns[1]]);
        let pod = &deployment["spec"]["template"]["spec"];
        check_pod(pod);
        let env = &pod["containers"][0]["env"];
        assert_eq!(
            env_value(env, "ADDON_OPERATOR_CONFIG_MAP"),
            Some("addon-operator")
        );
        if ha {
            assert_eq!(deployment["spec"]["replicas"], 2);
            assert_eq!(env_value(env, "ADDON_OPERATOR_HA"), Some("true"));
            assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate");
        } else {
            assert_eq!(deployment["spec"]["replicas"], 1);
            assert_eq!(env_value(env, "ADDON_OPERATOR_HA"), None);
            assert_eq!(deployment["spec"]["strategy"]["type"], "Recreate");
        }
        // the pod's controller names the release, so the operator never purges its own release
        let release = &deployment["metadata"]["annotations"]["meta.helm.sh/release-name"];
        assert_eq!(release, "addon-operator");
    }
}

/// `helm template` output (with every optional object but the ServiceMonitor, whose CRD the
/// emulator does not have) passes `kubectl apply --dry-run=server`, which creates nothing; a
/// second replica without HA is refused at render time.
#[test]
fn helm_template_output_passes_kubectl_dry_run() {
    if !require_tool("kubectl") || !require_tool("helm") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(dir.path());
    let (kc, home) = (cluster.kubeconfig.as_path(), dir.path());
    kubectl(kc, home, &["create", "namespace", "addon-operator"]);
    let rendered = helm(
        kc,
        home,
        &[
            "template",
            "addon-operator",
            CHART,
            "-n",
            "addon-operator",
            "--set",
            "ha.enabled=true,webhook.enabled=true,webhook.certsSecret=webhook-tls",
        ],
    );
    assert!(
        rendered.contains("name: addon-operator-validating")
            && rendered.contains("name: addon-operator-conversion"),
        "{rendered}"
    );
    let file = dir.path().join("rendered.yaml");
    std::fs::write(&file, &rendered).unwrap();
    let applied = kubectl(
        kc,
        home,
        &[
            "apply",
            "--dry-run=server",
            "--validate=false",
            "-f",
            file.to_str().unwrap(),
        ],
    );
    assert!(
        applied.contains("deployment.apps/addon-operator created (server dry run)"),
        "{applied}"
    );
    let listed = kubectl(
        kc,
        home,
        &["get", "deployments", "-n", "addon-operator", "-o", "name"],
    );
    assert_eq!(listed.trim(), "", "a dry run creates nothing");
    let refused = Command::new("helm")
        .args(["template", "x", CHART, "--set", "replicas=2"])
        .env("HOME", home)
        .env("PATH", path_with_tools())
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("needs ha.enabled=true"));
}
