//! `.helmignore` rules as Helm applies them when it loads a chart directory: one pattern a line,
//! `#` comments, `!` negation, a trailing `/` for directories only, a leading `/` or an inner `/`
//! matching the whole relative path, otherwise the base name; Go `filepath.Match` globs; the
//! default rule `templates/.?*`.

/// The parsed rules of one chart directory.
#[derive(Debug, Clone, Default)]
pub struct HelmIgnore {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    glob: String,
    negate: bool,
    dir_only: bool,
    whole_path: bool,
}

/// A `.helmignore` line Helm refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelmIgnoreError {
    #[error(".helmignore line {line}: double-star (**) syntax is not supported")]
    DoubleStar { line: usize },
    #[error(".helmignore line {line}: bad pattern '{pattern}'")]
    BadPattern { line: usize, pattern: String },
}

impl HelmIgnore {
    /// The rules of `text` (a `.helmignore` file) followed by Helm's default rule.
    pub fn parse(text: &str) -> Result<Self, HelmIgnoreError> {
        let mut rules = Self::default();
        for (index, line) in text.lines().enumerate() {
            rules.add(line, index + 1)?;
        }
        rules.add("templates/.?*", 0)?;
        Ok(rules)
    }

    fn add(&mut self, line: &str, number: usize) -> Result<(), HelmIgnoreError> {
        let rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err(HelmIgnoreError::DoubleStar { line: number });
        }
        if glob_match(rule, "abc").is_none() {
            return Err(HelmIgnoreError::BadPattern {
                line: number,
                pattern: rule.to_string(),
            });
        }
        let (negate, rule) = match rule.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, rule),
        };
        let (dir_only, rule) = match rule.strip_suffix('/') {
            Some(rest) => (true, rest),
            None => (false, rule),
        };
        let whole_path = rule.contains('/');
        self.patterns.push(Pattern {
            glob: rule.trim_start_matches('/').to_string(),
            negate,
            dir_only,
            whole_path,
        });
        Ok(())
    }

    /// Whether Helm skips `path` (relative to the chart, `/`-separated). Evaluated in order like
    /// Helm: the first matching rule ignores; a negated rule that does not match ignores too.
    pub fn ignores(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." {
            return false;
        }
        for p in &self.patterns {
            let subject = if p.whole_path {
                path
            } else {
                path.rsplit('/').next().unwrap_or(path)
            };
            let matched = glob_match(&p.glob, subject).unwrap_or(false);
            if p.negate {
                if (p.dir_only && !is_dir) || !matched {
                    return true;
                }
                continue;
            }
            if p.dir_only && !is_dir {
                continue;
            }
            if matched {
                return true;
            }
        }
        false
    }
}

/// Go's `filepath.Match` on `/`-separated names: `*` (no `/`), `?`, `[...]` classes with `^`
/// and ranges, `\` escapes. `None` for a malformed pattern.
pub fn glob_match(pattern: &str, name: &str) -> Option<bool> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> Option<bool> {
    match p.first() {
        None => Some(n.is_empty()),
        Some('*') => {
            let rest = &p[1..];
            let mut result = match_from(rest, n)?;
            let mut i = 0;
            while !result && i < n.len() && n[i] != '/' {
                i += 1;
                result = match_from(rest, &n[i..])?;
            }
            Some(result)
        }
        Some('?') => match n.first() {
            Some(c) if *c != '/' => match_from(&p[1..], &n[1..]),
            _ => Some(false).filter(|_| valid(&p[1..])),
        },
        Some('[') => {
            let (matched, used) = class(&p[1..], n.first().copied())?;
            if matched && n.first().is_some_and(|c| *c != '/') {
                match_from(&p[1 + used..], &n[1..])
            } else {
                Some(false).filter(|_| valid(&p[1 + used..]))
            }
        }
        Some('\\') => {
            let c = *p.get(1)?;
            if n.first() == Some(&c) {
                match_from(&p[2..], &n[1..])
            } else {
                Some(false).filter(|_| valid(&p[2..]))
            }
        }
        Some(c) => {
            if n.first() == Some(c) {
                match_from(&p[1..], &n[1..])
            } else {
                Some(false).filter(|_| valid(&p[1..]))
            }
        }
    }
}

