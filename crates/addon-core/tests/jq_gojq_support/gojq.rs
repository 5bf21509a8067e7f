//! The reference engine: Debian's `gojq` command, run to answer as shell-operator's `pkg/filter/jq/apply.go` runs the gojq library.

// apply.go gives gojq no environment (`env` and `$ENV` are `{}`: the command runs under `env -i`)
// and no inputs, collects the outputs (0: null, 1: it, n: an array), ends them at `halt`, and
// fails the whole application on any error, including `halt_error` and a result JSON cannot hold
// (NaN, infinities: its Marshal fails). Its input is not JSON text but the object's map as
// apimachinery decoded it, where an integer outside int64 is a float64; the command reads such an
// integer exactly, so each object is written for it with those integers as floats
// ([`as_the_api_decodes`]).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::corpus::{Object, Outcome};

/// The longest a gojq process may run before its answer counts as an error.
const DEADLINE: Duration = Duration::from_secs(20);

pub struct Gojq {
    path: PathBuf,
    pub version: String,
}

/// `$GOJQ`, else `gojq` on PATH. Missing: a failure under `CI`, else `None` with a loud message.
pub fn find() -> Option<Gojq> {
    let path = match std::env::var_os("GOJQ") {
        Some(path) => Some(PathBuf::from(path)).filter(|p| p.is_file()),
        None => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("gojq"))
                .find(|p| p.is_file())
        }),
    };
    let Some(path) = path else {
        assert!(
            std::env::var_os("CI").is_none(),
            "gojq (the reference jq engine of the differential test) is missing: run \
             scripts/install-tools (apt-get install gojq); CI never skips this test"
        );
        eprintln!(
            "\n!!!!!!!! SKIPPED: the jq differential test needs gojq (scripts/install-tools or \
             apt-get install gojq) !!!!!!!!\n"
        );
        return None;
    };
    let out = Command::new(&path)
        .arg("--version")
        .env_clear()
        .output()
        .unwrap_or_else(|e| panic!("run {} --version: {e}", path.display()));
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Some(Gojq { path, version })
}

/// The filter wrapped so that one line answers for each input: `["ok", [outputs]]`,
/// `["err", error]` or `["nonfinite"]`. The filter text starts the program (so its line numbers do
/// not move), a newline ends it (so a trailing comment cannot swallow the wrapper), and the wrapper
/// binds no variable and defines no function the filter could see.
fn wrapped(filter: &str) -> String {
    format!(
        "try ([{filter}\n] | if any(.[] | ..; type == \"number\" and (isinfinite or isnan)) \
         then [\"nonfinite\"] else [\"ok\", .] end) catch [\"err\", .]"
    )
}

impl Gojq {
    /// The reference outcome of `filter` on each object: one process over all objects; a filter
    /// that stops the process (`halt`, `halt_error`) or reads further inputs runs once per object.
    pub fn outcomes(&self, filter: &str, objects: &[Object]) -> Vec<Outcome> {
        self.batch(filter, objects).unwrap_or_else(|| {
            objects
                .iter()
                .map(|object| self.single(filter, &object.value))
                .collect()
        })
    }

    fn batch(&self, filter: &str, objects: &[Object]) -> Option<Vec<Outcome>> {
        let input: String = objects
            .iter()
            .map(|o| format!("{}\n", as_the_api_decodes(&o.value)))
            .collect();
        let run = self.run(&["-c", &wrapped(filter)], &input);
        if run.code != Some(0) {
            return None;
        }
        let lines: Vec<&str> = run.stdout.lines().collect();
        if lines.len() != objects.len() {
            return None;
        }
        lines.into_iter().map(parse_wrapped).collect()
    }

    /// One object, the filter alone (a leading space keeps a filter like `-1` from reading as an
    /// option): exit 0 gives the printed outputs, anything else an error.
    fn single(&self, filter: &str, object: &Value) -> Outcome {
        let object = as_the_api_decodes(object);
        let run = self.run(&["-c", &format!(" {filter}")], &format!("{object}\n"));
        if run.code != Some(0) {
            return Outcome::Error(format!("gojq exit {:?}: {}", run.code, run.stderr.trim()));
        }
        let outputs: Result<Vec<Value>, _> = run.stdout.lines().map(serde_json::from_str).collect();
        match outputs {
            Ok(outputs) => Outcome::Value(collect(outputs)),
            Err(e) => Outcome::Error(format!("unreadable gojq output: {e}")),
        }
    }

    fn run(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = Command::new(&self.path)
            .args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.path.display()));
        let mut pipe_in = child.stdin.take().unwrap();
        let input = stdin.to_string();
        let writer = thread::spawn(move || {
            let _ = pipe_in.write_all(input.as_bytes());
        });
        let stdout = drain(child.stdout.take().unwrap());
        let stderr = drain(child.stderr.take().unwrap());
        let started = Instant::now();
        let code = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code();
            }
            if started.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            thread::sleep(Duration::from_millis(2));
        };
        let _ = writer.join();
        Run {
            code,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        }
    }
}

/// The object as shell-operator hands it to gojq: apimachinery's decoding
/// (`UnmarshalCaseSensitivePreserveInts`) keeps an integer within int64 exact and makes any other
/// a float64, and apply.go copies that map as it is (shell-operator >= 1.16.5; before, it went
/// through encoding/json and every number was a float64). Written as JSON text, such a float has
/// an exponent, so the command reads it as a float too.
pub fn as_the_api_decodes(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.as_i64().is_none() => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| value.clone(), Value::Number),
        Value::Array(items) => Value::Array(items.iter().map(as_the_api_decodes).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), as_the_api_decodes(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

fn parse_wrapped(line: &str) -> Option<Outcome> {
    let value: Value = serde_json::from_str(line).ok()?;
    let Value::Array(mut parts) = value else {
        return None;
    };
    let tag = parts.first()?.as_str()?.to_string();
    match (tag.as_str(), parts.len()) {
        ("ok", 2) => match parts.pop()? {
            Value::Array(outputs) => Some(Outcome::Value(collect(outputs))),
            _ => None,
        },
        ("err", 2) => Some(Outcome::Error(format!("gojq: {}", parts[1]))),
        ("nonfinite", 1) => Some(Outcome::Error(
            "gojq: a result holds NaN or an infinity, which JSON cannot (apply.go's Marshal fails)"
                .to_string(),
        )),
        _ => None,
    }
}

/// apply.go's rule: no output is null, one output is itself, several are an array.
fn collect(mut outputs: Vec<Value>) -> Value {
    match outputs.len() {
        0 => Value::Null,
        1 => outputs.pop().unwrap_or(Value::Null),
        _ => Value::Array(outputs),
    }
}
