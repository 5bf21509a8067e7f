//! Combining queued runs of one hook into a single run, and compacting consecutive contexts of one group.

use super::BindingContext;
use crate::hook_config::ConfigVersion;

/// The result of combining: the first `merged_tasks` tasks (the head included) run once with
/// `contexts`; the queue drops the merged tasks after the head.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    pub merged_tasks: usize,
    pub contexts: Vec<BindingContext>,
}

/// Combines the head task of a hook with the tasks of the same hook that follow it directly in
/// the queue (`tasks[0]` is the head; the caller stops the list at the first task of another hook
/// or another task type).
///
/// Rules: v0 hooks are never combined; a Synchronization task is not merged into a run of another
/// Synchronization with different `executeHookOnSynchronization` or `waitForSynchronization`
/// settings, nor a Synchronization whose hook must not run on it. Merged contexts keep queue order,
/// then consecutive contexts of one group collapse to the last of them.
pub fn combine(tasks: &[&[BindingContext]]) -> Combined {
    let Some((head, rest)) = tasks.split_first() else {
        return Combined {
            merged_tasks: 0,
            contexts: Vec::new(),
        };
    };
    let mut contexts = head.to_vec();
    let mut merged_tasks = 1;
    if is_v0(head) {
        return Combined {
            merged_tasks,
            contexts,
        };
    }
    for task in rest {
        if !can_join(head, task) {
            break;
        }
        contexts.extend(task.iter().cloned());
        merged_tasks += 1;
    }
    let contexts = if merged_tasks > 1 {
        compact_groups(contexts)
    } else {
        contexts
    };
    Combined {
        merged_tasks,
        contexts,
    }
}

/// Whether a new task's contexts may join a queued, not yet started task of the same hook right
/// away instead of waiting behind it to be combined when it starts. Only where that gives the
/// same runs: neither is a v0 hook, and the new task has no Synchronization (whether a
/// Synchronization joins depends on the head of the run, which is not known yet). A burst of
/// events then holds one task per hook run instead of one per event.
pub fn joins_queued(tail: &[BindingContext], new: &[BindingContext]) -> bool {
    !tail.is_empty()
        && !new.is_empty()
        && !is_v0(tail)
        && !is_v0(new)
        && !new.iter().any(BindingContext::is_synchronization)
}

/// Whether `next` is merged into the run of `head` when it starts: what [`combine`] decides for
/// the pair, without copying their contexts.
pub fn combines(head: &[BindingContext], next: &[BindingContext]) -> bool {
    !is_v0(head) && can_join(head, next)
}

/// Whether a task's hook has config v0. The contexts of one hook share its config version, so
/// the first context tells (a run that keeps growing is not walked again at every join or pick).
fn is_v0(task: &[BindingContext]) -> bool {
    task.first().is_some_and(|c| c.format == ConfigVersion::V0)
}

fn can_join(head: &[BindingContext], task: &[BindingContext]) -> bool {
    if task.is_empty() || is_v0(task) {
        return false;
    }
    let Some(candidate) = task.first() else {
        return false;
    };
    if candidate.is_synchronization() && !candidate.execute_hook_on_synchronization {
        return false;
    }
    match head.first() {
        Some(h) if h.is_synchronization() && candidate.is_synchronization() => {
            h.execute_hook_on_synchronization == candidate.execute_hook_on_synchronization
                && h.wait_for_synchronization == candidate.wait_for_synchronization
        }
        _ => true,
    }
}

/// Appends `more` to `contexts`, which are compact already (a queued task has one context, or
/// was compacted when others were combined into it or joined it), and leaves what
/// [`compact_groups`] of the whole list would: only the boundary and `more` itself are looked at,
/// so a run that keeps joining events stays linear. The list grows by about a quarter at a time
/// (a queued run's contexts are kept, not passed through: doubling left up to half of it empty).
pub fn append_compacted(contexts: &mut Vec<BindingContext>, more: Vec<BindingContext>) {
    let needed = contexts.len() + more.len();
    if needed > contexts.capacity() {
        contexts.reserve_exact((needed / 4).max(more.len()));
    }
    for context in more {
        push_compacted(contexts, context);
    }
}

/// Drops every grouped context that is directly followed by a context of the same group: each run
/// of consecutive same-group contexts keeps only its last element.
pub fn compact_groups(contexts: Vec<BindingContext>) -> Vec<BindingContext> {
    let mut kept = Vec::with_capacity(contexts.len());
    for context in contexts {
        push_compacted(&mut kept, context);
    }
    kept
}

/// Pushes `context`, replacing the last context when both belong to the same group.
fn push_compacted(contexts: &mut Vec<BindingContext>, context: BindingContext) {
    if contexts
        .last()
        .is_some_and(|last| same_group(last, &context))
    {
        contexts.pop();
    }
    contexts.push(context);
}

fn same_group(a: &BindingContext, b: &BindingContext) -> bool {
    matches!((&a.group, &b.group), (Some(x), Some(y)) if !x.is_empty() && x == y)
}
