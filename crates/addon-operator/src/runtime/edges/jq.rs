//! The jq port: how the runtime evaluates binding `jqFilter`s, in this process (trusted filters,
//! tests) or through a [`JqBatch`] evaluator out of process (the sandbox child in `edges/jq`).

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
    /// Evaluates `filter` on every input; the outer error fails the whole list.
    pub async fn run<V: Borrow<Value> + Sync>(
        &self,
        filter: &JqFilter,
        inputs: &[V],
    ) -> Result<Vec<Result<Value, JqError>>, JqError> {
        match self {
            Self::InProcess(limits) => Ok(inputs
                .iter()
                .map(|input| filter.apply_bounded(input.borrow(), limits))
                .collect()),
            Self::Sandbox(sandbox) => {
                let mut results = Vec::with_capacity(inputs.len());
                for chunk in inputs.chunks(MAX_BATCH) {
                    let chunk: Vec<&Value> = chunk.iter().map(Borrow::borrow).collect();
                    results.extend(sandbox.run_batch(filter, &chunk).await?);
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
