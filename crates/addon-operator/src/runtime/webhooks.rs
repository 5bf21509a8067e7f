//! Webhook reviews answered by hooks, beside the queues: the hook of an enabled module (or a global hook) whose binding matches is run at once with the review, within the binding's timeout, and its response file becomes the reply; a failure or garbage becomes a denial (a failed conversion) with a clear message; an admission hook past its timeout gets an HTTP 500, so the API server applies the webhook's `failurePolicy`.

use std::sync::Arc;
use std::time::Duration;

use addon_core::binding_context::{BindingContext, ContextBuilder, ContextDocument, render};
use addon_core::hook_config::{AdmissionBinding, ConversionRule, safe_url_segment};
use addon_core::lifecycle::HookDef;
use addon_core::names::ModuleName;
use addon_core::values::store::HookValues;
use addon_core::webhook::{
    AdmissionRequest, AdmissionResponse, ConversionRequest, ConversionResponse,
    admission_path_webhook, conversion_path_crd, next_step,
};
use futures::future::BoxFuture;
use serde_json::Value;

use super::Shared;
use super::edges::HookRequest;
use super::state::State;
use crate::runtime::edges::{Answerer, Reply};

/// How long a whole conversion may take (the API server gives a conversion webhook 30 s).
pub const CONVERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Which webhooks the tree's hooks declare, enabled or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebhookUse {
    pub admission: bool,
    pub conversion: bool,
}

/// Whether any hook (global, or of any module) has admission or conversion bindings.
pub fn webhook_use(st: &State) -> WebhookUse {
    let hooks = st
        .global_hooks
        .iter()
        .chain(st.modules.values().flat_map(|m| m.hooks.iter()));
    let mut out = WebhookUse::default();
    for def in hooks {
        out.admission |= def.config.admission_bindings().next().is_some();
        out.conversion |= !def.config.conversions.is_empty();
    }
    out
}

/// Why a hook gave no usable answer; the message goes back to the API server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub message: String,
    /// The hook did not answer in time (not a failure of the hook's own making).
    pub timed_out: bool,
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Self {
            message,
            timed_out: false,
        }
    }
}

/// A hook with what a run needs, taken under the state lock.
struct Target {
    module: Option<ModuleName>,
    def: HookDef,
    values: HookValues,
    builder_snapshots: addon_core::binding_context::Snapshots,
}

/// Global hooks, then the hooks of enabled modules in order.
pub(super) fn enabled_hooks(st: &State) -> Vec<(Option<ModuleName>, HookDef)> {
    let global = st.global_hooks.iter().map(|d| (None, d.clone()));
    let modules = st
        .enabled
        .iter()
        .filter_map(|m| st.module(m).map(|s| (m, s)));
    global
        .chain(modules.flat_map(|(m, s)| s.hooks.iter().map(|d| (Some(m.clone()), d.clone()))))
        .collect()
}

fn target(st: &State, module: Option<ModuleName>, def: HookDef) -> Option<Target> {
    let values = match &module {
        None => st.store.global_hook_values(),
        Some(m) => st.store.module_hook_values(m, &st.enabled).ok()?,
    };
    // every kubernetes binding of the hook: a webhook context attaches the snapshots its
    // binding names (includeSnapshotsFrom, its group), all among these
    let names = def
        .config
        .kubernetes
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    let builder_snapshots = st.snapshots(module.as_ref(), def.name(), &names);
    Some(Target {
        module,
        def,
        values,
        builder_snapshots,
    })
}

/// Runs `target` with one context and returns its response file, or why there is none.
async fn run_webhook_hook(
    shared: &Shared,
    target: &Target,
    context: BindingContext,
    timeout: Duration,
) -> Result<String, Refusal> {
    let hook = target.def.name().clone();
    let binding = context.binding.clone();
    let context_json = render(&[context]);
    let request = HookRequest {
        module: target.module.as_ref(),
        hook: &target.def.file,
        binding: &binding,
        binding_context: ContextDocument::Json(&context_json),
        values: &target.values,
        webhook_response: true,
    };
    match tokio::time::timeout(timeout, shared.edges.hooks.run_hook(request)).await {
        Err(_) => Err(Refusal {
            message: format!("hook '{hook}' did not answer within {}s", timeout.as_secs()),
            timed_out: true,
        }),
        Ok(Err(failure)) => Err(Refusal::from(format!(
            "hook '{hook}' failed: {}",
            failure.message
        ))),
        Ok(Ok(success)) => Ok(success.outputs.webhook_response),
    }
}

/// Answers AdmissionReviews posted to `/hooks/<webhook>`.
pub struct AdmissionAnswers {
    pub(super) shared: Arc<Shared>,
}

