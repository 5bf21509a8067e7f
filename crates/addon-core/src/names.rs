//! Validated identifiers: module names (kebab-case, with their camelCase values key), hook names
//! and queue names, plus parsing of numbered module directory names (`NNN-name`).

use std::fmt;

/// An identifier that was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error(
        "module name '{name}' must be kebab-case: lowercase letters and digits separated by single '-'"
    )]
    NotKebab { name: String },
    #[error("values key '{key}' is not the camelCase form of a valid module name")]
    BadValuesKey { key: String },
    #[error("hook name must not be empty")]
    EmptyHookName,
    #[error("queue name must not be empty")]
    EmptyQueueName,
}

impl NameError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        "invalid_name"
    }
}

/// A module name in kebab-case, such as `cert-manager`, with its camelCase values key
/// (`certManager`). Two names are the same module when their values keys are equal: `module-1`
/// and `module1` both own the key `module1` (the Go operator's releases accepted either form),
/// so a config key names its module without knowing how the directory spelled it.
#[derive(Debug, Clone)]
pub struct ModuleName {
    name: String,
    key: String,
}

impl PartialEq for ModuleName {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for ModuleName {}

impl std::hash::Hash for ModuleName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl PartialOrd for ModuleName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ModuleName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl serde::Serialize for ModuleName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name)
    }
}

impl ModuleName {
    /// Validates a kebab-case module name: lowercase letters and digits in words separated by
    /// single dashes (`cert-manager`, `with-values-1`, `l2-load-balancer`).
    pub fn new(name: &str) -> Result<Self, NameError> {
        if !is_kebab(name) {
            return Err(NameError::NotKebab {
                name: name.to_string(),
            });
        }
        Ok(Self {
            name: name.to_string(),
            key: kebab_to_camel(name),
        })
    }

