//! Watch streams: initial events, live events filtered per watcher, bookmarks, timeouts.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::app::App;
use crate::events::{Event, EventType};
use crate::meta;
use crate::request::{Params, ResourceRequest, selectors, stamp};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{WatchFrom, WatchStart};
use crate::table;

/// Server-side cap of a watch when the client gives no `timeoutSeconds`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// What one watcher wants to see.
struct Filter {
    req: ResourceRequest,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// The event as this watcher sees it (label changes turn into ADDED/DELETED), or `None`.
    fn view(&self, event: &Event) -> Option<EventType> {
        if event.key != self.req.info.key() {
            return None;
        }
        if let Some(ns) = &self.req.namespace
            && meta::namespace(&event.object) != Some(ns.as_str())
        {
            return None;
        }
        let now = self.matches(&event.object);
        match (event.kind, event.previous.as_ref().map(|p| self.matches(p))) {
            (EventType::Modified, Some(false)) if now => Some(EventType::Added),
            (EventType::Modified, Some(true)) if !now => Some(EventType::Deleted),
            (kind, _) if now => Some(kind),
            _ => None,
        }
    }

    fn line(&self, kind: &str, object: Value) -> Bytes {
        let mut bytes =
            serde_json::to_vec(&json!({ "type": kind, "object": object })).unwrap_or_default();
        bytes.push(b'\n');
        Bytes::from(bytes)
    }

    fn event_line(&self, event: &Event) -> Option<Bytes> {
        let kind = self.view(event)?;
        let object = stamp(&self.req, event.object.clone());
        let object = match self.req.view {
            table::View::Table(include) => {
                let rv = json!({ "resourceVersion": event.rv.to_string() });
                table::table(&self.req.info, &[object], rv, include)
            }
            table::View::Metadata => table::partial(&object),
            table::View::Object => object,
        };
        Some(self.line(kind.as_str(), object))
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut metadata = json!({ "resourceVersion": rv.to_string() });
        if initial_end {
            metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let (kind, api_version) = match self.req.view {
            table::View::Metadata => (
                "PartialObjectMetadata".to_string(),
                "meta.k8s.io/v1".to_string(),
            ),
            _ => (
                self.req.info.kind.clone(),
                self.req.info.api_version(&self.req.version),
            ),
        };
        let object = json!({ "kind": kind, "apiVersion": api_version, "metadata": metadata });
        self.line("BOOKMARK", object)
    }
}

/// Starts a watch and answers with its event stream.
pub fn serve(app: &Arc<App>, req: ResourceRequest, params: &Params) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(&req.info, params)?;
    let flag = |k: &str| params.get(k).is_some_and(|v| v == "true" || v == "1");
    let send_initial = flag("sendInitialEvents") && app.faults.streaming_list()?;
    let bookmarks = flag("allowWatchBookmarks");
    let timeout = params
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|t| *t > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    let from = match params.get("resourceVersion").map(String::as_str) {
        _ if send_initial => WatchFrom::Now,
        None | Some("" | "0") => WatchFrom::Now,
        Some(rv) => WatchFrom::After(
            rv.parse()
                .map_err(|_| ApiError::BadRequest(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    let filter = Filter {
        req,
        labels,
        fields,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let conversion = crate::conversion::for_request(app, &filter.req).map(|c| (Arc::clone(app), c));
    match app.store.watch(&filter.req.info.key(), from) {
        Ok(start) => {
            let task = Pump {
                conversion,
                _open: app.faults.open_watch(filter.req.info.key()),
                tx,
                filter,
                send_initial,
                bookmarks,
                timeout,
                interval: app.bookmark_interval,
                drops: app.faults.drop_signal(),
                shutdown: app.shutdown.clone(),
            };
            tokio::spawn(task.run(start));
        }
        Err(e @ ApiError::Expired { .. }) => {
            let line = filter.line("ERROR", e.to_status());
            tokio::spawn(async move { tx.send(line).await });
        }
        Err(e) => return Err(e),
    }
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(bytes), rx))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response())
}

/// The task feeding one watch connection.
struct Pump {
    /// Keeps this watch on the emulator's count of open watches while the pump runs.
    _open: crate::faults::OpenWatch,
    tx: mpsc::Sender<Bytes>,
    filter: Filter,
    /// Objects stored in another version than the one watched go through the CRD's webhook.
    conversion: Option<(Arc<App>, crate::conversion::Conversion)>,
    send_initial: bool,
    bookmarks: bool,
    timeout: Duration,
    interval: Duration,
    drops: tokio::sync::watch::Receiver<u64>,
    shutdown: tokio::sync::watch::Receiver<bool>,
}

impl Pump {
    /// The event's line for this watcher (`Some(None)`: not for it); `None` ends the watch after
    /// sending the conversion's failure as an `ERROR` event.
    async fn line_of(&self, event: &Event) -> Option<Option<Bytes>> {
        let Some((app, conversion)) = &self.conversion else {
            return Some(self.filter.event_line(event));
        };
        if self.filter.view(event).is_none() {
            return Some(None);
        }
        match conversion.one_to_requested(app, event.object.clone()).await {
            Ok(object) => {
                let mut converted = event.clone();
                converted.object = object;
                Some(self.filter.event_line(&converted))
            }
            Err(e) => {
                let _ = self.tx.send(self.filter.line("ERROR", e.to_status())).await;
                None
            }
        }
    }

    async fn run(mut self, start: WatchStart) {
        let WatchStart {
            initial,
            mut live,
            rv,
        } = start;
        let filter = &self.filter;
        let wanted = |o: &Value| {
            (filter.req.namespace.as_deref()).is_none_or(|ns| meta::namespace(o) == Some(ns))
                && filter.matches(o)
        };
        for event in initial.events(wanted) {
            let Some(line) = self.line_of(&event).await else {
                return;
            };
            if let Some(line) = line
                && self.tx.send(line).await.is_err()
            {
                return;
            }
        }
        if self.send_initial && self.tx.send(self.filter.bookmark(rv, true)).await.is_err() {
            return;
        }
        let mut last_rv = rv;
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let mut ticker =
            tokio::time::interval_at(tokio::time::Instant::now() + self.interval, self.interval);
        loop {
            let line = tokio::select! {
                _ = &mut deadline => return,
                _ = self.drops.changed() => return,
                _ = self.shutdown.changed() => return,
                _ = self.tx.closed() => return,
                _ = ticker.tick(), if self.bookmarks => Some(self.filter.bookmark(last_rv, false)),
                received = live.recv() => match received {
                    Ok(event) if event.rv > last_rv => {
                        last_rv = event.rv;
                        match self.line_of(&event).await {
                            Some(line) => line,
                            None => return,
                        }
                    }
                    Ok(_) => None,
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
                },
            };
            if let Some(line) = line
                && self.tx.send(line).await.is_err()
            {
                return;
            }
        }
    }
}
