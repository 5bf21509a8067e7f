//! Protobuf conversions of workload kinds: Deployment, Job, CronJob, PodDisruptionBudget and
//! PriorityClass.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::policy::v1 as policy;
use k8s_pb::api::scheduling::v1 as scheduling;
use serde_json::Value;

use super::core::pod_template;
use super::meta::{int_or_string, label_selector as selector, object_meta};
use super::{Obj, consumed};
use crate::status::ApiError;

/// A Deployment (status is the server's).
pub fn deployment(d: apps::Deployment) -> Result<Value, ApiError> {
    let spec = d.spec.map(deployment_spec).transpose()?;
    Ok(Obj::new()
        .val("metadata", object_meta(d.metadata))
        .val("spec", spec)
        .build())
}

fn deployment_spec(mut s: apps::DeploymentSpec) -> Result<Value, ApiError> {
    let strategy = s.strategy.take().map(|st| {
        let rolling = st.rolling_update.map(|r| {
            Obj::new()
                .val("maxUnavailable", int_or_string(r.max_unavailable))
                .val("maxSurge", int_or_string(r.max_surge))
                .build()
        });
        Obj::new()
            .text("type", st.r#type)
            .val("rollingUpdate", rolling)
            .build()
    });
    let out = Obj::new()
        .opt("replicas", s.replicas.take())
        .val("selector", selector(s.selector.take())?)
        .val("template", pod_template(s.template.take())?)
        .val("strategy", strategy)
        .count("minReadySeconds", s.min_ready_seconds.take())
        .opt("revisionHistoryLimit", s.revision_history_limit.take())
        .flag("paused", s.paused.take())
        .opt(
            "progressDeadlineSeconds",
            s.progress_deadline_seconds.take(),
        );
    consumed("DeploymentSpec", &s)?;
    Ok(out.build())
}

/// A Job (status is the server's).
pub fn job(j: batch::Job) -> Result<Value, ApiError> {
    let spec = j.spec.map(job_spec).transpose()?;
    Ok(Obj::new()
        .val("metadata", object_meta(j.metadata))
        .val("spec", spec)
        .build())
}

fn job_spec(mut s: batch::JobSpec) -> Result<Value, ApiError> {
    let out = Obj::new()
        .opt("parallelism", s.parallelism.take())
        .opt("completions", s.completions.take())
        .opt("activeDeadlineSeconds", s.active_deadline_seconds.take())
        .opt("backoffLimit", s.backoff_limit.take())
        .val("selector", selector(s.selector.take())?)
        .opt("manualSelector", s.manual_selector.take())
        .val("template", pod_template(s.template.take())?)
        .opt(
            "ttlSecondsAfterFinished",
            s.ttl_seconds_after_finished.take(),
        )
        .text("completionMode", s.completion_mode.take())
        .opt("suspend", s.suspend.take());
    consumed("JobSpec", &s)?;
    Ok(out.build())
}

/// A CronJob (status is the server's).
pub fn cron_job(c: batch::CronJob) -> Result<Value, ApiError> {
    let spec = c.spec.map(cron_job_spec).transpose()?;
    Ok(Obj::new()
        .val("metadata", object_meta(c.metadata))
        .val("spec", spec)
        .build())
}

fn cron_job_spec(mut s: batch::CronJobSpec) -> Result<Value, ApiError> {
    let template = match s.job_template.take() {
        Some(t) => {
            let spec = t.spec.map(job_spec).transpose()?;
            Some(
                Obj::new()
                    .val("metadata", object_meta(t.metadata))
                    .val("spec", spec)
                    .build(),
            )
        }
        None => None,
    };
    let out = Obj::new()
        .text("schedule", s.schedule.take())
        .text("timeZone", s.time_zone.take())
        .opt(
            "startingDeadlineSeconds",
            s.starting_deadline_seconds.take(),
        )
        .text("concurrencyPolicy", s.concurrency_policy.take())
        .opt("suspend", s.suspend.take())
        .val("jobTemplate", template)
        .opt(
            "successfulJobsHistoryLimit",
            s.successful_jobs_history_limit.take(),
        )
        .opt("failedJobsHistoryLimit", s.failed_jobs_history_limit.take());
    consumed("CronJobSpec", &s)?;
    Ok(out.build())
}

/// A PriorityClass.
pub fn priority_class(p: scheduling::PriorityClass) -> Result<Value, ApiError> {
    Ok(Obj::new()
        .val("metadata", object_meta(p.metadata))
        .opt("value", p.value)
        .flag("globalDefault", p.global_default)
        .text("description", p.description)
        .opt("preemptionPolicy", p.preemption_policy)
        .build())
}

/// A PodDisruptionBudget (status is the server's).
pub fn pod_disruption_budget(p: policy::PodDisruptionBudget) -> Result<Value, ApiError> {
    let spec = match p.spec {
        Some(s) => Some(
            Obj::new()
                .val("minAvailable", int_or_string(s.min_available))
                .val("maxUnavailable", int_or_string(s.max_unavailable))
                .val("selector", selector(s.selector)?)
                .text(
                    "unhealthyPodEvictionPolicy",
                    s.unhealthy_pod_eviction_policy,
                )
                .build(),
        ),
        None => None,
    };
    Ok(Obj::new()
        .val("metadata", object_meta(p.metadata))
        .val("spec", spec)
        .build())
}
