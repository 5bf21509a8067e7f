//! The jq sandbox with the real binary as its child: the hostile filters fail one request with a clear error, and the next request is served by a new child.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e;
mod fuzz;

use std::path::PathBuf;
use std::time::Duration;

use addon_core::jq::{JqFilter, JqLimits};
use addon_operator::edges::jq::{DEFAULT_MAX_REPLY_BYTES, JqRunner, SandboxSettings};
use addon_operator_testkit::wait;
use serde_json::{Value, json};

pub fn settings(timeout: Duration) -> SandboxSettings {
    SandboxSettings {
        program: PathBuf::from(env!("CARGO_BIN_EXE_addon-operator")),
        timeout,
        memory_limit_bytes: 1 << 30,
        limits: JqLimits::default(),
        max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"app": name}}})
}

async fn apply(runner: &JqRunner, filter: &str, input: &Value) -> Result<Value, String> {
    let filter = JqFilter::compile(filter).map_err(|e| e.to_string())?;
    runner.apply(&filter, input).await.map_err(|e| {
        assert_eq!(e.category(), "jq_limit", "{e}");
        e.to_string()
    })
}

/// Each reproducer of the issue on its own sandbox, all at once (the spinning ones cost a CPU
/// second each): one error each, and each sandbox serves the next request.
#[test]
fn hostile_filters_fail_alone_and_the_sandbox_keeps_serving() {
    let cases = [
        (
            "def f: [f]; f",
            "evaluation nested deeper than 10000 levels",
        ),
        ("def f: f; f", ""),
        (
            "last(range(1e12))",
            "longer than the limit of 1s of CPU time",
        ),
        ("[range(1e9)]", ""),
        ("repeat(1)", "more than 10000 outputs"),
        ("range(0; infinite)", "more than 10000 outputs"),
    ];
    runtime().block_on(async {
        let runs = cases.iter().map(|(filter, expected)| async move {
            let runner = JqRunner::sandbox(settings(Duration::from_secs(1)));
            let err = apply(&runner, filter, &json!(null)).await.unwrap_err();
            assert!(err.contains(expected), "{filter}: {err}");
            // Not a projection, so the sandbox answers it (a projection never reaches it).
            let ok = apply(&runner, ".metadata.labels | keys", &pod("p")).await;
            assert_eq!(ok.unwrap(), json!(["app"]), "after {filter}");
        });
        futures::future::join_all(runs).await;
    });
}

#[test]
fn lists_are_filtered_in_batches_with_per_object_errors() {
    let runner = JqRunner::sandbox(settings(Duration::from_secs(10)));
    runtime().block_on(async {
        let filter = JqFilter::compile(".metadata.name | ascii_upcase").unwrap();
        let mut objects: Vec<Value> = (0..600).map(|i| pod(&format!("p{i}"))).collect();
        objects.push(json!({"metadata": {"name": 7}}));
        let results = runner.run(&filter, &objects).await.unwrap();
        assert_eq!(results.len(), 601);
        assert_eq!(results[599].as_ref().unwrap(), &json!("P599"));
        let err = results[600].as_ref().unwrap_err();
        assert_eq!(err.category(), "jq_apply", "{err}");
    });
}

/// Whether process `pid` has let go of its files (its pipes are closed): it is gone, or every
/// thread of it exited and only the zombie waits to be reaped.
fn exited(pid: u32) -> bool {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    threads.flatten().all(|thread| {
        std::fs::read_to_string(thread.path().join("stat")).map_or(true, |stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with(['Z', 'X']))
        })
    })
}

#[test]
fn a_child_killed_between_requests_is_replaced_without_failing_the_next_request() {
    let sandbox = addon_operator::edges::jq::JqSandbox::new(settings(Duration::from_secs(5)));
    runtime().block_on(async {
        let filter = JqFilter::compile(".a").unwrap();
        let input = [json!({"a": 1})];
        assert_eq!(sandbox.run(&filter, &input).await.unwrap()[0], Ok(json!(1)));
        let first = sandbox.child_id().await.unwrap();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(first).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
        let dead = || async { exited(first) };
        let limit = Duration::from_secs(10);
        wait::wait_for_async(
            "the killed child to close its pipes",
            limit,
            dead,
            String::new,
        )
        .await;
        assert_eq!(sandbox.run(&filter, &input).await.unwrap()[0], Ok(json!(1)));
        assert_ne!(sandbox.child_id().await, Some(first));
    });
}

#[test]
fn a_child_that_cannot_start_is_an_error_not_a_crash() {
    let mut bad = settings(Duration::from_secs(1));
    bad.program = PathBuf::from("/nonexistent/addon-operator");
    let runner = JqRunner::sandbox(bad);
    runtime().block_on(async {
        // `length`, not a projection such as `.`: a projection never starts the sandbox.
        let filter = JqFilter::compile("length").unwrap();
        let err = runner.apply(&filter, &json!(1)).await.unwrap_err();
        assert!(
            err.to_string().contains("cannot start the jq sandbox"),
            "{err}"
        );
    });
}
