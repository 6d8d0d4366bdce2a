//! The steady-state window of a run (vllm-bench's `steady_state`): when one applies, and which.

use crate::config::OutputConfig;
use servebench_core::metrics::{steady_state, LoadMode, MetricName, SteadyStateConfig};
use servebench_core::RequestRecord;
use servebench_report::sections::pooling::is_pooling_backend;
pub use servebench_report::sections::steady_state::Steady;

/// The steady-state flags, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyOptions {
    /// `false` with `--no-steady-state`.
    pub enabled: bool,
    /// `--steady-state-threshold`, in (0, 1].
    pub threshold: f64,
    /// `--steady-state-min-window` (seconds).
    pub min_window_s: Option<f64>,
}

impl Default for SteadyOptions {
    fn default() -> Self {
        SteadyOptions { enabled: true, threshold: 0.95, min_window_s: None }
    }
}

/// The steady-state window of a run, when one applies (see `servebench_core::metrics::steady_state`):
/// closed loop with `--max-concurrency` and an infinite rate, open loop with a finite rate;
/// `None` for an infinite rate without a concurrency cap (one burst) or with `--no-steady-state`.
pub fn steady_state_of(
    records: &[RequestRecord],
    options: &SteadyOptions,
    output: &OutputConfig,
    request_rate: f64,
    max_concurrency: Option<usize>,
) -> Option<Steady> {
    let stats = (output.metric_percentiles.as_slice(), output.percentile_metrics.as_slice());
    let pooling = is_pooling_backend(&output.backend_name);
    steady_state_with(records, options, stats, pooling, request_rate, max_concurrency.map(|c| c as u64))
}

/// [`steady_state_of`] with the statistics to report given as `(percentiles, metrics)` (a
/// merged sharded run has no `OutputConfig`); `pooling` for a pooling backend's run (its input
/// tokens counted as its headline's are: the server's count first).
pub fn steady_state_with(
    records: &[RequestRecord],
    options: &SteadyOptions,
    (percentiles, selected): (&[f64], &[MetricName]),
    pooling: bool,
    request_rate: f64,
    max_concurrency: Option<u64>,
) -> Option<Steady> {
    if !options.enabled {
        return None;
    }
    let mode = match (max_concurrency, request_rate.is_finite()) {
        (_, true) => LoadMode::OpenLoop,
        (Some(c), false) => LoadMode::ClosedLoop { target_concurrency: c },
        (None, false) => return None,
    };
    Some(steady_state(
        records,
        &SteadyStateConfig {
            mode,
            threshold: options.threshold,
            min_window_s: options.min_window_s,
            percentiles: percentiles.to_vec(),
            selected: selected.to_vec(),
            pooling,
        },
    ))
}