    /// The module whose values key is `key` (`certManager` → `cert-manager`). A module whose
    /// directory spells the name differently (`with-values-1` for `withValues1`) is the same
    /// module: names compare by values key.
    pub fn from_values_key(key: &str) -> Result<Self, NameError> {
        let kebab = camel_to_kebab(key);
        match Self::new(&kebab) {
            Ok(name) if name.key == key => Ok(name),
            _ => Err(NameError::BadValuesKey {
                key: key.to_string(),
            }),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The camelCase key of this module in values and config (`cert-manager` → `certManager`).
    pub fn values_key(&self) -> String {
        self.key.clone()
    }

    /// The key of this module's enable flag (`certManagerEnabled`).
    pub fn enabled_key(&self) -> String {
        format!("{}Enabled", self.key)
    }
}

impl fmt::Display for ModuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

fn is_kebab(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `cert-manager` → `certManager`.
pub fn kebab_to_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper_next = false;
    for c in name.chars() {
        if c == '-' {
            upper_next = true;
        } else if upper_next {
            out.push(c.to_ascii_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `certManager` → `cert-manager`.
pub fn camel_to_kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The order and name encoded in a module directory name such as `010-cert-manager`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleDirName {
    pub order: u32,
    pub name: ModuleName,
}

/// The order used for module directories without a numeric prefix, unless configured otherwise.
pub const DEFAULT_UNNUMBERED_MODULE_ORDER: u32 = 1;

/// Parses `NNN-name` (order `NNN`) or `name` (order `default_order`).
pub fn parse_module_dir_name(dir: &str, default_order: u32) -> Result<ModuleDirName, NameError> {
    let (order, rest) = match dir.split_once('-') {
        Some((digits, rest))
            if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) =>
        {
            match digits.parse::<u32>() {
                Ok(order) if order <= i32::MAX as u32 => (order, rest),
                _ => (default_order, dir),
            }
        }
        _ => (default_order, dir),
    };
    Ok(ModuleDirName {
        order,
        name: ModuleName::new(rest)?,
    })
}

/// A hook's name: its path relative to the hooks base (`hooks/https/copy_cert.py`, `000-startup/hook`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct HookName(String);

impl HookName {
    pub fn new(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::EmptyHookName);
        }
        Ok(Self(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HookName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name of a task queue; `main` unless a binding names another.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct QueueName(String);

impl QueueName {
    pub const MAIN: &'static str = "main";
    /// The names of the lanes of parallel module runs start so (upstream's names).
    pub const PARALLEL_PREFIX: &'static str = "parallel_queue_";

    pub fn new(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::EmptyQueueName);
        }
        Ok(Self(name.to_string()))
    }

    pub fn main() -> Self {
        Self(Self::MAIN.to_string())
    }

    pub fn is_main(&self) -> bool {
        self.0 == Self::MAIN
    }

    /// The `index`th lane of parallel module runs (upstream's `parallel_queue_<i>`).
    pub fn parallel(index: usize) -> Self {
        Self(format!("{}{index}", Self::PARALLEL_PREFIX))
    }

    /// Whether this is a lane of parallel module runs.
    pub fn is_parallel(&self) -> bool {
        self.0.starts_with(Self::PARALLEL_PREFIX)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whose values a hook or document belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    Global,
    Module(ModuleName),
}

impl Scope {
    /// The top-level key of this scope in values documents: `global` or the module's camelCase key.
    pub fn key(&self) -> String {
        match self {
            Scope::Global => "global".to_string(),
            Scope::Module(m) => m.values_key(),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Global => f.write_str("global"),
            Scope::Module(m) => write!(f, "module '{m}'"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_name_maps_to_camel_values_key() {
        let m = ModuleName::new("simple-one-module").unwrap();
        assert_eq!(m.values_key(), "simpleOneModule");
        assert_eq!(m.enabled_key(), "simpleOneModuleEnabled");
        let n = ModuleName::new("nginx-ingress").unwrap();
        assert_eq!(n.values_key(), "nginxIngress");
    }

    #[test]
    fn name_with_version_suffix_round_trips() {
        let m = ModuleName::new("ingress-nginx-v2").unwrap();
        assert_eq!(m.values_key(), "ingressNginxV2");
        assert_eq!(ModuleName::from_values_key("ingressNginxV2").unwrap(), m);
    }

    #[test]
    fn names_with_digit_words_are_accepted_with_the_go_values_key() {
        for (name, key) in [
            ("module-1", "module1"),
            ("with-values-1", "withValues1"),
            ("l2-load-balancer", "l2LoadBalancer"),
            ("2-module-name", "2ModuleName"),
            ("module1", "module1"),
            ("cert-manager-crd", "certManagerCrd"),
        ] {
            let m = ModuleName::new(name).unwrap();
            assert_eq!(m.values_key(), key, "{name}");
            assert_eq!(m.as_str(), name);
        }
    }

    #[test]
    fn names_with_the_same_values_key_are_the_same_module() {
        let dir = ModuleName::new("with-values-1").unwrap();
        let from_config = ModuleName::from_values_key("withValues1").unwrap();
        assert_eq!(dir, from_config);
        let mut set = std::collections::BTreeSet::new();
        set.insert(dir);
        assert!(set.contains(&ModuleName::new("with-values1").unwrap()));
        assert!(!set.contains(&ModuleName::new("with-values-2").unwrap()));
    }

    #[test]
    fn non_kebab_names_are_rejected() {
        for bad in ["Module", "my_module", "-x", "x-", "a--b", "", "myModule"] {
            assert!(ModuleName::new(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn values_key_must_be_camel_form_of_a_module() {
        assert_eq!(
            ModuleName::from_values_key("certManager").unwrap().as_str(),
            "cert-manager"
        );
        assert!(ModuleName::from_values_key("cert-manager").is_err());
        assert!(ModuleName::from_values_key("CertManager").is_err());
        assert!(ModuleName::from_values_key("cert_manager").is_err());
    }

    #[test]
    fn numbered_dir_gives_order_and_name() {
        let d = parse_module_dir_name("010-cert-manager", 1).unwrap();
        assert_eq!(d.order, 10);
        assert_eq!(d.name.as_str(), "cert-manager");
    }

    #[test]
    fn unnumbered_dir_gets_the_default_order() {
        let d = parse_module_dir_name("cert-manager", 7).unwrap();
        assert_eq!(d.order, 7);
        assert_eq!(d.name.as_str(), "cert-manager");
    }

    #[test]
    fn dir_with_invalid_name_after_prefix_is_an_error() {
        assert!(parse_module_dir_name("001-Bad_Name", 1).is_err());
    }

    #[test]
    fn queue_main_is_main() {
        assert!(QueueName::main().is_main());
        assert!(!QueueName::new("q1").unwrap().is_main());
        assert!(QueueName::new("").is_err());
    }
}
