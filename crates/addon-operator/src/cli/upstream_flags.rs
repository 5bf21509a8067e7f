//! The Go operator's `start` flags that have no other home here: Helm's timeout and history, the
//! Kubernetes clients' cluster (`--kube-context`, `--kube-server`) and request rate limits, the
//! CRD file filters (all used), and the flags of features this operator does not have (accepted,
//! logged once as no-ops), plus the `SHELL_OPERATOR_*` fallbacks and the in-cluster namespace
//! default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::support::parse_duration;
use crate::edges::kube::RateLimit;

/// Where a pod finds its own namespace.
pub const SERVICE_ACCOUNT_NAMESPACE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Upstream `start` flags (same names, environment variables and defaults as pkg/app upstream).
#[derive(Debug, Clone, clap::Args)]
pub struct UpstreamArgs {
    /// Helm: how long to wait for any individual Kubernetes operation (like Jobs for hooks)
    #[arg(long, env = "HELM_TIMEOUT", default_value = "20m", value_parser = parse_duration)]
    pub helm_timeout: Duration,
    /// Helm: the most revisions kept per release; 0 keeps all
    #[arg(long, env = "HELM_HISTORY_MAX", default_value_t = 10)]
    pub helm_history_max: u32,
    /// Requests a second of the Kubernetes client of the Helm resources monitor (release
    /// storage and absent objects); 0 is 5 (client-go's default), a negative value (the default
    /// here) no client-side limit
    #[arg(
        long,
        env = "HELM_MONITOR_KUBE_CLIENT_QPS",
        default_value_t = -1.0,
        allow_negative_numbers = true
    )]
    pub helm_monitor_kube_client_qps: f32,
    /// Requests at once of the Helm resources monitor's client (0 is 10)
    #[arg(long, env = "HELM_MONITOR_KUBE_CLIENT_BURST", default_value_t = 10)]
    pub helm_monitor_kube_client_burst: u32,
    /// The context of the kubeconfig (--kube-config, else $KUBECONFIG or ~/.kube/config) to use
    /// instead of its current context
    #[arg(long, env = "KUBE_CONTEXT")]
    pub kube_context: Option<String>,
    /// The API server's URL (e.g. `kubectl proxy`'s http://127.0.0.1:8001), without credentials;
    /// the kubeconfig is then not read
    #[arg(long, env = "KUBE_SERVER")]
    pub kube_server: Option<String>,
    /// Requests a second of the main Kubernetes client (watches, ConfigMap, discovery); 0 is 5
    /// (client-go's default), a negative value (the default here) no client-side limit
    #[arg(
        long,
        env = "KUBE_CLIENT_QPS",
        default_value_t = -1.0,
        allow_negative_numbers = true
    )]
    pub kube_client_qps: f32,
    /// Requests at once of the main Kubernetes client (0 is 10)
    #[arg(long, env = "KUBE_CLIENT_BURST", default_value_t = 10)]
    pub kube_client_burst: u32,
    /// Requests a second of the object patcher's client (hooks' $KUBERNETES_PATCH_PATH, module
    /// CRDs, webhook objects); 0 is 5 (client-go's default), a negative value (the default here)
    /// no client-side limit
    #[arg(
        long,
        env = "OBJECT_PATCHER_KUBE_CLIENT_QPS",
        default_value_t = -1.0,
        allow_negative_numbers = true
    )]
    pub object_patcher_kube_client_qps: f32,
    /// Requests at once of the object patcher's client (0 is 10)
    #[arg(long, env = "OBJECT_PATCHER_KUBE_CLIENT_BURST", default_value_t = 10)]
    pub object_patcher_kube_client_burst: u32,
    /// Time limit of one request of the object patcher's client
    #[arg(long, env = "OBJECT_PATCHER_KUBE_CLIENT_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub object_patcher_kube_client_timeout: Duration,
    /// Accepted for compatibility, no effect: hooks and enabled scripts are never chrooted
    #[arg(long, env = "ADDON_OPERATOR_SHELL_CHROOT_DIR", value_name = "DIR")]
    pub shell_chroot_dir: Option<PathBuf>,
    /// Every modules directory and every module must have a values.yaml
    #[arg(long, env = "ADDON_OPERATOR_STRICT_CHECK_VALUES_MODE_ENABLED", num_args = 0..=1,
          default_value = "false", default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub strict_check_values_mode_enabled: bool,
    /// Accepted for compatibility, no effect: enablement always applies values.yaml flags, the
    /// config, dynamic flags from global hooks, then `enabled` scripts
    #[arg(
        long,
        env = "ADDON_OPERATOR_APPLIED_MODULE_EXTENDERS",
        default_value = ""
    )]
    pub applied_module_extenders: String,
    /// Labels put on the CRDs of modules' crds/ (`key=value,...`); `heritage=addon-operator`
    /// is added unless `heritage` is given
    #[arg(
        long,
        env = "ADDON_OPERATOR_CRD_EXTRA_LABELS",
        default_value = "heritage=addon-operator"
    )]
    pub crd_extra_labels: String,
    /// File name prefixes (comma-separated) of the modules' crds/ files that are not CRDs to
    /// install
    #[arg(
        long,
        env = "ADDON_OPERATOR_CRD_FILTER_PREFIXES",
        default_value = "doc-,_"
    )]
    pub crd_filters: String,
    /// Accepted for compatibility, no effect: the Go operator's own admission server does not
    /// exist here (hooks' webhooks use the --validating-webhook-* flags)
    #[arg(long, env = "ADDON_OPERATOR_ADMISSION_SERVER_ENABLED", num_args = 0..=1,
          default_value = "false", default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub admission_server_enabled: bool,
    /// Accepted for compatibility, no effect (see --admission-server-enabled)
    #[arg(
        long,
        env = "ADDON_OPERATOR_ADMISSION_SERVER_LISTEN_PORT",
        default_value = "9651"
    )]
    pub admission_server_listen_port: String,
    /// Accepted for compatibility, no effect (see --admission-server-enabled)
    #[arg(
        long,
        env = "ADDON_OPERATOR_ADMISSION_SERVER_CERTS_DIR",
        value_name = "DIR"
    )]
    pub admission_server_certs_dir: Option<PathBuf>,
    /// Accepted for compatibility, no effect: client-go's debug log does not exist here
    #[arg(long, env = "DEBUG_KUBERNETES_API", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub debug_kubernetes_api: bool,
}

