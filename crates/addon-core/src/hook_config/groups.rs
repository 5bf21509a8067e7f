//! `includeSnapshotsFrom` checks and `group` resolution: a grouped binding (schedule, kubernetes, admission, conversion) gets the snapshots of every kubernetes binding in its group.

use std::collections::BTreeMap;

use super::HookConfig;
use super::reader::Problems;

/// Checks every `includeSnapshotsFrom` name (it must name exactly one kubernetes binding), then
/// appends the group's kubernetes binding names to each grouped binding (order kept, no duplicates).
pub(crate) fn resolve_snapshots(config: &mut HookConfig, p: &mut Problems) {
    let names: Vec<String> = config.kubernetes.iter().map(|k| k.name.clone()).collect();
    for (i, s) in config.schedules.iter().enumerate() {
        check_names(
            &format!("schedule[{i}]"),
            &s.include_snapshots_from,
            &names,
            p,
        );
    }
    for (i, k) in config.kubernetes.iter().enumerate() {
        check_names(
            &format!("kubernetes[{i}]"),
            &k.include_snapshots_from,
            &names,
            p,
        );
    }
    for (i, a) in config.validating.iter().enumerate() {
        let path = format!("kubernetesValidating[{i}]");
        check_names(&path, &a.include_snapshots_from, &names, p);
    }
    for (i, a) in config.mutating.iter().enumerate() {
        let path = format!("kubernetesMutating[{i}]");
        check_names(&path, &a.include_snapshots_from, &names, p);
    }
    for (i, c) in config.conversions.iter().enumerate() {
        let path = format!("kubernetesCustomResourceConversion[{i}]");
        check_names(&path, &c.include_snapshots_from, &names, p);
    }
    let mut by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for k in &config.kubernetes {
        if let Some(group) = &k.group {
            by_group
                .entry(group.clone())
                .or_default()
                .push(k.name.clone());
        }
    }
    let merge = |group: &Option<String>, own: &mut Vec<String>| {
        let Some(members) = group.as_ref().and_then(|g| by_group.get(g)) else {
            return;
        };
        for name in members {
            if !own.contains(name) {
                own.push(name.clone());
            }
        }
    };
    for s in &mut config.schedules {
        merge(&s.group, &mut s.include_snapshots_from);
    }
    for k in &mut config.kubernetes {
        merge(&k.group, &mut k.include_snapshots_from);
    }
    for a in config.validating.iter_mut().chain(&mut config.mutating) {
        merge(&a.group, &mut a.include_snapshots_from);
    }
    for c in &mut config.conversions {
        merge(&c.group, &mut c.include_snapshots_from);
    }
}

fn check_names(binding_path: &str, requested: &[String], names: &[String], p: &mut Problems) {
    let path = format!("{binding_path}.includeSnapshotsFrom");
    for name in requested {
        match names.iter().filter(|n| *n == name).count() {
            1 => {}
            0 => p.push(
                path.clone(),
                format!("includeSnapshotsFrom is invalid: '{name}' binding name not found"),
            ),
            n => p.push(
                path.clone(),
                format!("includeSnapshotsFrom is invalid: there are {n} '{name}' binding names"),
            ),
        }
    }
}
