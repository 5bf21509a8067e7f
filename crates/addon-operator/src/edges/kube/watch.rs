//! One watch in one scope, for the bindings sharing it: its selection, its first (paged) list and
//! the stream of events after it, reported to the runtime as a [`KubeEvent`] for each sharer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use addon_core::binding_context::KeptObject;
use addon_core::hook_config::{KubernetesBinding, WatchEvent};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::api::Api;
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::discovery::DiscoveryError;
use super::known::{KnownObjects, Listing, Observed};
use super::raw_object::RawObject;
use super::shared::{SharedHub, lock};

use crate::runtime::edges::{KubeEvent, Listed, MonitorKey};
use crate::runtime::metrics::Metrics;

/// A binding's watch that could not be started.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("resolve the kind")]
    Resolve(#[source] DiscoveryError),
    #[error("list namespaces matching '{selector}'")]
    ListNamespaces {
        selector: String,
        #[source]
        source: kube::Error,
    },
    #[error("list {resource} in {}", scope_name(scope))]
    List {
        resource: String,
        scope: Option<String>,
        #[source]
        source: kube::Error,
    },
}

fn scope_name(scope: &Option<String>) -> String {
    scope.as_ref().map_or_else(
        || "all namespaces".to_string(),
        |ns| format!("namespace '{ns}'"),
    )
}

impl WatchError {
    pub(super) fn is_not_found(&self) -> bool {
        matches!(self, Self::List { source: kube::Error::Api(s), .. } if s.code == 404)
    }

    pub fn category(&self) -> &'static str {
        match self {
            Self::Resolve(e) => e.category(),
            Self::ListNamespaces { .. } | Self::List { .. } => "kube_list",
        }
    }
}

/// What a binding selects inside one scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(super) struct Selection {
    labels: Option<String>,
    fields: Option<String>,
    /// `nameSelector.matchNames` with several names: filtered here (one name goes to the server
    /// as `metadata.name=<name>`).
    names: Option<BTreeSet<String>>,
}

impl Selection {
    pub(super) fn of(binding: &KubernetesBinding) -> Self {
        let mut fields: Vec<String> = binding
            .field_selector
            .iter()
            .map(|f| f.to_query())
            .filter(|q| !q.is_empty())
            .collect();
        let mut names = None;
        match binding.name_selector.as_deref() {
            Some([one]) => fields.push(format!("metadata.name={one}")),
            Some(many) if !many.is_empty() => names = Some(many.iter().cloned().collect()),
            _ => {}
        }
        Self {
            labels: binding
                .label_selector
                .as_ref()
                .map(|l| l.to_query())
                .filter(|q| !q.is_empty()),
            fields: (!fields.is_empty()).then(|| fields.join(",")),
            names,
        }
    }

    fn watcher_config(&self, streaming: bool) -> watcher::Config {
        let mut config = watcher::Config::default().page_size(PAGE as u32);
        if streaming {
            config = config.streaming_lists();
        }
        if let Some(l) = &self.labels {
            config = config.labels(l);
        }
        if let Some(f) = &self.fields {
            config = config.fields(f);
        }
        config
    }

    fn selects(&self, object: &RawObject) -> bool {
        (self.names.as_ref()).is_none_or(|names| object.name().is_some_and(|n| names.contains(n)))
    }
}

/// One watch of a monitor: the API (namespaced or not) and where it reports.
pub(super) struct Scope {
    pub(super) api: Api<RawObject>,
    pub(super) name: Option<String>,
}

impl Scope {
    pub(super) fn namespaced(client: kube::Client, namespace: &str, ar: &ApiResource) -> Self {
        Self {
            api: Api::namespaced_with(client, namespace, ar),
            name: Some(namespace.to_string()),
        }
    }
}

/// One running watch, of the bindings its hub reports to.
#[derive(Clone)]
pub(super) struct Watch {
    pub(super) hub: SharedHub,
    /// The watch in log lines: the hook and binding that started it.
    pub(super) label: String,
    pub(super) selection: Selection,
    pub(super) resource: ApiResource,
    pub(super) events: mpsc::Sender<KubeEvent>,
    pub(super) metrics: Option<Arc<Metrics>>,
    /// Whether first lists are streaming lists (shared by the watches of one client).
    pub(super) streaming_lists: Arc<AtomicBool>,
}

