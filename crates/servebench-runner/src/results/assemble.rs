//! One run's results, assembled once from its output: the description (`info`), the metrics,
//! the steady-state window, the probes' summary and the group sections' view of the load. A
//! single run (`servebench`) and each experiment point use the same [`assemble`], so their
//! result documents have the same keys; [`RunResults::end`] is the single run's exit policy.

use super::groups::group_info;
use super::info::run_info;
use super::steady::{steady_state_of, Arrivals, Steady, SteadyOptions};
use crate::config::{OutputConfig, RunConfig};
use crate::load::shard;
use crate::observe::server_side::ServerSideOutput;
use crate::prepare::failure_codes::no_success;
use crate::run::RunOutput;
use servebench_core::early_stop::{EarlyStopReason, EarlyStopReport};
use servebench_core::metrics::{compute, MetricsConfig, RunMetrics};
use servebench_core::schedule::ArrivalSchedule;
use servebench_core::{BenchError, Result};
use servebench_report::sections::groups::{GroupInfo, StageInfo};
use servebench_report::sections::probe::ProbeSummary;
use servebench_report::RunInfo;

/// What a run's results are assembled with, besides its output.
#[derive(Debug, Clone, Copy)]
pub struct Assembly<'a> {
    pub output: &'a OutputConfig,
    /// The run as configured (rate, concurrency, seed, load shape).
    pub run: &'a RunConfig,
    /// The result's `num_prompts`.
    pub num_prompts: u64,
    /// The percentiles computed (the user's, plus what an experiment's summaries need).
    pub percentiles: &'a [f64],
    pub steady: &'a SteadyOptions,
}

/// Everything one run's console text and result document are written from.
#[derive(Debug)]
pub struct RunResults {
    pub info: RunInfo,
    pub metrics: RunMetrics,
    pub out: RunOutput,
    pub groups: GroupInfo,
    pub steady: Option<Steady>,
    pub server_side: ServerSideOutput,
    pub probes: Option<ProbeSummary>,
}

/// How a finished run ends when nothing is wrong with its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    Finished,
    /// Stopped early (Ctrl-C / SIGTERM): the results cover what was sent before.
    Interrupted,
}

/// Computes a run's results from its output and server side.
pub fn assemble(out: RunOutput, server_side: ServerSideOutput, a: &Assembly<'_>) -> RunResults {
    let run = a.run;
    let metrics_cfg = MetricsConfig {
        percentiles: a.percentiles.to_vec(),
        selected: a.output.percentile_metrics.clone(),
        goodput: a.output.goodput.clone(),
    };
    let metrics = compute(&out.records, &metrics_cfg);
    // A shard describes and measures its own share of the run (`servebench merge` the whole).
    let (rate, max_concurrency) = (shard::rate_share(run), shard::max_concurrency(run));
    let schedule_events = rate
        .ramp_up
        .map(|_| ArrivalSchedule::generate(out.records.len(), &rate, run.seed).rps_change_events(&rate));
    let mut info =
        run_info(a.output, a.num_prompts, &out, &rate, max_concurrency, schedule_events.unwrap_or_default());
    info.trace_time_scale = run.dataset.trace_time_scale();
    // The stages that ran (a `--duration` cuts them), as this process sent them: the group
    // sections' stages (a shard's at its share of each rate).
    let groups = group_info(run);
    info.stages = groups.stages.iter().map(StageInfo::load_stage).collect();
    let trace = run.dataset.trace_time_scale().is_some();
    let arrivals = Arrivals::of(rate.request_rate, trace, max_concurrency.map(|c| c as u64));
    let steady = steady_state_of(&out.records, a.steady, a.output, arrivals);
    let probes = ProbeSummary::of(&out.probe_records);
    RunResults { info, metrics, groups, steady, probes, out, server_side }
}

impl RunResults {
    /// SB501 when records written to disk during the run (`--max-records-in-memory`) could not
    /// be read back: the figures computed since miss them and must not be reported. Checked
    /// right after [`assemble`] and again at the run's end (after the outputs' own walks).
    pub fn records_read_back(&self) -> Result<()> {
        match self.out.records.spill_read_failure() {
            Some(failure) => Err(BenchError::io("the run's temporary records file", failure)),
            None => Ok(()),
        }
    }

    /// The exit policy of a run: interrupted; stopped early (SB143, SB144); SB601 above `--max-failure-rate`
    /// (`max_failure_rate`, percent); SB602 when not one request succeeded.
    pub fn end(&self, max_failure_rate: Option<f64>) -> Result<RunEnd> {
        let m = &self.metrics;
        self.records_read_back()?;
        if self.out.interrupted {
            return Ok(RunEnd::Interrupted);
        }
        // Stopped early: the stop explains the failures too (exit 4, before SB601 and SB602).
        if let Some(e) = &self.out.early_stop {
            return Err(early_stop_error(e));
        }
        if let Some(limit) = max_failure_rate {
            let total = m.sent.max(1);
            let rate = m.failed as f64 * 100.0 / total as f64;
            if rate > limit {
                return Err(BenchError::FailureRate { failed: m.failed, total, rate, limit });
            }
        }
        // Not one request succeeded: there are no numbers, and CI must see it (exit 1, SB602).
        match no_success(&self.out.records, "") {
            Some(e) => Err(e),
            None => Ok(RunEnd::Finished),
        }
    }
}

/// The coded error of a run that stopped early (exit 4; its results are written).
pub fn early_stop_error(e: &EarlyStopReport) -> BenchError {
    match e.reason {
        EarlyStopReason::Saturation => BenchError::StoppedSaturated {
            from_s: e.detected_at_s,
            arrival_rate: e.arrival_rate.unwrap_or(f64::NAN),
            finish_rate: e.finish_rate.unwrap_or(f64::NAN),
            not_sent: e.requests_not_sent,
        },
        EarlyStopReason::ErrorRate => BenchError::StoppedErrors {
            from_s: e.detected_at_s,
            failed: e.failed.unwrap_or(0),
            over: e.finished_in_window.unwrap_or(0),
            not_sent: e.requests_not_sent,
        },
    }
}
