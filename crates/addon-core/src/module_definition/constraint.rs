//! Semantic versions and the version constraints of `module.yaml` requirements, in the syntax
//! Deckhouse reads (`>= 1.2`, `> v1.64.0`, `~1.2`, `^1.2`, `1.2.x`, `1.2 - 1.4`, `,` or a space
//! for "and", `||` for "or").

use std::cmp::Ordering;
use std::fmt;

/// The longest constraint read (a `module.yaml` is untrusted input).
const MAX_CONSTRAINT_LEN: usize = 512;

/// A version: `major.minor.patch`, a leading `v` and missing parts allowed (`v1.27` = 1.27.0);
/// a pre-release (`-rc.1`) sorts before its release; build metadata (`+abc`) is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
}

impl Version {
    /// Reads a version; Kubernetes' `v1.31.2+k3s1` and `1.27` are versions too.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim();
        let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
        let text = text.split('+').next().unwrap_or(text);
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, pre.to_string()),
            None => (text, String::new()),
        };
        let mut parts = core.split('.');
        let mut next = || -> Option<Option<u64>> {
            match parts.next() {
                None => Some(None),
                Some(p) => p.parse().ok().map(Some),
            }
        };
        let major = next()??;
        let minor = next()?.unwrap_or(0);
        let patch = next()?.unwrap_or(0);
        if parts.next().is_some() {
            return None;
        }
        Some(Version {
            major,
            minor,
            patch,
            pre,
        })
    }

    fn triple(&self) -> (u64, u64, u64) {
        (self.major, self.minor, self.patch)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.triple().cmp(&other.triple()).then_with(|| {
            match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            }
        })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        Ok(())
    }
}

/// A constraint that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("version constraint {text:?}: {reason}")]
pub struct ConstraintError {
    pub text: String,
    pub reason: &'static str,
}

/// One comparison: the operator and the version with the parts that were given.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bound {
    op: Op,
    version: Version,
    /// How many of major.minor.patch were numbers (`1.2.x` and `1.2` give 2; `*` gives 0).
    given: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Tilde,
    Caret,
}

/// A constraint: alternatives (`||`), each a list of bounds that must all hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    text: String,
    any_of: Vec<Vec<Bound>>,
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Constraint {
    /// Reads a constraint.
    pub fn parse(text: &str) -> Result<Constraint, ConstraintError> {
        let bad = |reason| ConstraintError {
            text: crate::quote::prefix(text),
            reason,
        };
        if text.len() > MAX_CONSTRAINT_LEN {
            return Err(bad("longer than 512 bytes"));
        }
        let mut any_of = Vec::new();
        for alternative in text.split("||") {
            let bounds = parse_alternative(alternative).map_err(bad)?;
            if bounds.is_empty() {
                return Err(bad("an empty alternative"));
            }
            any_of.push(bounds);
        }
        Ok(Constraint {
            text: text.trim().to_string(),
            any_of,
        })
    }

    /// The version satisfies the constraint.
    pub fn matches(&self, version: &Version) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|b| b.matches(version)))
    }
}

/// `>= 1.2, < 2` or `>= 1.2 < 2` or `1.2 - 1.4`.
fn parse_alternative(text: &str) -> Result<Vec<Bound>, &'static str> {
    let words: Vec<&str> = text
        .split([',', ' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    let mut bounds = Vec::new();
    let mut i = 0;
    while let Some(word) = words.get(i) {
        // an operator written apart from its version: `>= 1.2`
        let (word, used) = match (is_operator(word), words.get(i + 1)) {
            (true, Some(next)) => (format!("{word}{next}"), 2),
            (true, None) => return Err("an operator without a version"),
            (false, _) => (word.to_string(), 1),
        };
        if words.get(i + used) == Some(&"-") {
            let upper = words.get(i + used + 1).ok_or("a range without its end")?;
            bounds.push(bound_of(Op::Ge, &word)?);
            bounds.push(range_end(upper)?);
            i += used + 2;
            continue;
        }
        bounds.push(parse_bound(&word)?);
        i += used;
    }
    Ok(bounds)
}

fn is_operator(word: &str) -> bool {
    ["=", "==", "!=", ">", ">=", "<", "<=", "~", "~>", "^"].contains(&word)
}

fn parse_bound(word: &str) -> Result<Bound, &'static str> {
    let ops: [(&str, Op); 10] = [
        (">=", Op::Ge),
        ("=>", Op::Ge),
        ("<=", Op::Le),
        ("=<", Op::Le),
        ("!=", Op::Ne),
        ("==", Op::Eq),
        ("~>", Op::Tilde),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ];
    for (prefix, op) in ops {
        if let Some(rest) = word.strip_prefix(prefix) {
            return bound_of(op, rest);
        }
    }
    if let Some(rest) = word.strip_prefix('~') {
        return bound_of(Op::Tilde, rest);
    }
    if let Some(rest) = word.strip_prefix('^') {
        return bound_of(Op::Caret, rest);
    }
    bound_of(Op::Eq, word)
}

/// The end of a hyphen range: `1.4` includes every 1.4.x.
fn range_end(word: &str) -> Result<Bound, &'static str> {
    let end = bound_of(Op::Le, word)?;
    if end.given >= 3 {
        return Ok(end);
    }
    Ok(Bound {
        op: Op::Lt,
        version: bump(&end.version, end.given),
        given: 3,
    })
}