/// Objects per page of an initial list (`limit`), as client-go's reflector and kube-rs page. A
/// page is what a listing holds in memory at once, but kube-apiserver answers each page at a
/// cost of its own: 100,000 ConfigMaps listed 100 a page took 36.8 s, 500 a page 12.0 s
/// (docs/benchmarks.md, "100,000 objects").
pub(super) const PAGE: usize = 500;

/// How long a streaming list may go without an event before its end: then paged lists are used.
const STREAMING_PROBE: std::time::Duration = std::time::Duration::from_secs(10);

/// A watch stream of one scope.
type WatchStream = BoxStream<'static, Result<watcher::Event<RawObject>, watcher::Error>>;

/// One scope's watch whose first list is done: the stream goes on from there.
pub(super) struct Started {
    scope: Option<String>,
    stream: WatchStream,
    pub(super) known: KnownObjects,
}

impl Started {
    pub(super) fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }
}

impl Watch {
    /// Watches `scope` from scratch: every object arrives as `Added`.
    pub(super) fn spawn(self, scope: Scope) -> AbortHandle {
        let bodies = lock(&self.hub).keeps_bodies();
        lock(&self.hub).add_scope(scope.name.clone(), KnownObjects::with_bodies(bodies));
        tokio::spawn(async move {
            let (stream, _) = self.open(scope.api).await;
            self.run(scope.name, stream).await;
        })
        .abort_handle()
    }

    /// Goes on watching after [`Watch::first_list`]: what the list found joins the hub.
    pub(super) fn resume(self, started: Started) -> AbortHandle {
        let Started {
            scope,
            stream,
            known,
        } = started;
        lock(&self.hub).add_scope(scope.clone(), known);
        tokio::spawn(self.run(scope, stream)).abort_handle()
    }

    fn stream(&self, api: Api<RawObject>, streaming: bool) -> WatchStream {
        watcher(api, self.selection.watcher_config(streaming))
            .default_backoff()
            .into_stream()
            .boxed()
    }

    /// The stream of a first list, and whether it is a streaming list (the objects sent as watch
    /// events from the server's cache: no pages, no page held in memory); paged lists when the
    /// server does not serve them. A server without streaming lists (before Kubernetes 1.27, or
    /// with the `WatchList` feature off) refuses the request; one that ignores the parameters
    /// sends nothing, so the first object or the list's end must come within
    /// [`STREAMING_PROBE`]. Either turns streaming lists off for the later watches.
    async fn open(&self, api: Api<RawObject>) -> (WatchStream, bool) {
        if !self.streaming_lists.load(Ordering::Relaxed) {
            return (self.stream(api, false), false);
        }
        let mut streaming = self.stream(api.clone(), true);
        let mut first = Vec::new();
        let probe = async {
            while first.len() < 2 {
                match streaming.try_next().await {
                    Ok(Some(event)) => first.push(Ok(event)),
                    Ok(None) => break,
                    Err(error) => return Err(error.to_string()),
                }
            }
            Ok(())
        };
        let refused = match tokio::time::timeout(STREAMING_PROBE, probe).await {
            Ok(Ok(())) => return (futures::stream::iter(first).chain(streaming).boxed(), true),
            Ok(Err(error)) => error,
            Err(_) => "nothing came".to_string(),
        };
        self.streaming_lists_off(&refused);
        (self.stream(api, false), false)
    }

    fn streaming_lists_off(&self, why: &str) {
        if self.streaming_lists.swap(false, Ordering::Relaxed) {
            tracing::info!(watch = %self.label, reason = why,
                "the API server does not serve streaming lists: paged lists from now on");
        }
    }

    /// A first list that began again before its end: the server closed a streaming list (its
    /// watch timeout, 290 s, ends one that long) and the watcher started it over. The start fails
    /// and later watches list in pages, which no timeout cuts.
    fn restarted(&self, streaming: bool, scope: &Option<String>) -> WatchError {
        if streaming {
            self.streaming_lists_off("a streaming list was closed before its end");
        }
        let message = "the list began again before its end (the server closed the stream)";
        self.list_failed(scope, client_failure(message, "ListRestarted"))
    }

    fn list_failed(&self, scope: &Option<String>, source: kube::Error) -> WatchError {
        WatchError::List {
            resource: self.resource.plural.clone(),
            scope: scope.clone(),
            source,
        }
    }

