//! The `settings` section: the per-hook execution rate limit (`executionMinInterval`, `executionBurst`).

use std::time::Duration;

use serde::Serialize;

use super::duration::parse_go_duration;
use super::reader::{Obj, Problems};

/// Rate limit of a hook: at most `execution_burst` runs at once, then one per
/// `execution_min_interval`. Zero interval means unlimited.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSettings {
    #[serde(serialize_with = "as_seconds", rename = "executionMinIntervalSeconds")]
    pub execution_min_interval: Duration,
    pub execution_burst: u32,
}

impl Default for HookSettings {
    fn default() -> Self {
        Self {
            execution_min_interval: Duration::ZERO,
            execution_burst: 1,
        }
    }
}

fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

pub(crate) fn read_settings(obj: &Obj<'_>, p: &mut Problems) -> HookSettings {
    obj.reject_unknown(&["executionMinInterval", "executionBurst"], p);
    let mut settings = HookSettings::default();
    if let Some(text) = obj.string("executionMinInterval", p) {
        match parse_go_duration(&text) {
            Ok(d) => settings.execution_min_interval = d,
            Err(e) => p.push(
                obj.path_of("executionMinInterval"),
                format!("executionMinInterval is invalid: {e}"),
            ),
        }
    }
    if let Some(burst) = obj.number("executionBurst", p) {
        if burst.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&burst) {
            p.push(
                obj.path_of("executionBurst"),
                format!("executionBurst is invalid: must be a non-negative integer, got {burst}"),
            );
        } else {
            settings.execution_burst = (burst as u32).max(1);
        }
    }
    settings
}