impl UpstreamArgs {
    /// `--crd-extra-labels` as labels, as upstream reads it (a label selector's `key=value`
    /// and `key==value` terms; others ignored), with `heritage=addon-operator` unless
    /// `heritage` is given.
    pub fn crd_labels(&self) -> BTreeMap<String, String> {
        let mut labels: BTreeMap<String, String> = self
            .crd_extra_labels
            .split(',')
            .filter_map(|term| {
                let (key, value) = term.split_once('=')?;
                let value = value.strip_prefix('=').unwrap_or(value);
                let key = key.trim();
                (!key.is_empty() && !key.ends_with('!'))
                    .then(|| (key.to_string(), value.trim().to_string()))
            })
            .collect();
        labels
            .entry("heritage".to_string())
            .or_insert_with(|| "addon-operator".to_string());
        labels
    }

    /// The main client's request rate limit (`None`: off).
    pub fn kube_rate(&self) -> Option<RateLimit> {
        RateLimit::from_flags(self.kube_client_qps, self.kube_client_burst)
    }

    /// The object patcher client's request rate limit (`None`: off).
    pub fn object_patcher_rate(&self) -> Option<RateLimit> {
        let (qps, burst) = (
            self.object_patcher_kube_client_qps,
            self.object_patcher_kube_client_burst,
        );
        RateLimit::from_flags(qps, burst)
    }