    /// The next event of a first list; a streaming list that goes quiet before its end (a server
    /// that ignored `sendInitialEvents` sends the objects but never the end) fails the start and
    /// turns streaming lists off, so the start's retry lists in pages.
    async fn next_listed(
        &self,
        stream: &mut WatchStream,
        streaming: bool,
        scope: &Option<String>,
    ) -> Result<Option<watcher::Event<RawObject>>, WatchError> {
        let failed = |e| self.list_failed(scope, client_error(e));
        if !streaming {
            return stream.try_next().await.map_err(failed);
        }
        match tokio::time::timeout(STREAMING_PROBE, stream.try_next()).await {
            Ok(next) => next.map_err(failed),
            Err(_) => {
                self.streaming_lists_off("the streaming list stopped before its end");
                let message = format!(
                    "the streaming list sent nothing for {} s before its end",
                    STREAMING_PROBE.as_secs()
                );
                let source = client_failure(&message, "StreamingListStalled");
                Err(self.list_failed(scope, source))
            }
        }
    }

    /// Starts the watch of `scope` and reads its initial list (paged by the watcher), which
    /// becomes the first snapshot: sent to `pages` a page at a time when given, else returned.
    /// The first error fails the start.
    pub(super) async fn first_list(
        &self,
        scope: Scope,
        pages: Option<&mpsc::Sender<Vec<Listed>>>,
    ) -> Result<(Started, Vec<Value>), WatchError> {
        let (mut stream, streaming) = self.open(scope.api).await;
        let mut known = Listing::new(lock(&self.hub).keeps_bodies());
        let (mut objects, mut begun) = (Vec::new(), false);
        loop {
            let event = self
                .next_listed(&mut stream, streaming, &scope.name)
                .await?;
            let done = match event {
                Some(watcher::Event::InitApply(o)) => {
                    objects.extend(self.convert(o));
                    false
                }
                Some(watcher::Event::InitDone) | None => true,
                Some(watcher::Event::Init) if begun => {
                    return Err(self.restarted(streaming, &scope.name));
                }
                Some(watcher::Event::Init) => {
                    begun = true;
                    false
                }
                Some(_) => false,
            };
            if let Some(pages) = pages
                && (done || objects.len() >= PAGE)
            {
                let kept = known.extend(&objects);
                let page = std::mem::take(&mut objects)
                    .into_iter()
                    .zip(kept)
                    .map(|(object, kept)| Listed {
                        object,
                        kept,
                        stub: false,
                    })
                    .collect();
                // a closed receiver means the caller gave up on the listing
                let _ = pages.send(page).await;
            }
            if done {
                break;
            }
        }
        // without pages, the objects are returned: their bodies stay with the watch
        let _ = known.extend(&objects);
        let started = Started {
            scope: scope.name,
            stream,
            known: known.done(),
        };
        Ok((started, objects))
    }

    async fn run(self, scope: Option<String>, mut stream: WatchStream) {
        loop {
            let item = match stream.try_next().await {
                Ok(Some(item)) => item,
                Ok(None) => break,
                Err(error) => {
                    if let Some(metrics) = &self.metrics {
                        metrics.kube_watch_error(watch_error_type(&error));
                    }
                    tracing::debug!(watch = %self.label,
                        namespace = scope.as_deref().unwrap_or(""), %error,
                        "watch interrupted; it restarts by itself");
                    continue;
                }
            };
            let Some(observed) = self.observed(item) else {
                continue;
            };
            let (events, keys) = lock(&self.hub).observe(&scope, observed);
            for (event, object, kept) in events {
                if !self.report(&keys, event, object, kept).await {
                    return;
                }
            }
        }
    }

    /// Sends an event to each sharer (the object parsed once and shared); `false` when
    /// the runtime is gone. Waits while the intake is behind (see KUBE_EVENT_BACKLOG).
    async fn report(
        &self,
        keys: &[MonitorKey],
        event: WatchEvent,
        object: Value,
        kept: Option<KeptObject>,
    ) -> bool {
        let object = Arc::new(object);
        for key in keys {
            let copy = KubeEvent {
                key: key.clone(),
                event,
                object: Arc::clone(&object),
                kept: kept.clone(),
            };
            if self.events.send(copy).await.is_err() {
                return false;
            }
        }
        true
    }

    fn convert(&self, object: RawObject) -> Option<Value> {
        (self.selection.selects(&object)).then(|| object.into_json(&self.resource))
    }

