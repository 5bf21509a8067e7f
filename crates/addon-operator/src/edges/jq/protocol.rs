//! The jq sandbox's wire format (one JSON request line in, one reply line out) and the child's serving loop.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use addon_core::jq::{JqError, JqFilter, JqLimits, json_size};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Evaluate `filter` on every input.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub filter: String,
    pub inputs: Vec<Value>,
    pub limits: JqLimits,
    /// Inputs after the replies reach this many bytes of JSON fail with a limit error.
    pub max_reply_bytes: usize,
    /// CPU seconds this request may use; past them the kernel ends the process (`SIGXCPU`).
    pub cpu_seconds: u64,
}

/// A [`Request`] as the operator writes it: the inputs borrowed (an event's object is shared by
/// every binding it reaches, and is not copied to be sent).
#[derive(Debug, Serialize)]
#[serde(bound = "V: std::borrow::Borrow<Value>")]
pub struct RequestRef<'a, V> {
    pub filter: &'a str,
    pub inputs: Inputs<'a, V>,
    pub limits: JqLimits,
    pub max_reply_bytes: usize,
    pub cpu_seconds: u64,
}

/// Inputs written as a JSON array of the values they borrow.
#[derive(Debug)]
pub struct Inputs<'a, V>(pub &'a [V]);

impl<V: std::borrow::Borrow<Value>> Serialize for Inputs<'_, V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(std::borrow::Borrow::borrow))
    }
}

/// One result per input, in order.
#[derive(Debug, Serialize, Deserialize)]
pub struct Reply {
    pub results: Vec<Outcome>,
}

/// The result of one input.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Ok(Value),
    Error { category: String, message: String },
}

impl Outcome {
    fn of(result: Result<Value, JqError>) -> Self {
        match result {
            Ok(value) => Self::Ok(value),
            Err(e) => Self::Error {
                category: e.category().to_string(),
                message: e.message().to_string(),
            },
        }
    }

    /// Back to a result, naming `filter` in the error.
    pub fn into_result(self, filter: &str) -> Result<Value, JqError> {
        match self {
            Self::Ok(value) => Ok(value),
            Self::Error { category, message } if category == "jq_limit" => {
                Err(JqError::limit(filter, message))
            }
            Self::Error { message, .. } => Err(JqError::apply_failed(filter, message)),
        }
    }
}

/// Compiled filters kept by the child, by text; emptied when it holds this many.
const CACHED_FILTERS: usize = 256;

/// Answers requests from `input` until it ends; `deadline` is called with each request's CPU
/// seconds before it is evaluated. A filter that overflows the stack or the memory limit aborts
/// this process; the operator sees the reply missing and starts a new one.
pub fn serve(
    input: impl BufRead,
    mut output: impl Write,
    mut deadline: impl FnMut(u64),
) -> std::io::Result<()> {
    let mut cache: HashMap<String, JqFilter> = HashMap::new();
    for line in input.lines() {
        let line = line?;
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(request) => {
                deadline(request.cpu_seconds);
                evaluate(&request, &mut cache)
            }
            Err(e) => Reply {
                results: vec![Outcome::Error {
                    category: "jq_apply".to_string(),
                    message: format!("bad sandbox request: {e}"),
                }],
            },
        };
        serde_json::to_writer(&mut output, &reply)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
    Ok(())
}

fn evaluate(request: &Request, cache: &mut HashMap<String, JqFilter>) -> Reply {
    let filter = match compiled(&request.filter, cache) {
        Ok(filter) => filter,
        Err(e) => {
            let results = request.inputs.iter().map(|_| Outcome::of(Err(e.clone())));
            return Reply {
                results: results.collect(),
            };
        }
    };
    let mut bytes = 0usize;
    let results = request.inputs.iter().map(|input| {
        if bytes > request.max_reply_bytes {
            let message = format!(
                "the results of one batch exceed {} bytes",
                request.max_reply_bytes
            );
            return Outcome::of(Err(JqError::limit(&request.filter, message)));
        }
        let result = filter.apply_bounded(input, &request.limits);
        if let Ok(value) = &result {
            bytes = bytes.saturating_add(json_size(value));
        }
        Outcome::of(result)
    });
    Reply {
        results: results.collect(),
    }
}

fn compiled(source: &str, cache: &mut HashMap<String, JqFilter>) -> Result<JqFilter, JqError> {
    if let Some(filter) = cache.get(source) {
        return Ok(filter.clone());
    }
    let filter = JqFilter::compile(source)?;
    if cache.len() >= CACHED_FILTERS {
        cache.clear();
    }
    cache.insert(source.to_string(), filter.clone());
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exchange(requests: &[Request]) -> Vec<Reply> {
        let input: String = requests
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        let mut output = Vec::new();
        let mut deadlines = Vec::new();
        serve(input.as_bytes(), &mut output, |s| deadlines.push(s)).unwrap();
        assert_eq!(deadlines, vec![3; requests.len()]);
        String::from_utf8(output)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn request(filter: &str, inputs: Vec<Value>) -> Request {
        Request {
            filter: filter.to_string(),
            inputs,
            limits: JqLimits::default(),
            max_reply_bytes: 1 << 20,
            cpu_seconds: 3,
        }
    }

    #[test]
    fn every_input_gets_its_result_in_order() {
        let replies = exchange(&[
            request(".a", vec![json!({"a": 1}), json!({"a": "x"})]),
            request(".a + 1", vec![json!({"a": 1}), json!({"a": "x"})]),
        ]);
        let results: Vec<_> = replies
            .into_iter()
            .flat_map(|r| r.results)
            .map(|o| o.into_result("f").map_err(|e| e.category()))
            .collect();
        assert_eq!(
            results,
            vec![Ok(json!(1)), Ok(json!("x")), Ok(json!(2)), Err("jq_apply")]
        );
    }

    #[test]
    fn endless_outputs_are_a_limit_error_and_the_next_request_is_served() {
        let replies = exchange(&[
            request("repeat(1)", vec![json!(null)]),
            request(".", vec![json!(1)]),
        ]);
        let mut results = replies.into_iter().flat_map(|r| r.results);
        let err = results
            .next()
            .unwrap()
            .into_result("repeat(1)")
            .unwrap_err();
        assert_eq!(err.category(), "jq_limit");
        assert_eq!(results.next().unwrap().into_result(".").unwrap(), json!(1));
    }

    #[test]
    fn a_batch_stops_at_the_reply_size() {
        let mut req = request(".", vec![json!("0123456789"); 10]);
        req.max_reply_bytes = 30;
        let results = exchange(&[req]).remove(0).results;
        let failed = results
            .into_iter()
            .filter(|o| matches!(o, Outcome::Error { .. }))
            .count();
        assert_eq!(
            failed, 7,
            "after 3 results of 12 bytes the batch is over 30 bytes"
        );
    }

    #[test]
    fn a_bad_request_line_gets_an_error_reply() {
        let mut output = Vec::new();
        serve("not json\n".as_bytes(), &mut output, |_| {}).unwrap();
        assert!(
            String::from_utf8(output)
                .unwrap()
                .contains("bad sandbox request")
        );
    }
}
