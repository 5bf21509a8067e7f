//! Sending the corpus to one server with kube-rs's raw `Client::send`: each step made concrete
//! with the server's variables, its answer read as JSON (a watch as the array of its events).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use crate::corpus::{self, Action, Step};
use crate::normalise::select;

/// How long one request may take (watches end by their `timeoutSeconds`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a step with `until` polls.
const POLL_TIMEOUT: Duration = Duration::from_secs(60);
/// The managers of writes without `fieldManager` are named after this user agent's product.
const USER_AGENT: &str = "conformance/v1.0.0";

/// A status code and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

/// One server under comparison, with the variables its steps saved.
pub struct Server<'a> {
    pub name: &'static str,
    client: kube::Client,
    compact: Box<dyn Fn() + 'a>,
    pub vars: BTreeMap<String, String>,
}

impl<'a> Server<'a> {
    /// A client from `kubeconfig`; `compact` is this server's [`Action::Compact`].
    pub async fn connect(
        name: &'static str,
        kubeconfig: &Path,
        namespace: &str,
        compact: impl Fn() + 'a,
    ) -> Self {
        let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        let vars = BTreeMap::from([("ns".to_string(), namespace.to_string())]);
        Self {
            name,
            client: kube::Client::try_from(config).unwrap(),
            compact: Box::new(compact),
            vars,
        }
    }

    /// Runs one step: `None` for an action, else the answer (after polling for `until`).
    pub async fn run(&mut self, step: &Step) -> Option<Answer> {
        if let Some(Action::Compact) = step.action {
            (self.compact)();
            return None;
        }
        let answer = match &step.until {
            None => self.send(step).await,
            Some(until) => self.poll(step, &until.field, &until.equals).await,
        };
        for (var, field) in &step.save {
            let value = match select(&answer.body, field).first() {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            self.vars.insert(var.clone(), value);
        }
        Some(answer)
    }

    async fn poll(&self, step: &Step, field: &str, equals: &Value) -> Answer {
        let deadline = tokio::time::Instant::now() + POLL_TIMEOUT;
        loop {
            let answer = self.send(step).await;
            if select(&answer.body, field).first() == Some(equals)
                || tokio::time::Instant::now() > deadline
            {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn send(&self, step: &Step) -> Answer {
        let path = corpus::substitute(&step.path, &self.vars, true);
        let mut request = http::Request::builder()
            .method(step.method.as_str())
            .uri(&path)
            .header(http::header::USER_AGENT, USER_AGENT);
        if let Some(accept) = &step.accept {
            request = request.header(http::header::ACCEPT, accept);
        }
        let body = match &step.body {
            Some(body) => {
                let content_type = step.content_type.as_deref().unwrap_or("application/json");
                request = request.header(http::header::CONTENT_TYPE, content_type);
                serde_json::to_vec(&corpus::substitute_value(body, &self.vars)).unwrap()
            }
            None => Vec::new(),
        };
        let request = request.body(Body::from(body)).unwrap();
        let sent = tokio::time::timeout(REQUEST_TIMEOUT, async {
            let response = self.client.send(request).await?;
            let status = response.status().as_u16();
            let bytes = response.into_body().collect_bytes().await?;
            Ok::<_, kube::Error>((status, bytes))
        });
        let (status, bytes) = sent
            .await
            .unwrap_or_else(|_| panic!("{}: {} {path} timed out", self.name, step.method))
            .unwrap_or_else(|e| panic!("{}: {} {path}: {e}", self.name, step.method));
        Answer {
            status,
            body: parse_body(&bytes, is_watch(&path)),
        }
    }
}

fn is_watch(path: &str) -> bool {
    path.contains("watch=true") || path.contains("watch=1") || path.contains("/watch/")
}

/// JSON, a watch's lines as an array of events, or the text itself.
fn parse_body(bytes: &[u8], watch: bool) -> Value {
    let text = String::from_utf8_lossy(bytes);
    if watch {
        let events: Option<Vec<Value>> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).ok())
            .collect();
        if let Some(events) = events {
            return Value::Array(events);
        }
    }
    if text.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes).unwrap_or_else(|_| Value::String(text.into_owned()))
}
