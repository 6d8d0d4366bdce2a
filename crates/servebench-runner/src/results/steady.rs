//! The steady-state window of a run (vllm-bench's `steady_state`): when one applies, and which.

use crate::config::OutputConfig;
use servebench_core::metrics::{steady_state, LoadMode, MetricName, SteadyStateConfig};
use servebench_core::RecordSet;
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

/// How a run's requests arrive, for the steady state's mode: `scheduled` when arrivals follow a
/// schedule (a finite `--request-rate`, or a trace replayed on its own timestamps, whose rate
/// is infinite but whose requests arrive at their times all the same).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrivals {
    pub scheduled: bool,
    pub max_concurrency: Option<u64>,
}

impl Arrivals {
    /// The arrivals of a run at `request_rate`, or of a self-timed trace replay (`trace`).
    pub fn of(request_rate: f64, trace: bool, max_concurrency: Option<u64>) -> Arrivals {
        Arrivals { scheduled: request_rate.is_finite() || trace, max_concurrency }
    }
}

/// The steady-state window of a run, when one applies (see `servebench_core::metrics::steady_state`):
/// open loop when arrivals follow a schedule (a finite rate, a self-timed trace), closed loop with
/// `--max-concurrency` and an infinite rate; `None` for an infinite rate without a concurrency
/// cap (one burst) or with `--no-steady-state`.
pub fn steady_state_of<S: RecordSet + ?Sized>(
    records: &S,
    options: &SteadyOptions,
    output: &OutputConfig,
    arrivals: Arrivals,
) -> Option<Steady> {
    let stats = (output.metric_percentiles.as_slice(), output.percentile_metrics.as_slice());
    let pooling = is_pooling_backend(&output.backend_name);
    steady_state_with(records, options, stats, pooling, arrivals)
}

/// [`steady_state_of`] with the statistics to report given as `(percentiles, metrics)` (a
/// merged sharded run has no `OutputConfig`); `pooling` for a pooling backend's run (its input
/// tokens counted as its headline's are: the server's count first).
pub fn steady_state_with<S: RecordSet + ?Sized>(
    records: &S,
    options: &SteadyOptions,
    (percentiles, selected): (&[f64], &[MetricName]),
    pooling: bool,
    arrivals: Arrivals,
) -> Option<Steady> {
    if !options.enabled {
        return None;
    }
    let mode = match (arrivals.max_concurrency, arrivals.scheduled) {
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
