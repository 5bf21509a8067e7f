//! The jq port: how the runtime evaluates binding `jqFilter`s, in this process (trusted filters,
//! tests, and projections such as `.metadata.name`, which cannot loop) or through a [`JqBatch`]
//! evaluator out of process (the sandbox child in `edges/jq`).

use std::borrow::Borrow;
use std::sync::Arc;

use addon_core::hook_config::{FilteredObject, KubernetesBinding};
use addon_core::jq::{JqError, JqFilter, JqLimits};
use futures::future::BoxFuture;
use serde_json::Value;

/// Evaluates a filter on a batch of inputs (at most [`MAX_BATCH`]) out of process. The outer
/// error fails the whole batch.
pub trait JqBatch: Send + Sync + std::fmt::Debug {
    fn run_batch<'a>(
        &'a self,
        filter: &'a JqFilter,
        inputs: &'a [&'a Value],
    ) -> BoxFuture<'a, Result<Vec<Result<Value, JqError>>, JqError>>;
}

/// Inputs sent in one request; larger lists are split, each part with its own deadline.
pub const MAX_BATCH: usize = 256;

/// How filters are evaluated: in the sandbox (the operator, `hook run`) or in this process
/// (tests with trusted filters, and the default of settings built in code).
#[derive(Clone, Debug)]
pub enum JqRunner {
    InProcess(JqLimits),
    Sandbox(Arc<dyn JqBatch>),
}

impl Default for JqRunner {
    fn default() -> Self {
        Self::InProcess(JqLimits::default())
    }
}

impl JqRunner {
    /// Evaluates `filter` on every input; the outer error fails the whole list. A projection
    /// (`.metadata.name`, `{name: .metadata.name}`: no calls or loops, see
    /// [`JqFilter::apply_projection`]) is evaluated here first, in this process; only the inputs
    /// it cannot answer exactly go to the interpreter (the sandbox), and every result comes back
    /// in the order of `inputs`.
    pub async fn run<V: Borrow<Value> + Sync>(
        &self,
        filter: &JqFilter,
        inputs: &[V],
    ) -> Result<Vec<Result<Value, JqError>>, JqError> {
        if !filter.is_projection() {
            let all: Vec<&Value> = inputs.iter().map(Borrow::borrow).collect();
            return self.run_interpreted(filter, &all).await;
        }
        let limits = self.limits();
        let fast: Vec<Option<Value>> = inputs
            .iter()
            .map(|input| filter.apply_projection_bounded(input.borrow(), &limits))
            .collect();
        let rest: Vec<&Value> = inputs
            .iter()
            .zip(&fast)
            .filter(|(_, fast)| fast.is_none())
            .map(|(input, _)| input.borrow())
            .collect();
        let mut slow = self.run_interpreted(filter, &rest).await?.into_iter();
        fast.into_iter()
            .map(|fast| match fast {
                Some(value) => Ok(Ok(value)),
                None => slow.next().ok_or_else(|| {
                    JqError::apply_failed(
                        filter.source(),
                        "the evaluator gave fewer results than inputs",
                    )
                }),
            })
            .collect()
    }

    /// The bounds of one evaluation: this runner's own in process, the sandbox's defaults.
    fn limits(&self) -> JqLimits {
        match self {
            Self::InProcess(limits) => *limits,
            Self::Sandbox(_) => JqLimits::default(),
        }
    }

    /// Evaluates `filter` on every input with the interpreter: here, or in the sandbox in
    /// batches of at most [`MAX_BATCH`].
    async fn run_interpreted(
        &self,
        filter: &JqFilter,
        inputs: &[&Value],
    ) -> Result<Vec<Result<Value, JqError>>, JqError> {
        match self {
            Self::InProcess(limits) => Ok(inputs
                .iter()
                .map(|input| filter.apply_bounded(input, limits))
                .collect()),
            Self::Sandbox(sandbox) => {
                let mut results = Vec::with_capacity(inputs.len());
                for chunk in inputs.chunks(MAX_BATCH) {
                    results.extend(sandbox.run_batch(filter, chunk).await?);
                }
                Ok(results)
            }
        }
    }

    /// Evaluates `filter` on one input.
    pub async fn apply(&self, filter: &JqFilter, input: &Value) -> Result<Value, JqError> {
        let mut results = self.run(filter, std::slice::from_ref(input)).await?;
        results
            .pop()
            .unwrap_or_else(|| Err(JqError::apply_failed(filter.source(), "no result")))
    }

    /// The objects as `binding` sees them (filter results and checksums); the first failure
    /// fails the list.
    pub async fn filter_objects<V: Borrow<Value> + Sync>(
        &self,
        binding: &KubernetesBinding,
        objects: &[V],
    ) -> Result<Vec<FilteredObject>, JqError> {
        self.filter_with(binding.jq_filter.as_ref(), objects).await
    }