impl Answerer for AdmissionAnswers {
    fn answer(&self, path: String, review: Value) -> BoxFuture<'static, Reply> {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let started = tokio::time::Instant::now();
            let reply = answer_admission(&shared, &path, review).await;
            count_request(&shared, "admission", &reply, started.elapsed());
            reply
        })
    }
}

/// `webhook_requests_total` and `webhook_request_seconds` of one answered review: `allowed`
/// (admission allowed, conversion succeeded), `denied` (refused, or a failed conversion), or
/// `failed` (no review in the answer: a bad request, or no answer in time).
fn count_request(shared: &Shared, kind: &str, reply: &Reply, took: Duration) {
    let result = match reply {
        Reply::Review(review) => {
            let response = &review["response"];
            let allowed = response["allowed"].as_bool() == Some(true)
                || response["result"]["status"].as_str() == Some("Success");
            if allowed { "allowed" } else { "denied" }
        }
        Reply::BadRequest(_) | Reply::Unavailable(_) => "failed",
    };
    shared.metrics.webhook_request(kind, result, took);
}

async fn answer_admission(shared: &Shared, path: &str, review: Value) -> Reply {
    let request = match AdmissionRequest::parse(&review) {
        Ok(r) => r,
        Err(e) => return Reply::BadRequest(e.to_string()),
    };
    let Some(segment) = admission_path_webhook(path) else {
        return errored(&request, format!("no webhook is served at '{path}'"));
    };
    let found = {
        let st = shared.lock();
        enabled_hooks(&st).into_iter().find_map(|(module, def)| {
            let binding = def
                .config
                .admission_bindings()
                .find(|b| safe_url_segment(&b.name) == segment)
                .cloned()?;
            Some((binding, target(&st, module, def)?))
        })
    };
    let Some((binding, target)) = found else {
        return errored(
            &request,
            format!("no enabled hook answers webhook '{segment}' (its module may be disabled)"),
        );
    };
    let response = match run_admission(shared, &binding, &target, review).await {
        Ok(response) => response,
        Err(late) => return Reply::Unavailable(late.message),
    };
    if !response.allowed {
        tracing::info!(webhook = %binding.name, hook = %target.def.name(), uid = %request.uid,
            operation = %request.operation, kind = %request.kind, namespace = %request.namespace,
            name = %request.name, message = %response.message, "admission request denied");
    }
    Reply::Review(response.to_review(&request, binding.kind))
}

async fn run_admission(
    shared: &Shared,
    binding: &AdmissionBinding,
    target: &Target,
    review: Value,
) -> Result<AdmissionResponse, Refusal> {
    let builder = ContextBuilder::new(&target.def.config, &target.builder_snapshots);
    let context = builder.admission(binding, Arc::new(review));
    let timeout = Duration::from_secs(u64::from(binding.timeout_seconds));
    match run_webhook_hook(shared, target, context, timeout).await {
        Err(refusal) if refusal.timed_out => {
            tracing::warn!(webhook = %binding.name, "{refusal}; answered 500, the failure policy applies");
            Err(refusal)
        }
        Err(refusal) => {
            tracing::warn!(webhook = %binding.name, "{refusal}");
            Ok(AdmissionResponse::deny(refusal.message))
        }
        Ok(text) => Ok(
            AdmissionResponse::parse(text.as_bytes()).unwrap_or_else(|e| {
                let message = format!("hook '{}': {e}", target.def.name());
                tracing::warn!(webhook = %binding.name, "{message}");
                AdmissionResponse::deny(message)
            }),
        ),
    }
}

/// A reply that is no answer of a hook (code 500, as shell-operator's `errored`): the API server
/// sees a refused request.
fn errored(request: &AdmissionRequest, message: String) -> Reply {
    tracing::warn!(uid = %request.uid, "{message}");
    let mut review = AdmissionResponse::deny(message.clone())
        .to_review(request, addon_core::hook_config::AdmissionKind::Validating);
    review["response"]["status"] = serde_json::json!({"code": 500, "message": message});
    Reply::Review(review)
}

/// Answers ConversionReviews posted to `/<crdName>`.
pub struct ConversionAnswers {
    pub(super) shared: Arc<Shared>,
}

impl Answerer for ConversionAnswers {
    fn answer(&self, path: String, review: Value) -> BoxFuture<'static, Reply> {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let started = tokio::time::Instant::now();
            let reply = answer_conversion(&shared, &path, review).await;
            count_request(&shared, "conversion", &reply, started.elapsed());
            reply
        })
    }
}

/// One conversion rule with the hook and binding that give it.
struct Step {
    target: Arc<Target>,
    binding: usize,
}

