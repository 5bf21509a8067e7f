//! Conversion chains: which hook's rule converts objects of one version towards the version the API server asked for, over the shortest chain of rules of every enabled hook.

use std::collections::{BTreeSet, VecDeque};

use crate::hook_config::ConversionRule;

/// Whether two versions name the same thing: equal, or one has no group (`v1`) and equals the
/// version part of the other (`stable.example.com/v1`).
pub fn versions_match(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.split_once('/'), b.split_once('/')) {
        (None, Some((_, version))) => a == version,
        (Some((_, version)), None) => b == version,
        _ => false,
    }
}

/// The version objects of `current` have after `rule`: its `toVersion`; a `toVersion` without a
/// group takes the group of `desired` when it is that version, else the group of `current`.
fn after(rule: &ConversionRule, current: &str, desired: &str) -> String {
    let to = rule.to_version.as_str();
    if to.contains('/') {
        return to.to_string();
    }
    if versions_match(to, desired) {
        return desired.to_string();
    }
    match current.split_once('/') {
        Some((group, _)) => format!("{group}/{to}"),
        None => to.to_string(),
    }
}

/// The first step of the shortest chain of `rules` from `from` to `desired` (breadth first; among
/// chains of the same length the one using earlier rules wins). `None` when `from` is `desired`
/// or no chain leads there. Each item pairs a rule with whatever the caller needs to run it.
pub fn next_step<'a, T>(
    rules: &'a [(T, ConversionRule)],
    from: &str,
    desired: &str,
) -> Option<&'a (T, ConversionRule)> {
    if from == desired {
        return None;
    }
    let mut seen: BTreeSet<String> = BTreeSet::from([from.to_string()]);
    // Each entry: a version reached and the index of the rule that started its chain.
    let mut queue: VecDeque<(String, usize)> = VecDeque::new();
    for (i, (_, rule)) in rules.iter().enumerate() {
        if versions_match(&rule.from_version, from) {
            let next = after(rule, from, desired);
            if next == desired {
                return rules.get(i);
            }
            if seen.insert(next.clone()) {
                queue.push_back((next, i));
            }
        }
    }
    while let Some((current, first)) = queue.pop_front() {
        for (_, rule) in rules {
            if !versions_match(&rule.from_version, &current) {
                continue;
            }
            let next = after(rule, &current, desired);
            if next == desired {
                return rules.get(first);
            }
            if seen.insert(next.clone()) {
                queue.push_back((next, first));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(from: &str, to: &str) -> ConversionRule {
        ConversionRule {
            from_version: from.into(),
            to_version: to.into(),
        }
    }

    /// The example of shell-operator's BINDING_CONVERSION.md.
    fn documented() -> Vec<(&'static str, ConversionRule)> {
        vec![
            (
                "a",
                rule("unstable.crontab.io/v1beta1", "stable.example.com/v1beta1"),
            ),
            (
                "b",
                rule("stable.example.com/v1beta1", "stable.example.com/v1beta2"),
            ),
            ("c", rule("v1beta2", "v1")),
        ]
    }

    fn walk(rules: &[(&'static str, ConversionRule)], from: &str, desired: &str) -> Vec<String> {
        let mut current = from.to_string();
        let mut names = Vec::new();
        while let Some((name, rule)) = next_step(rules, &current, desired) {
            names.push(name.to_string());
            current = after(rule, &current, desired);
            assert!(names.len() <= rules.len(), "no loop");
        }
        assert_eq!(current, desired);
        names
    }

    #[test]
    fn the_documented_chain_converts_step_by_step() {
        let rules = documented();
        assert_eq!(
            walk(
                &rules,
                "unstable.crontab.io/v1beta1",
                "stable.example.com/v1beta1"
            ),
            vec!["a"]
        );
        assert_eq!(
            walk(
                &rules,
                "unstable.crontab.io/v1beta1",
                "stable.example.com/v1"
            ),
            vec!["a", "b", "c"]
        );
    }

    #[test]
    fn bare_versions_match_any_group() {
        assert!(versions_match("v1", "stable.example.com/v1"));
        assert!(versions_match("stable.example.com/v1", "v1"));
        assert!(!versions_match("a.io/v1", "b.io/v1"));
        assert!(!versions_match("v1", "v2"));
    }

    #[test]
    fn no_step_when_already_there_or_no_chain() {
        let rules = documented();
        assert!(next_step(&rules, "stable.example.com/v1", "stable.example.com/v1").is_none());
        assert!(
            next_step(
                &rules,
                "stable.example.com/v1",
                "unstable.crontab.io/v1beta1"
            )
            .is_none()
        );
    }

    #[test]
    fn the_shortest_chain_wins_and_cycles_end() {
        let rules = vec![
            ("long", rule("x/v1", "x/v2")),
            ("back", rule("x/v2", "x/v1")),
            ("to3", rule("x/v2", "x/v3")),
            ("direct", rule("x/v1", "x/v3")),
        ];
        assert_eq!(walk(&rules, "x/v1", "x/v3"), vec!["direct"]);
        assert!(next_step(&rules, "x/v1", "x/v9").is_none());
    }
}
