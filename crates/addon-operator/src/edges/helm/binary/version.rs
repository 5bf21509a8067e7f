//! The helm version (`helm version --template '{{.Version}}'`) and the flags that differ by version.

use std::ffi::OsString;

/// A helm release version such as `v3.19.0` or `v4.1.4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelmVersion {
    pub major: u32,
    pub minor: u32,
}

impl HelmVersion {
    /// Reads `v3.19.0`, `v4.1.4+g05fa379`, `3.12`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts = text.split(['.', '+', '-']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(Self { major, minor })
    }

    /// Helm 3 and 4 are supported; helm 2 (tiller) is not, newer majors are tried as 4.
    pub fn is_supported(self) -> bool {
        self.major >= 3
    }

    /// Flags `helm upgrade --install` gets on top of the common ones, so that helm 3 and 4
    /// behave alike:
    /// - `--take-ownership` (helm ≥ 3.17): adopt objects that exist without Helm's annotations,
    ///   as the Go operator does (`TakeOwnership=true`);
    /// - `--server-side=false` (helm 4): helm 4 applies server-side by default on new releases;
    ///   helm 3's client-side three-way merge is kept so a release behaves the same with either
    ///   binary and fields set by others (hooks, controllers) never cause apply conflicts.
    ///
    /// `--wait` is never passed: helm 4's default (`hookOnly`) is helm 3's behaviour without it.
    pub fn upgrade_flags(self) -> Vec<OsString> {
        let mut flags: Vec<OsString> = Vec::new();
        if self.major > 3 || self.minor >= 17 {
            flags.push("--take-ownership".into());
        }
        if self.major >= 4 {
            flags.push("--server-side=false".into());
        }
        flags
    }

    /// Flags `helm list` needs to show releases in every status: helm 3 shows only deployed
    /// and failed ones without `--all`; helm 4 shows all by default and has no `--all`.
    pub fn list_flags(self) -> Vec<OsString> {
        if self.major == 3 {
            vec!["--all".into()]
        } else {
            Vec::new()
        }
    }
}

impl std::fmt::Display for HelmVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_printed_by_helm_3_and_4_parse() {
        assert_eq!(
            HelmVersion::parse("v3.19.0\n"),
            Some(HelmVersion {
                major: 3,
                minor: 19
            })
        );
        assert_eq!(
            HelmVersion::parse("v4.1.4+g05fa379"),
            Some(HelmVersion { major: 4, minor: 1 })
        );
        assert_eq!(HelmVersion::parse("Client: &version.Version{}"), None);
    }

    #[test]
    fn helm_2_is_not_supported() {
        assert!(
            !HelmVersion {
                major: 2,
                minor: 17
            }
            .is_supported()
        );
        assert!(HelmVersion { major: 3, minor: 0 }.is_supported());
    }

    #[test]
    fn helm_4_applies_client_side_and_old_helm_3_gets_no_take_ownership() {
        let v4 = HelmVersion { major: 4, minor: 1 }.upgrade_flags();
        assert_eq!(v4, ["--take-ownership", "--server-side=false"]);
        let v3 = HelmVersion {
            major: 3,
            minor: 12,
        }
        .upgrade_flags();
        assert!(v3.is_empty());
        let v319 = HelmVersion {
            major: 3,
            minor: 19,
        }
        .upgrade_flags();
        assert_eq!(v319, ["--take-ownership"]);
    }

    #[test]
    fn only_helm_3_needs_all_to_list_every_status() {
        assert_eq!(
            HelmVersion {
                major: 3,
                minor: 19
            }
            .list_flags(),
            ["--all"]
        );
        assert!(HelmVersion { major: 4, minor: 1 }.list_flags().is_empty());
    }
}