async fn answer_conversion(shared: &Shared, path: &str, review: Value) -> Reply {
    let request = match ConversionRequest::parse(&review) {
        Ok(r) => r,
        Err(e) => return Reply::BadRequest(e.to_string()),
    };
    let Some(crd) = conversion_path_crd(path) else {
        let message = format!("no CRD is served at '{path}'");
        return Reply::Review(request.reply(ConversionResponse::Failed(message)));
    };
    let rules = conversion_rules(shared, crd);
    let outcome = tokio::time::timeout(CONVERSION_TIMEOUT, convert(shared, &request, &rules))
        .await
        .unwrap_or_else(|_| {
            Err(Refusal::from(format!(
                "conversion of {crd} did not finish within {}s",
                CONVERSION_TIMEOUT.as_secs()
            )))
        });
    if let Err(refusal) = &outcome {
        tracing::warn!(crd, uid = %request.uid, "{refusal}");
    }
    let outcome = outcome.map_or_else(
        |r| ConversionResponse::Failed(r.message),
        ConversionResponse::Converted,
    );
    Reply::Review(request.reply(outcome))
}

/// Every rule of the enabled hooks' conversion bindings for `crd`, in hook order.
fn conversion_rules(shared: &Shared, crd: &str) -> Vec<(Step, ConversionRule)> {
    let st = shared.lock();
    let mut rules = Vec::new();
    for (module, def) in enabled_hooks(&st) {
        let bindings: Vec<usize> = (def.config.conversions.iter().enumerate())
            .filter(|(_, b)| b.crd_name == crd)
            .map(|(i, _)| i)
            .collect();
        if bindings.is_empty() {
            continue;
        }
        let Some(target) = target(&st, module, def).map(Arc::new) else {
            continue;
        };
        for i in bindings {
            for rule in &target.def.config.conversions[i].conversions {
                let step = Step {
                    target: Arc::clone(&target),
                    binding: i,
                };
                rules.push((step, rule.clone()));
            }
        }
    }
    rules
}

/// Converts every object to the desired version: objects of one version go together through
/// the shortest chain of rules; objects already there stay; the order is kept.
async fn convert(
    shared: &Shared,
    request: &ConversionRequest,
    rules: &[(Step, ConversionRule)],
) -> Result<Vec<Value>, Refusal> {
    let desired = request.desired_api_version.as_str();
    let version = |o: &Value| o["apiVersion"].as_str().unwrap_or_default().to_string();
    let mut out = request.objects.clone();
    let mut versions: Vec<String> = out.iter().map(version).collect();
    versions.sort();
    versions.dedup();
    for from in versions.into_iter().filter(|v| v != desired) {
        let positions: Vec<usize> = (0..out.len())
            .filter(|&i| version(&out[i]) == from)
            .collect();
        let mut objects: Vec<Value> = positions.iter().map(|&i| out[i].clone()).collect();
        let mut current = from.clone();
        let mut steps = 0;
        while current != desired {
            let Some((step, rule)) = next_step(rules, &current, desired) else {
                return Err(format!("no conversion from {current} to {desired}").into());
            };
            steps += 1;
            if steps > rules.len() {
                return Err(format!("conversion from {from} to {desired} does not end").into());
            }
            objects = convert_step(shared, request, step, rule, &objects).await?;
            current = objects
                .first()
                .map(version)
                .unwrap_or_else(|| desired.to_string());
            if !objects.iter().all(|o| version(o) == current) {
                return Err(format!(
                    "hook '{}' returned objects of several versions",
                    step.target.def.name()
                )
                .into());
            }
        }
        for (slot, object) in positions.into_iter().zip(objects) {
            out[slot] = object;
        }
    }
    Ok(out)
}

async fn convert_step(
    shared: &Shared,
    request: &ConversionRequest,
    step: &Step,
    rule: &ConversionRule,
    objects: &[Value],
) -> Result<Vec<Value>, Refusal> {
    let target = &step.target;
    let binding = &target.def.config.conversions[step.binding];
    let review = request.step_review(&rule.to_version, objects);
    let builder = ContextBuilder::new(&target.def.config, &target.builder_snapshots);
    let context = builder.conversion(binding, rule, Arc::new(review));
    let text = run_webhook_hook(shared, target, context, CONVERSION_TIMEOUT).await?;
    match ConversionResponse::parse(text.as_bytes(), objects.len(), &rule.to_version) {
        Ok(ConversionResponse::Converted(objects)) => Ok(objects),
        Ok(ConversionResponse::Failed(message)) => Err(message.into()),
        Err(e) => Err(format!("hook '{}': {e}", target.def.name()).into()),
    }
}
