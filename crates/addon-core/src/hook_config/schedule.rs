//! `schedule` bindings: parsing of v1 and v0 items into [`ScheduleBinding`].

use serde::Serialize;
use serde_json::Value;

use super::ConfigVersion;
use super::crontab::Crontab;
use super::reader::{Obj, Problems, index};
use crate::names::QueueName;

/// The default binding name of schedule bindings.
pub const DEFAULT_SCHEDULE_NAME: &str = "schedule";

/// One `schedule` item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleBinding {
    /// Binding name (`schedule` unless set).
    pub name: String,
    pub crontab: Crontab,
    pub allow_failure: bool,
    pub queue: QueueName,
    pub group: Option<String>,
    /// Kubernetes binding names whose snapshots the context carries, after adding the group's bindings.
    pub include_snapshots_from: Vec<String>,
}

const V1_FIELDS: &[&str] = &[
    "name",
    "crontab",
    "allowFailure",
    "queue",
    "group",
    "includeSnapshotsFrom",
];

/// Reads the `schedule` array. v0 items ignore unknown keys and have no queue, group or snapshots.
pub(crate) fn read_schedules(
    items: &[Value],
    version: ConfigVersion,
    p: &mut Problems,
) -> Vec<ScheduleBinding> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let obj = Obj::new(item, index("schedule", i), p)?;
            read_schedule(&obj, version, p)
        })
        .collect()
}

fn read_schedule(
    obj: &Obj<'_>,
    version: ConfigVersion,
    p: &mut Problems,
) -> Option<ScheduleBinding> {
    let v1 = version == ConfigVersion::V1;
    if v1 {
        obj.reject_unknown(V1_FIELDS, p);
    }
    let name = obj
        .optional_string("name", p)
        .unwrap_or_else(|| DEFAULT_SCHEDULE_NAME.to_string());
    let crontab = obj
        .required("crontab", |o, k, p| o.string(k, p), p)
        .and_then(|text| match Crontab::parse(&text) {
            Ok(c) => Some(c),
            Err(e) => {
                p.push(obj.path_of("crontab"), format!("crontab is invalid: {e}"));
                None
            }
        });
    let allow_failure = obj.bool("allowFailure", p).unwrap_or(false);
    let (queue, group, include_snapshots_from) = if v1 {
        (
            read_queue(obj, p),
            obj.optional_string("group", p),
            obj.string_list("includeSnapshotsFrom", 1, p)
                .unwrap_or_default(),
        )
    } else {
        (QueueName::main(), None, Vec::new())
    };
    Some(ScheduleBinding {
        name,
        crontab: crontab?,
        allow_failure,
        queue,
        group,
        include_snapshots_from,
    })
}

/// Reads `queue` (default `main`).
pub(crate) fn read_queue(obj: &Obj<'_>, p: &mut Problems) -> QueueName {
    obj.optional_string("queue", p)
        .and_then(|q| QueueName::new(&q).ok())
        .unwrap_or_else(QueueName::main)
}
