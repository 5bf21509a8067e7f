//! The kubernetes binding metrics (`kube_snapshot_objects`, `kube_jq_filter_duration_seconds`,
//! `kube_event_duration_seconds`) of one monitor, with upstream's labels.

use std::time::Duration;

use super::edges::MonitorKey;
use super::state::Monitor;
use crate::runtime::metrics::{BindingLabels, Metrics};

/// `module` (empty for global hooks), `hook`, `binding` (its name), `queue` and `kind` of a monitor.
pub(crate) struct MonitorLabels {
    module: String,
    hook: String,
    binding: String,
    queue: String,
    kind: String,
}

impl MonitorLabels {
    pub(crate) fn of(key: &MonitorKey, monitor: &Monitor) -> Self {
        let binding = monitor.cache.binding();
        Self {
            module: key
                .module
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            hook: key.hook.to_string(),
            binding: binding.name.clone(),
            queue: binding.queue.to_string(),
            kind: binding.kind.clone(),
        }
    }

    fn binding(&self) -> BindingLabels<'_> {
        BindingLabels {
            module: &self.module,
            hook: &self.hook,
            binding: &self.binding,
            queue: &self.queue,
        }
    }

    /// After the cache changed: how many objects it holds.
    pub(crate) fn snapshot(&self, metrics: &Metrics, objects: usize) {
        metrics.kube_snapshot_objects(&self.binding(), &self.kind, objects);
    }

    /// `filtered` objects went through the binding's jqFilter in `elapsed`; a listing is
    /// observed once per object with the listing's average.
    pub(crate) fn jq_filter(&self, metrics: &Metrics, filtered: usize, elapsed: Duration) {
        let Ok(count) = u32::try_from(filtered) else {
            return;
        };
        if count == 0 {
            return;
        }
        metrics.kube_jq_filter_each(&self.binding(), &self.kind, elapsed / count, count);
    }

    /// One watch event handled (cache update and the hook run it queued) in `elapsed`.
    pub(crate) fn event(&self, metrics: &Metrics, elapsed: Duration) {
        metrics.kube_event(&self.binding(), &self.kind, elapsed);
    }
}
