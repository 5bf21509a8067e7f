//! Drift modes and what a chart's object says about its own drift: the mode annotation, the
//! ignore rules (JSON pointers, `*` for any one segment) and whether it is a Helm hook.

use serde_json::Value;

/// The annotation that sets an object's drift mode (`off`, `warn` or `enforce`); `off` marks an
/// object the module does not want watched at all.
pub const MODE_ANNOTATION: &str = "drift.addon-operator.io/mode";
/// The annotation listing fields whose changes are not drift: JSON pointers separated by commas
/// or new lines, e.g. `/spec/replicas` for a Deployment an HPA scales.
pub const IGNORE_ANNOTATION: &str = "drift.addon-operator.io/ignore";
/// Ignore rules per object, at most (the annotation is chart input).
const MAX_RULES: usize = 64;
/// Segments per rule, at most.
const MAX_SEGMENTS: usize = 32;

/// What the operator does when a release object's field differs from what the release applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub enum DriftMode {
    /// Not watched.
    Off,
    /// A Warning Event and the metrics; nothing is written.
    #[default]
    Warn,
    /// The drifted fields are written back (and the Event says so).
    Enforce,
}

impl DriftMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "false" | "disabled" => Some(Self::Off),
            "warn" => Some(Self::Warn),
            "enforce" => Some(Self::Enforce),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Warn => "warn",
            Self::Enforce => "enforce",
        }
    }

    /// `self` capped at `limit` (a module in maintenance is at most warned about).
    pub fn at_most(self, limit: Self) -> Self {
        self.min(limit)
    }
}

impl std::fmt::Display for DriftMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Fields whose changes are not drift.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoreRules(Vec<Vec<String>>);

impl IgnoreRules {
    /// Rules from the annotation's text; a rule that is not a JSON pointer is skipped and
    /// returned, so the caller can say so.
    pub fn parse(text: &str) -> (Self, Vec<String>) {
        let mut rules = Vec::new();
        let mut rejected = Vec::new();
        for rule in text
            .split([',', '\n'])
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            match pointer_segments(rule) {
                Some(segments) if rules.len() < MAX_RULES => rules.push(segments),
                _ => rejected.push(rule.to_string()),
            }
        }
        (Self(rules), rejected)
    }

    /// Whether the field at `pointer` (or a field under it, or above it) is ignored: a rule
    /// covers the fields under it, and a field is ignored when a rule is under it (a whole
    /// array or map recorded as one value must not hide an ignored member).
    pub fn ignores(&self, pointer: &str) -> bool {
        let Some(path) = pointer_segments(pointer) else {
            return false;
        };
        self.0
            .iter()
            .any(|rule| rule.iter().zip(&path).all(|(r, p)| r == "*" || r == p))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The unescaped segments of a JSON pointer (`/a/b~1c` → `a`, `b/c`); `None` when it is not one.
fn pointer_segments(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    let segments: Vec<String> = rest
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    (segments.len() <= MAX_SEGMENTS).then_some(segments)
}

/// What an object of a release says about its own drift.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectSettings {
    /// The mode its annotation sets; `None`: the module's.
    pub mode: Option<DriftMode>,
    pub ignore: IgnoreRules,
    /// Annotation values that could not be read, for a log line.
    pub rejected: Vec<String>,
}

impl ObjectSettings {
    /// The settings of a manifest object (its annotations as the chart rendered them).
    pub fn of(object: &Value) -> Self {
        let annotation = |key: &str| {
            object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
        };
        let mut rejected = Vec::new();
        let mode = annotation(MODE_ANNOTATION).and_then(|text| {
            let mode = DriftMode::parse(text);
            if mode.is_none() {
                rejected.push(format!("{MODE_ANNOTATION}: {text}"));
            }
            mode
        });
        let (ignore, bad) = IgnoreRules::parse(annotation(IGNORE_ANNOTATION).unwrap_or(""));
        rejected.extend(bad.into_iter().map(|r| format!("{IGNORE_ANNOTATION}: {r}")));
        Self {
            mode,
            ignore,
            rejected,
        }
    }

    /// The object's mode given its module's.
    pub fn mode(&self, module: DriftMode) -> DriftMode {
        self.mode.unwrap_or(module)
    }
}

/// Whether a manifest object is a Helm hook (`helm.sh/hook`): helm creates and deletes those
/// around an install, so they are never drift.
pub fn is_helm_hook(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get("helm.sh/hook"))
        .is_some()
}