    /// The Helm resources monitor client's request rate limit (`None`: off).
    pub fn helm_monitor_rate(&self) -> Option<RateLimit> {
        let (qps, burst) = (
            self.helm_monitor_kube_client_qps,
            self.helm_monitor_kube_client_burst,
        );
        RateLimit::from_flags(qps, burst)
    }

    /// `--crd-filters` as prefixes.
    pub fn crd_filter_prefixes(&self) -> Vec<String> {
        crate::edges::kube::crds::parse_filters(&self.crd_filters)
    }

    /// The flags given a value other than their default, though they change nothing here.
    pub fn without_effect(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut note = |set: bool, flag: &'static str| {
            if set {
                out.push(flag);
            }
        };
        note(self.shell_chroot_dir.is_some(), "--shell-chroot-dir");
        note(
            !self.applied_module_extenders.is_empty(),
            "--applied-module-extenders",
        );
        note(self.admission_server_enabled, "--admission-server-enabled");
        note(
            self.admission_server_listen_port != "9651",
            "--admission-server-listen-port",
        );
        note(
            self.admission_server_certs_dir.is_some(),
            "--admission-server-certs-dir",
        );
        note(self.debug_kubernetes_api, "--debug-kubernetes-api");
        out
    }

    /// Logs, once at startup, every flag that was set but has no effect here.
    pub fn log_without_effect(&self) {
        for flag in self.without_effect() {
            tracing::info!(
                flag,
                "flag accepted for compatibility with the Go operator; it has no effect here (docs/compatibility.md)"
            );
        }
    }
}

/// With `--strict-check-values-mode-enabled`: each modules directory (holding a module) and
/// each module without a `values.yaml`, as the Go operator's strict mode refuses them.
pub fn strict_values_problems(found: &addon_core::discovery::Discovered) -> Vec<String> {
    let has_file = |path: &Path| found.modules_values.iter().any(|f| f.path == path);
    let mut problems = Vec::new();
    let mut dirs: Vec<&Path> = found
        .modules
        .iter()
        .filter_map(|m| m.modules_dir.as_deref())
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        if !has_file(&dir.join("values.yaml")) {
            problems.push(format!(
                "strict values mode: {} has no values.yaml",
                dir.display()
            ));
        }
    }
    for module in found.modules.iter().filter(|m| m.values_yaml.is_none()) {
        problems.push(format!(
            "strict values mode: module '{}' ({}) has no values.yaml",
            module.name,
            module.path.display()
        ));
    }
    problems
}