fn bound_of(op: Op, text: &str) -> Result<Bound, &'static str> {
    let text = text.trim();
    let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let (core, pre) = match text.split_once('-') {
        Some((core, pre)) => (core, pre.to_string()),
        None => (text, String::new()),
    };
    let core = core.split('+').next().unwrap_or(core);
    let mut numbers = [0u64; 3];
    let mut given = 0;
    for (i, part) in core.split('.').enumerate() {
        if i >= 3 {
            return Err("a version with more than three parts");
        }
        if ["x", "X", "*"].contains(&part) {
            break;
        }
        numbers[i] = part.parse().map_err(|_| "a version that is not a number")?;
        given = i + 1;
    }
    Ok(Bound {
        op,
        version: Version {
            major: numbers[0],
            minor: numbers[1],
            patch: numbers[2],
            pre,
        },
        given,
    })
}

/// The first version past the given parts: 1.2 (2 given) → 1.3.0; 1 → 2.0.0.
fn bump(v: &Version, given: usize) -> Version {
    let (major, minor) = match given {
        0 => (u64::MAX, 0),
        1 => (v.major.saturating_add(1), 0),
        _ => (v.major, v.minor.saturating_add(1)),
    };
    Version {
        major,
        minor,
        patch: 0,
        pre: String::new(),
    }
}

impl Bound {
    fn matches(&self, v: &Version) -> bool {
        let b = &self.version;
        let upper = bump(b, self.given);
        // a pre-release matches only a bound on the same version with a pre-release
        if !v.pre.is_empty() && (b.pre.is_empty() || v.triple() != b.triple()) {
            return false;
        }
        match self.op {
            Op::Eq if self.given < 3 => v >= b && *v < upper,
            Op::Ne if self.given < 3 => !(v >= b && *v < upper),
            Op::Eq => v == b,
            Op::Ne => v != b,
            Op::Gt if self.given < 3 => *v >= upper,
            Op::Gt => v > b,
            Op::Ge => v >= b,
            Op::Lt => v < b,
            Op::Le if self.given < 3 => *v < upper,
            Op::Le => v <= b,
            Op::Tilde => v >= b && *v < bump(b, self.given.clamp(1, 2)),
            Op::Caret => v >= b && *v < caret_upper(b, self.given),
        }
    }
}

/// `^1.2.3` < 2.0.0; `^0.2.3` < 0.3.0; `^0.0.3` < 0.0.4.
fn caret_upper(b: &Version, given: usize) -> Version {
    if b.major > 0 || given <= 1 {
        return bump(b, 1);
    }
    if b.minor > 0 || given == 2 {
        return bump(b, 2);
    }
    Version {
        patch: b.patch.saturating_add(1),
        pre: String::new(),
        ..b.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(constraint: &str, version: &str) -> bool {
        let c = Constraint::parse(constraint).unwrap();
        c.matches(&Version::parse(version).unwrap())
    }

    #[test]
    fn versions_read_a_v_prefix_missing_parts_and_kubernetes_builds() {
        assert_eq!(Version::parse("v1.27").unwrap().to_string(), "1.27.0");
        assert_eq!(
            Version::parse("v1.31.2+k3s1").unwrap().to_string(),
            "1.31.2"
        );
        assert!(Version::parse("1.2.3-rc.1").unwrap() < Version::parse("1.2.3").unwrap());
        assert_eq!(Version::parse("one"), None);
    }

    #[test]
    fn comparisons_hold_as_deckhouse_writes_them() {
        assert!(holds(">= 0.0.0", "0.1.0"));
        assert!(holds("> 1.67.0", "1.68.0"));
        assert!(!holds("> 1.67.0", "1.67.0"));
        assert!(holds("> v1.64.0", "v1.64.1"));
        assert!(holds(">=1.27", "1.27.0"));
        assert!(!holds(">= 1.27", "1.26.9"));
        assert!(holds("<= 1.28", "1.28.5"), "1.28 covers every 1.28.x");
        assert!(!holds("< 1.28", "1.28.0"));
    }

    #[test]
    fn and_or_ranges_tilde_caret_and_wildcards() {
        assert!(holds(">= 1.2, < 2", "1.9.0"));
        assert!(holds(">= 1.2 < 2", "1.9.0"));
        assert!(!holds(">= 1.2, < 2", "2.0.0"));
        assert!(holds("< 1 || >= 3", "3.1.0"));
        assert!(!holds("< 1 || >= 3", "2.0.0"));
        assert!(holds("1.2 - 1.4", "1.4.7"));
        assert!(!holds("1.2 - 1.4", "1.5.0"));
        assert!(holds("~1.2.3", "1.2.9"));
        assert!(!holds("~1.2.3", "1.3.0"));
        assert!(holds("^1.2", "1.9.0"));
        assert!(!holds("^0.2.3", "0.3.0"));
        assert!(holds("1.2.x", "1.2.7"));
        assert!(holds("*", "5.0.0"));
        assert!(holds("!= 1.2.3", "1.2.4"));
    }

    #[test]
    fn a_pre_release_matches_only_a_bound_that_names_one() {
        assert!(!holds(">= 1.0.0", "1.1.0-rc.1"));
        assert!(holds(">= 1.1.0-rc.0", "1.1.0-rc.1"));
    }

    #[test]
    fn bad_constraints_are_refused_with_the_reason() {
        let e = Constraint::parse(">= one").unwrap_err();
        assert_eq!(e.reason, "a version that is not a number");
        assert!(Constraint::parse(">=").is_err());
        assert!(Constraint::parse("1 ||").is_err());
        assert!(Constraint::parse(&"1".repeat(600)).is_err());
    }
}
