//! The engine under test, through its public API: `JqFilter::compile` once, then `apply` per object.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use addon_core::jq::JqFilter;
use serde_json::Value;

use super::corpus::Outcome;

/// The longest one filter may take over all objects; past it every object counts as an error
/// (the evaluation thread is left behind: this engine runs in-process here, unlike the sandbox).
const DEADLINE: Duration = Duration::from_secs(20);

pub fn outcomes(filter: &str, objects: &[Value]) -> Vec<Outcome> {
    let (tx, rx) = mpsc::channel();
    let source = filter.to_string();
    let inputs = objects.to_vec();
    thread::spawn(move || {
        let _ = tx.send(evaluate(&source, &inputs));
    });
    rx.recv_timeout(DEADLINE).unwrap_or_else(|_| {
        objects
            .iter()
            .map(|_| Outcome::Error(format!("no answer within {DEADLINE:?}")))
            .collect()
    })
}

fn evaluate(source: &str, inputs: &[Value]) -> Vec<Outcome> {
    match JqFilter::compile(source) {
        Err(e) => inputs
            .iter()
            .map(|_| Outcome::Error(e.to_string()))
            .collect(),
        Ok(filter) => inputs
            .iter()
            .map(|input| match filter.apply(input) {
                Ok(value) => Outcome::Value(value),
                Err(e) => Outcome::Error(e.to_string()),
            })
            .collect(),
    }
}
