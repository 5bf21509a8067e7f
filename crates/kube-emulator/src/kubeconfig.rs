//! Kubeconfig files that point kubectl, helm and kube-rs at the emulator.

use std::path::Path;

/// A kubeconfig with one cluster, user and context named `kube-emulator`.
pub fn kubeconfig_yaml(url: &str) -> String {
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: kube-emulator\n  cluster:\n    server: {url}\n\
         users:\n\
         - name: kube-emulator\n  user: {{}}\n\
         contexts:\n\
         - name: kube-emulator\n  context:\n    cluster: kube-emulator\n    user: kube-emulator\n    namespace: default\n\
         current-context: kube-emulator\n\
         preferences: {{}}\n"
    )
}

/// Writes the kubeconfig atomically (temp file + rename) with owner-only permissions.
pub fn write(path: &Path, url: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, kubeconfig_yaml(url))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_names_the_server_url() {
        let y = kubeconfig_yaml("http://127.0.0.1:1234");
        assert!(y.contains("server: http://127.0.0.1:1234\n"));
        assert!(y.contains("current-context: kube-emulator"));
    }
}