/// Whether the rest of a pattern is well-formed (Go reports bad patterns even after a mismatch).
fn valid(p: &[char]) -> bool {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '[' => match class(&p[i + 1..], None) {
                Some((_, used)) => i += used + 1,
                None => return false,
            },
            '\\' if i + 1 >= p.len() => return false,
            '\\' => i += 2,
            _ => i += 1,
        }
    }
    true
}

/// A character class after its `[`: whether `c` is in it, and how many pattern chars it used
/// (including the closing `]`). `None` when malformed.
fn class(p: &[char], c: Option<char>) -> Option<(bool, usize)> {
    let mut i = 0;
    let negated = p.first() == Some(&'^');
    if negated {
        i += 1;
    }
    let mut found = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        let (lo, step) = escaped(p, i)?;
        i += step;
        let mut hi = lo;
        if p.get(i) == Some(&'-') && p.get(i + 1) != Some(&']') {
            let (h, step) = escaped(p, i + 1)?;
            hi = h;
            i += 1 + step;
        }
        if c.is_some_and(|c| lo <= c && c <= hi) {
            found = true;
        }
    }
    Some((found != negated, i))
}

fn escaped(p: &[char], i: usize) -> Option<(char, usize)> {
    match *p.get(i)? {
        '\\' => Some((*p.get(i + 1)?, 2)),
        '-' | ']' if i == 0 => None,
        c => Some((c, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_go_filepath_match() {
        assert_eq!(glob_match("*.md", "README.md"), Some(true));
        assert_eq!(glob_match("*.md", "docs/README.md"), Some(false));
        assert_eq!(glob_match("a?c", "abc"), Some(true));
        assert_eq!(glob_match("[a-c]x", "bx"), Some(true));
        assert_eq!(glob_match("[^a-c]x", "bx"), Some(false));
        assert_eq!(glob_match("\\*", "*"), Some(true));
        assert_eq!(glob_match("[", "abc"), None);
        assert_eq!(
            glob_match("templates/*.yaml", "templates/cm.yaml"),
            Some(true)
        );
    }

    #[test]
    fn common_helmignore_patterns() {
        let rules =
            HelmIgnore::parse("# editors\n*.swp\n.git/\n/secret.txt\ndocs/*.md\nbuild/\n").unwrap();
        assert!(rules.ignores("templates/x.swp", false));
        assert!(rules.ignores(".git", true));
        assert!(
            !rules.ignores(".git", false),
            "a trailing slash matches directories only"
        );
        assert!(rules.ignores("secret.txt", false));
        assert!(
            !rules.ignores("files/secret.txt", false),
            "a leading slash anchors at the root"
        );
        assert!(rules.ignores("docs/a.md", false));
        assert!(!rules.ignores("other/a.md", false));
        assert!(rules.ignores("build", true));
        assert!(!rules.ignores("templates/cm.yaml", false));
        assert!(!rules.ignores("values.yaml", false));
    }

    #[test]
    fn dot_files_in_templates_are_ignored_by_default() {
        let rules = HelmIgnore::parse("").unwrap();
        assert!(rules.ignores("templates/.hidden.yaml", false));
        assert!(!rules.ignores("templates/cm.yaml", false));
        assert!(!rules.ignores(".helmignore", false));
    }

    #[test]
    fn double_star_and_bad_patterns_are_refused_like_helm() {
        assert!(matches!(
            HelmIgnore::parse("ok\n**/x\n"),
            Err(HelmIgnoreError::DoubleStar { line: 2 })
        ));
        assert!(matches!(
            HelmIgnore::parse("[\n"),
            Err(HelmIgnoreError::BadPattern { line: 1, .. })
        ));
    }
}