    fn observed(&self, event: watcher::Event<RawObject>) -> Option<Observed> {
        let convert = |o: RawObject| self.convert(o);
        Some(match event {
            watcher::Event::Apply(o) => Observed::Apply(convert(o)?),
            watcher::Event::Delete(o) => Observed::Delete(convert(o)?),
            watcher::Event::Init => Observed::Init,
            watcher::Event::InitApply(o) => Observed::InitApply(convert(o)?),
            watcher::Event::InitDone => Observed::InitDone,
        })
    }
}

/// The client error behind a watch error (for the start's error message).
fn client_error(error: watcher::Error) -> kube::Error {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => e,
        watcher::Error::WatchError(status) => kube::Error::Api(status),
        other => client_failure(&other.to_string(), "WatchFailed"),
    }
}

/// A failure of the client's own making, as the start's error carries it.
fn client_failure(message: &str, reason: &str) -> kube::Error {
    kube::Error::Api(Box::new(kube::core::Status::failure(message, reason)))
}

/// Upstream's `error_type` of a watch error: `expired` (410: the resume version is too old),
/// `unexpected-eof` (the connection closed mid-message), else `fail`. (Upstream's `eof`, a watch
/// the server closed normally, never shows here: kube-rs resumes such watches without an error.)
fn watch_error_type(error: &watcher::Error) -> &'static str {
    let client_error = match error {
        watcher::Error::WatchError(status) if status.code == 410 => return "expired",
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => e,
        _ => return "fail",
    };
    if matches!(client_error, kube::Error::Api(s) if s.code == 410) {
        return "expired";
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(client_error);
    while let Some(cause) = source {
        let incomplete = cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message);
        let eof = cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::UnexpectedEof);
        if incomplete || eof {
            return "unexpected-eof";
        }
        source = cause.source();
    }
    "fail"
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::hook_config::{HookScope, parse};
    use addon_core::names::HookName;

    fn binding(yaml: &str) -> KubernetesBinding {
        let text = format!("configVersion: v1\nkubernetes:\n- kind: Pod\n{yaml}");
        let hook = HookName::new("h").unwrap();
        parse(&hook, HookScope::Global, &text)
            .unwrap()
            .kubernetes
            .remove(0)
    }

    #[test]
    fn watch_errors_get_upstream_error_types() {
        let status = |code| {
            let mut s = kube::core::Status::failure("gone", "Expired");
            s.code = code;
            s
        };
        let expired = watcher::Error::WatchError(Box::new(status(410)));
        assert_eq!(watch_error_type(&expired), "expired");
        let start_gone = watcher::Error::WatchStartFailed(kube::Error::Api(Box::new(status(410))));
        assert_eq!(watch_error_type(&start_gone), "expired");
        let failed = watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status(500))));
        assert_eq!(watch_error_type(&failed), "fail");
        let io = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "eof");
        let cut = watcher::Error::WatchFailed(kube::Error::ReadEvents(io));
        assert_eq!(watch_error_type(&cut), "unexpected-eof");
        assert_eq!(watch_error_type(&watcher::Error::NoResourceVersion), "fail");
    }

    #[test]
    fn one_matched_name_goes_to_the_server_as_a_field_selector() {
        let s = Selection::of(&binding(
            "  nameSelector: {matchNames: [a]}\n  fieldSelector: {matchExpressions: [{field: status.phase, operator: Equals, value: Running}]}\n",
        ));
        assert_eq!(
            s.fields.as_deref(),
            Some("status.phase=Running,metadata.name=a")
        );
        assert!(s.names.is_none() && s.labels.is_none());
    }

    #[test]
    fn several_matched_names_are_filtered_locally() {
        let s = Selection::of(&binding(
            "  nameSelector: {matchNames: [a, b]}\n  labelSelector: {matchLabels: {app: web}}\n",
        ));
        assert_eq!(s.fields, None);
        assert_eq!(s.labels.as_deref(), Some("app=web"));
        let names: Vec<&str> = s.names.iter().flatten().map(String::as_str).collect();
        assert_eq!(names, ["a", "b"]);
        let named = |n: &str| -> RawObject {
            serde_json::from_value(serde_json::json!({"metadata": {"name": n}})).unwrap()
        };
        assert!(s.selects(&named("a")) && !s.selects(&named("c")));
    }
}