/// The namespace to work in: `--namespace` / `ADDON_OPERATOR_NAMESPACE` /
/// `SHELL_OPERATOR_NAMESPACE`, else the pod's own (the service account's namespace file), else
/// `default`.
pub fn resolve_namespace(given: &str, service_account_file: &Path) -> String {
    if !given.is_empty() {
        return given.to_string();
    }
    let from_pod = std::fs::read_to_string(service_account_file)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    match from_pod {
        Some(ns) => {
            tracing::info!(namespace = %ns, "no --namespace: using the pod's namespace");
            ns
        }
        None => {
            tracing::info!("no --namespace / ADDON_OPERATOR_NAMESPACE: using 'default'");
            "default".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::fallback_with;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        upstream: UpstreamArgs,
    }

    #[test]
    fn defaults_are_upstreams_and_change_nothing() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["addon-operator"]).unwrap();
        assert_eq!(cli.upstream.helm_timeout, Duration::from_secs(20 * 60));
        assert_eq!(cli.upstream.helm_history_max, 10);
        assert!(cli.upstream.without_effect().is_empty());
    }

    #[test]
    fn every_upstream_flag_parses_and_the_no_ops_are_named() {
        let cli = Cli::try_parse_from([
            "addon-operator",
            "--helm-timeout=5m",
            "--helm-history-max=0",
            "--helm-monitor-kube-client-qps=20",
            "--helm-monitor-kube-client-burst=40",
            "--kube-context=ctx",
            "--kube-server=https://k:6443",
            "--kube-client-qps=50",
            "--kube-client-burst=100",
            "--object-patcher-kube-client-qps=50",
            "--object-patcher-kube-client-burst=100",
            "--object-patcher-kube-client-timeout=30s",
            "--shell-chroot-dir=/chroot",
            "--strict-check-values-mode-enabled",
            "--applied-module-extenders=Static,KubeConfig",
            "--crd-extra-labels=team=x",
            "--crd-filters=doc-",
            "--admission-server-enabled=true",
            "--admission-server-listen-port=9999",
            "--admission-server-certs-dir=/certs",
            "--debug-kubernetes-api",
        ])
        .unwrap();
        assert_eq!(cli.upstream.helm_timeout, Duration::from_secs(300));
        assert_eq!(cli.upstream.helm_history_max, 0);
        assert_eq!(
            cli.upstream.without_effect(),
            [
                "--shell-chroot-dir",
                "--applied-module-extenders",
                "--admission-server-enabled",
                "--admission-server-listen-port",
                "--admission-server-certs-dir",
                "--debug-kubernetes-api"
            ]
        );
        let limit = |qps, burst| Some(RateLimit { qps, burst });
        assert_eq!(cli.upstream.kube_rate(), limit(50.0, 100));
        assert_eq!(cli.upstream.object_patcher_rate(), limit(50.0, 100));
        assert_eq!(cli.upstream.helm_monitor_rate(), limit(20.0, 40));
        assert_eq!(cli.upstream.crd_filter_prefixes(), ["doc-"]);
        assert_eq!(
            cli.upstream.crd_labels(),
            BTreeMap::from([
                ("heritage".to_string(), "addon-operator".to_string()),
                ("team".to_string(), "x".to_string()),
            ])
        );
        assert!(cli.upstream.strict_check_values_mode_enabled);
    }

    #[test]
    fn strict_mode_names_every_missing_values_file() {
        use addon_core::discovery::{Discovered, ModuleSource, SourceFile};
        let module = |name: &str, values: bool| ModuleSource {
            name: addon_core::names::ModuleName::new(name).unwrap(),
            order: 1,
            path: PathBuf::from(format!("/m/{name}")),
            modules_dir: Some(PathBuf::from("/m")),
            values_yaml: values.then(|| SourceFile {
                path: PathBuf::from(format!("/m/{name}/values.yaml")),
                text: String::new(),
            }),
            enabled_script: None,
            openapi: Default::default(),
            definition: Default::default(),
            has_chart: false,
            settings_check: None,
            hooks: vec![],
        };
        let mut found = Discovered {
            modules: vec![module("a", true), module("b", false)],
            ..Default::default()
        };
        let problems = strict_values_problems(&found);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("/m has no values.yaml"));
        assert!(problems[1].contains("module 'b'"));
        found.modules_values.push(SourceFile {
            path: PathBuf::from("/m/values.yaml"),
            text: String::new(),
        });
        assert_eq!(strict_values_problems(&found).len(), 1);
    }

    #[test]
    fn shell_operator_variables_fill_in_defaults() {
        let env = |n: &str| (n == "SHELL_OPERATOR_LISTEN_PORT").then(|| "9115".to_string());
        assert_eq!(
            fallback_with(&env, "SHELL_OPERATOR_LISTEN_PORT", "9650"),
            "9115"
        );
        assert_eq!(
            fallback_with(&env, "SHELL_OPERATOR_TMP_DIR", "/tmp/a"),
            "/tmp/a"
        );
        let empty = |_: &str| Some(String::new());
        assert_eq!(fallback_with(&empty, "SHELL_OPERATOR_NAMESPACE", ""), "");
    }

    #[test]
    fn namespace_comes_from_the_flag_then_the_pod_then_default() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("namespace");
        assert_eq!(resolve_namespace("", &file), "default");
        std::fs::write(&file, "d8-system\n").unwrap();
        assert_eq!(resolve_namespace("", &file), "d8-system");
        assert_eq!(resolve_namespace("addons", &file), "addons");
    }
}