    /// [`JqRunner::filter_objects`] for a binding whose jqFilter is `filter`.
    pub async fn filter_with<V: Borrow<Value> + Sync>(
        &self,
        filter: Option<&JqFilter>,
        objects: &[V],
    ) -> Result<Vec<FilteredObject>, JqError> {
        let Some(filter) = filter else {
            return Ok(objects
                .iter()
                .map(|o| FilteredObject::new(o.borrow(), None))
                .collect());
        };
        let results = self.run(filter, objects).await?;
        objects
            .iter()
            .zip(results)
            .map(|(object, result)| Ok(FilteredObject::new(object.borrow(), Some(result?))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    /// A [`JqBatch`] that records every batch it gets and answers `{"interpreted": input}`, so a
    /// result shows which path made it.
    #[derive(Debug, Default)]
    struct RecordingBatch {
        batches: Mutex<Vec<Vec<Value>>>,
    }

    impl RecordingBatch {
        fn batch_sizes(&self) -> Vec<usize> {
            self.batches.lock().unwrap().iter().map(Vec::len).collect()
        }
    }

    impl JqBatch for RecordingBatch {
        fn run_batch<'a>(
            &'a self,
            _filter: &'a JqFilter,
            inputs: &'a [&'a Value],
        ) -> BoxFuture<'a, Result<Vec<Result<Value, JqError>>, JqError>> {
            let batch: Vec<Value> = inputs.iter().map(|v| (*v).clone()).collect();
            let results = batch
                .iter()
                .map(|v| Ok(json!({"interpreted": v})))
                .collect();
            self.batches.lock().unwrap().push(batch);
            Box::pin(async move { Ok(results) })
        }
    }

    fn sandboxed() -> (Arc<RecordingBatch>, JqRunner) {
        let batch = Arc::new(RecordingBatch::default());
        (batch.clone(), JqRunner::Sandbox(batch))
    }

    fn config_maps(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"kind": "ConfigMap", "metadata": {"name": format!("CM-{i}")}}))
            .collect()
    }

    #[tokio::test]
    async fn a_projection_filter_never_reaches_the_sandbox() {
        let (batch, runner) = sandboxed();
        let filter = JqFilter::compile(".metadata.name").unwrap();
        let results = runner.run(&filter, &config_maps(600)).await.unwrap();
        assert_eq!(batch.batch_sizes(), Vec::<usize>::new());
        assert_eq!(results.len(), 600);
        assert_eq!(results[599], Ok(json!("CM-599")));
    }

    #[tokio::test]
    async fn other_filters_go_to_the_sandbox_in_batches() {
        let (batch, runner) = sandboxed();
        let filter = JqFilter::compile(".metadata.name | ascii_downcase").unwrap();
        runner.run(&filter, &config_maps(3)).await.unwrap();
        assert_eq!(batch.batch_sizes(), vec![3]);
        let (batch, runner) = sandboxed();
        runner.run(&filter, &config_maps(600)).await.unwrap();
        assert_eq!(batch.batch_sizes(), vec![MAX_BATCH, MAX_BATCH, 88]);
    }

    /// Inputs the fast path cannot answer exactly (an error, a float) go to the sandbox; the
    /// results come back in the order of the inputs.
    #[tokio::test]
    async fn mixed_results_stay_in_input_order() {
        let (batch, runner) = sandboxed();
        let filter = JqFilter::compile(".a").unwrap();
        let inputs = [
            json!({"a": 1}),
            json!({"a": 1.5}),
            json!("text"),
            json!({"a": {"z": 1, "b": 2}}),
            json!({"b": 3}),
        ];
        let results = runner.run(&filter, &inputs).await.unwrap();
        assert_eq!(batch.batch_sizes(), vec![2]);
        let expected = vec![
            Ok(json!(1)),
            Ok(json!({"interpreted": {"a": 1.5}})),
            Ok(json!({"interpreted": "text"})),
            Ok(json!({"b": 2, "z": 1})),
            Ok(json!(null)),
        ];
        assert_eq!(results, expected);
    }

    #[tokio::test]
    async fn in_process_results_are_apply_results_in_order() {
        let runner = JqRunner::InProcess(JqLimits::default());
        let filter = JqFilter::compile("{x: .a}").unwrap();
        let inputs = [json!({"a": 1}), json!("text"), json!({"a": 1.5}), json!({})];
        let results = runner.run(&filter, &inputs).await.unwrap();
        let expected: Vec<_> = inputs.iter().map(|i| filter.apply(i)).collect();
        assert_eq!(results, expected);
        assert!(results[1].is_err());
        assert_eq!(results[2], Ok(json!({"x": 1.5})));
    }
}
