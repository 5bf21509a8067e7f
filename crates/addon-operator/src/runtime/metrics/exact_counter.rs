//! A counter exposed under its exact name: upstream's `live_ticks` and `convergence_seconds` have no `_total`.
//!
//! prometheus-client writes OpenMetrics, where a `counter` family's samples always end in `_total`.
//! These two are therefore typed `unknown`, whose sample name is the family name, so queries written
//! for the Go operator keep working.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A monotonically growing float written without the `_total` suffix.
#[derive(Debug, Default, Clone)]
pub struct ExactNameCounter(Counter<f64, AtomicU64>);

impl ExactNameCounter {
    pub fn inc_by(&self, value: f64) {
        self.0.inc_by(value);
    }
}

impl TypedMetric for ExactNameCounter {
    const TYPE: MetricType = MetricType::Unknown;
}

impl EncodeMetric for ExactNameCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0.get())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}
