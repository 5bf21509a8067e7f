//! Validated identifiers: module names (kebab-case, with their camelCase values key), hook names
//! and queue names, plus parsing of numbered module directory names (`NNN-name`).

use std::fmt;

/// An identifier that was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error(
        "module name '{name}' must be kebab-case (lowercase letters, digits, single '-') and restorable from its camelCase form (got '{camel}' back as '{back}')"
    )]
    NotRestorable {
        name: String,
        camel: String,
        back: String,
    },
    #[error(
        "module name '{name}' must be kebab-case: lowercase letters and digits separated by single '-', starting with a letter"
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

/// A module name in kebab-case, such as `cert-manager`. It always round-trips through its camelCase
/// values key (`certManager`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ModuleName(String);

impl ModuleName {
    /// Validates a kebab-case module name.
    pub fn new(name: &str) -> Result<Self, NameError> {
        if !is_kebab(name) {
            return Err(NameError::NotKebab {
                name: name.to_string(),
            });
        }
        let camel = kebab_to_camel(name);
        let back = camel_to_kebab(&camel);
        if back != name {
            return Err(NameError::NotRestorable {
                name: name.to_string(),
                camel,
                back,
            });
        }
        Ok(Self(name.to_string()))
    }

    /// The module whose values key is `key` (`certManager` → `cert-manager`).
    pub fn from_values_key(key: &str) -> Result<Self, NameError> {
        let kebab = camel_to_kebab(key);
        match Self::new(&kebab) {
            Ok(name) if name.values_key() == key => Ok(name),
            _ => Err(NameError::BadValuesKey {
                key: key.to_string(),
            }),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The camelCase key of this module in values and config (`cert-manager` → `certManager`).
    pub fn values_key(&self) -> String {
        kebab_to_camel(&self.0)
    }

    /// The key of this module's enable flag (`certManagerEnabled`).
    pub fn enabled_key(&self) -> String {
        format!("{}Enabled", self.values_key())
    }
}

impl fmt::Display for ModuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_kebab(name: &str) -> bool {
    let starts_with_letter = name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    starts_with_letter
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

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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
    fn name_that_cannot_round_trip_is_rejected_with_both_forms() {
        let err = ModuleName::new("module-1").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("module-1") && msg.contains("module1"), "{msg}");
    }

    #[test]
    fn non_kebab_names_are_rejected() {
        for bad in [
            "Module",
            "my_module",
            "-x",
            "x-",
            "a--b",
            "1abc",
            "",
            "myModule",
        ] {
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
