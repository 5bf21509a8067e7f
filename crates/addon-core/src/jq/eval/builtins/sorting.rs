//! Natives that order and group: `sort_by`, `group_by`, `unique_by`, `min_by`, `max_by`.

use super::super::{Flow, err};
use super::type_error;
use crate::jq::value::{Val, compare};

pub(super) fn keyed(v: &Val, k: &Val, name: &str) -> Result<Vec<(Val, Val)>, Flow> {
    let (Val::Arr(vs), Val::Arr(ks)) = (v, k) else {
        return Err(type_error(name, v));
    };
    if vs.len() != ks.len() {
        return Err(err(format!("{name} cannot be applied to: length mismatch")));
    }
    Ok(vs.iter().cloned().zip(ks.iter().cloned()).collect())
}

pub(super) fn min_max(v: &Val, k: &Val, is_min: bool, name: &str) -> Result<Val, Flow> {
    let items = keyed(v, k, name)?;
    let Some((first, rest)) = items.split_first() else {
        return Ok(Val::Null);
    };
    let mut best = first;
    for item in rest {
        if compare(&best.1, &item.1).is_gt() == is_min {
            best = item;
        }
    }
    Ok(best.0.clone())
}

pub(super) fn sorted(v: &Val, k: &Val, name: &str) -> Result<Vec<(Val, Val)>, Flow> {
    let mut items = keyed(v, k, name)?;
    items.sort_by(|a, b| compare(&a.1, &b.1));
    Ok(items)
}

pub(super) fn sort_by(v: &Val, k: &Val, name: &str) -> Result<Val, Flow> {
    Ok(Val::arr(
        sorted(v, k, name)?.into_iter().map(|(x, _)| x).collect(),
    ))
}

pub(super) fn group_by(v: &Val, k: &Val) -> Result<Val, Flow> {
    let mut groups: Vec<(Val, Vec<Val>)> = Vec::new();
    for (x, key) in sorted(v, k, "group_by")? {
        match groups.last_mut() {
            Some((last, g)) if compare(last, &key).is_eq() => g.push(x),
            _ => groups.push((key, vec![x])),
        }
    }
    Ok(Val::arr(
        groups.into_iter().map(|(_, g)| Val::arr(g)).collect(),
    ))
}

pub(super) fn unique_by(v: &Val, k: &Val, name: &str) -> Result<Val, Flow> {
    let mut out: Vec<(Val, Val)> = Vec::new();
    for (x, key) in sorted(v, k, name)? {
        if !out
            .last()
            .is_some_and(|(last, _)| compare(last, &key).is_eq())
        {
            out.push((key, x));
        }
    }
    Ok(Val::arr(out.into_iter().map(|(_, x)| x).collect()))
}
