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

/// Writes the kubeconfig atomically with owner-only permissions: a new file with a random name
/// (created exclusively, mode 0600, never through a symlink) renamed over `path`.
pub fn write(path: &Path, url: &str) -> std::io::Result<()> {
    let parent = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => {
            std::fs::create_dir_all(parent)?;
            parent
        }
        None => Path::new("."),
    };
    let mut file = tempfile::Builder::new()
        .prefix(".kubeconfig-")
        .tempfile_in(parent)?;
    std::io::Write::write_all(&mut file, kubeconfig_yaml(url).as_bytes())?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
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

    #[test]
    fn planted_symlinks_are_never_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        let path = dir.path().join("embedded-cluster.kubeconfig");
        std::os::unix::fs::symlink(&victim, dir.path().join("embedded-cluster.tmp")).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write(&path, "http://127.0.0.1:1").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("127.0.0.1:1")
        );
    }
}
