//! The command lines of the helm operations, built from plain data.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::command::{args, go_duration};
use super::version::HelmVersion;
use crate::edges::helm::post_render::{PLUGIN_NAME, PostRenderer};

/// What every mutating command line needs besides the release.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub namespace: &'a str,
    pub version: HelmVersion,
    pub history_max: u32,
    pub timeout: Duration,
}

/// `helm version --template '{{.Version}}'`: `v3.19.0`, `v4.1.4`.
pub(crate) fn version() -> Vec<OsString> {
    args(["version", "--template", "{{.Version}}"])
}

/// `helm list` of every release in the namespace, in any status, as JSON.
pub(crate) fn list(namespace: &str, version: HelmVersion) -> Vec<OsString> {
    let mut argv = args(["list", "-n", namespace, "--max", "0", "-o", "json"]);
    argv.extend(version.list_flags());
    argv
}

/// `helm status` of the latest revision (whatever its status) as JSON.
pub(crate) fn status(release: &str, namespace: &str) -> Vec<OsString> {
    args(["status", release, "-n", namespace, "-o", "json"])
}

/// `helm upgrade --install`, values files in order (later wins), never `--wait`, and
/// `--skip-crds` as upstream: the operator installs a module's `crds/` itself (filtered by
/// `--crd-filters`, labelled by `--crd-extra-labels`) before the release.
pub(crate) fn upgrade(
    target: Target<'_>,
    release: &str,
    chart: &Path,
    values_files: &[&Path],
) -> Vec<OsString> {
    let mut argv = args(["upgrade", "--install", release]);
    argv.push(chart.into());
    argv.extend(args(["-n", target.namespace, "--skip-crds"]));
    for file in values_files {
        argv.push("--values".into());
        argv.push(file.into());
    }
    argv.extend(args([
        "--history-max".to_string(),
        target.history_max.to_string(),
        "--timeout".to_string(),
        go_duration(target.timeout),
    ]));
    argv.extend(target.version.upgrade_flags());
    argv
}

/// The flags that make `helm upgrade` run `renderer`: helm 3 runs a program, helm 4 a
/// `postrenderer/v1` plugin by name ([`PostRenderer::write_plugin`] wrote it).
pub(crate) fn post_renderer(version: HelmVersion, renderer: &PostRenderer) -> Vec<OsString> {
    if version.major >= 4 {
        return args(["--post-renderer", PLUGIN_NAME]);
    }
    let mut argv: Vec<OsString> = vec!["--post-renderer".into(), renderer.program.clone().into()];
    for arg in &renderer.args {
        argv.push("--post-renderer-args".into());
        argv.push(arg.into());
    }
    argv
}

/// Upstream's release label saying whether the module is in maintenance
/// (`NoResourceReconciliation`): `true` or `false`, set at every upgrade.
pub(crate) fn maintenance_label(maintenance: bool) -> Vec<OsString> {
    let label = crate::edges::helm::post_render::MAINTENANCE_LABEL;
    args(["--labels".to_string(), format!("{label}={maintenance}")])
}

/// `helm uninstall`.
pub(crate) fn uninstall(target: Target<'_>, release: &str) -> Vec<OsString> {
    args([
        "uninstall",
        release,
        "-n",
        target.namespace,
        "--timeout",
        &go_duration(target.timeout),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(major: u32, minor: u32) -> Target<'static> {
        Target {
            namespace: "addons",
            version: HelmVersion { major, minor },
            history_max: 10,
            timeout: Duration::from_secs(1200),
        }
    }

    fn line(argv: &[OsString]) -> String {
        argv.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn upgrade_installs_with_both_values_files_history_and_timeout() {
        let argv = upgrade(
            target(3, 19),
            "web",
            Path::new("/m/web"),
            &[Path::new("/t/v"), Path::new("/t/c")],
        );
        assert_eq!(
            line(&argv),
            "upgrade --install web /m/web -n addons --skip-crds --values /t/v --values /t/c \
             --history-max 10 --timeout 1200s --take-ownership"
        );
    }

    #[test]
    fn helm_4_upgrades_apply_client_side() {
        let argv = upgrade(target(4, 1), "web", Path::new("/m/web"), &[]);
        assert!(line(&argv).ends_with("--take-ownership --server-side=false"));
        assert!(!line(&argv).contains("--wait"));
    }

    #[test]
    fn list_and_uninstall_are_scoped_to_the_namespace() {
        assert_eq!(
            line(&list(
                "addons",
                HelmVersion {
                    major: 3,
                    minor: 19
                }
            )),
            "list -n addons --max 0 -o json --all"
        );
        assert_eq!(
            line(&list("addons", HelmVersion { major: 4, minor: 1 })),
            "list -n addons --max 0 -o json"
        );
        assert_eq!(
            line(&uninstall(target(4, 1), "web")),
            "uninstall web -n addons --timeout 1200s"
        );
        assert_eq!(
            line(&status("web", "addons")),
            "status web -n addons -o json"
        );
    }
}
