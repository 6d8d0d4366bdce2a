//! Steady-state window: the part of a run after warm-up and before drain, and the metrics of the
//! requests inside it (docs/metrics.md, "Steady state"). One function, [`steady_state`], for
//! both ways of driving a server:
//!
//! - open loop (a finite rate): the window where the arrival and completion rates agree, from
//!   the end of the warm-up to the last arrival ([`open_loop`]);
//! - closed loop (`--max-concurrency C` with an infinite rate): while the requests in flight sit
//!   at the cap, from one turnover after the cap is reached to a whole number of turnovers later,
//!   bounded by request ends ([`closed_loop`]).
//!
//! When there is no window (overload, a run shorter than its warm-up, nothing completed) the
//! answer says why.

mod closed_loop;
mod flow;
mod open_loop;

use serde::{Deserialize, Serialize};

use super::peaks::IntervalEnds;
use super::request::in_flight_interval;
use super::{is_completed, token_event_times, token_event_weights, MetricName, RequestTimes};
use crate::compact_records::{Filtered, RecordSet};
use crate::record::RequestRecord;
use crate::stats::Summary;
use std::borrow::Borrow;

/// How the run was driven, which decides the definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    /// A fixed number of requests in flight (`--max-concurrency` with an infinite rate).
    ClosedLoop { target_concurrency: u64 },
    /// Arrivals on a schedule (a finite `--request-rate`).
    OpenLoop,
}

/// What to compute.
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyStateConfig {
    pub mode: LoadMode,
    /// Fraction in (0, 1] (vllm-bench `--steady-state-threshold`, 0.95): of the cap (closed
    /// loop), of the arrival rate the completion rate must reach (open loop).
    pub threshold: f64,
    /// A window shorter than this gets a warning; `None` = max(10 s, 10 % of the run) for runs
    /// of at least 2 × 10 s (`DEFAULT_MIN_WINDOW_S`), no warning for shorter runs.
    pub min_window_s: Option<f64>,
    /// Percentiles to report (`--metric-percentiles`).
    pub percentiles: Vec<f64>,
    /// Metrics to summarise (`--percentile-metrics`).
    pub selected: Vec<MetricName>,
    /// A pooling run (embeddings, scoring, …): its input tokens are counted as the server
    /// counted them first (`usage.prompt_tokens`, else the client's count), as its headline
    /// input throughput is (docs/metrics.md, "Pooling input tokens"), and it generates no
    /// output, so the window has no output throughput (`None`, not 0).
    pub pooling: bool,
}

/// The steady-state window and the metrics over it. Times are seconds from the first dispatch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyState {
    pub mode: LoadMode,
    pub start_s: f64,
    pub end_s: f64,
    pub duration_s: f64,
    /// Seconds from the first dispatch to the last end of the run (any outcome).
    pub run_s: f64,
    pub threshold: f64,
    /// What the window had to reach: requests in flight (closed loop), completions per second
    /// (open loop: `threshold × arrival_rate`).
    pub threshold_abs: f64,
    /// The reference the threshold is a fraction of (the cap, or the arrival rate).
    pub reference: f64,
    /// Most completed requests in flight at one instant.
    pub observed_peak: u64,
    pub requests_started_in_window: u64,
    pub requests_completed_in_window: u64,
    pub requests_total: u64,
    pub warning: Option<String>,
    /// Arrivals per second in the window (any outcome): scheduled arrivals (`intended`) of the
    /// sent requests in an open loop, dispatches in a closed loop.
    pub arrival_rate: f64,
    /// Ends per second in the window (any outcome).
    pub completion_rate: f64,
    /// Mean number of requests in the system in the window (any outcome; in an open loop from
    /// the scheduled arrival, so those waiting in the client for a slot count).
    pub in_flight_mean: f64,
    pub request_throughput: f64,
    pub input_throughput: f64,
    /// `None` for a pooling run, which generates no output tokens.
    pub output_throughput: Option<f64>,
    pub total_token_throughput: f64,
    /// Selected metrics over completed requests started in the window, ms (`count` 0 = no data).
    pub metrics: Vec<(MetricName, Summary)>,
}

/// Why a run has no steady-state window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoSteadyState {
    pub mode: LoadMode,
    pub reason: String,
}

/// The window in µs with what it was measured against.
struct Window {
    start: u64,
    end: u64,
    reference: f64,
    threshold_abs: f64,
    /// Which instants of the boundaries belong to the window: `[start, end)` (open loop), or
    /// `(start, end]` (closed loop, whose boundaries are the instants when the slots are full
    /// again, after every end and dispatch at that microsecond: an end that coincides with the
    /// refill that opens the window belongs before it, one that closes it inside).
    after_boundary_events: bool,
}

impl Window {
    /// Whether a request dispatched at `t` started in the window (its latencies are the
    /// window's): `[start, end)` in both modes. In a closed loop the requests dispatched at the
    /// refill that opens the window run inside it, those at the refill that closes it after it
    /// (counted by [`Window::contains`], a closing refill's request ran in the drain).
    fn started_in(&self, t: u64) -> bool {
        t >= self.start && t < self.end
    }

    fn contains(&self, t: u64) -> bool {
        if self.after_boundary_events {
            t > self.start && t <= self.end
        } else {
            t >= self.start && t < self.end
        }
    }
}

fn intervals_of<S: RecordSet + ?Sized>(
    records: &S,
    keep: impl Fn(&RequestRecord) -> bool,
) -> Vec<(u64, u64)> {
    records
        .records()
        .filter_map(|r| {
            let r = r.borrow();
            keep(r).then_some(())?;
            in_flight_interval(r)
        })
        .collect()
}

/// Every sent request's `[intended, end)`: in an open loop a request has arrived at its
/// scheduled time, also while it waits in the client for a `--max-concurrency` slot, so a cap
/// that holds the server below the offered rate shows as completions falling behind arrivals
/// (the client's queue grows) rather than as a steady state at the cap's rate.
fn offered_intervals<S: RecordSet + ?Sized>(records: &S) -> Vec<(u64, u64)> {
    records
        .records()
        .filter_map(|r| {
            let r = r.borrow();
            r.dispatched_us?;
            Some((r.intended_us, RequestTimes::of(r).last_known_us?))
        })
        .collect()
}

/// An open loop's "overloaded" reason, told apart from the client's own queue: when the sent
/// requests waited at p95 more than half of their time in system in the client (for a
/// `--max-concurrency` or prefill slot), a cap below the offered rate held the load back — it
/// was blamed on the server alone (a 40-req/s trace through one slot).
fn with_client_queue_note<S: RecordSet + ?Sized>(why: String, records: &S) -> String {
    if !why.contains("the server is overloaded") {
        return why;
    }
    let mut waits = Vec::new();
    let mut in_system = Vec::new();
    for r in records.records() {
        let r = r.borrow();
        let (Some(gate), Some(end)) = (r.gate_us, RequestTimes::of(r).last_known_us) else { continue };
        waits.push(gate.saturating_sub(r.intended_us));
        in_system.push(end.saturating_sub(r.intended_us));
    }
    if waits.is_empty() {
        return why;
    }
    let (wait, total) = (open_loop::quantile(&mut waits, 0.95), open_loop::quantile(&mut in_system, 0.95));
    if wait * 2 <= total {
        return why;
    }
    why.replace(
        "the server is overloaded at this rate",
        &format!(
            "the load is held below the offered rate — requests waited in the client for a \
             concurrency slot (p95 {:.3} s of {:.3} s in system): a --max-concurrency or \
             --max-prefill-concurrency cap below this rate, or a server too slow for it",
            wait as f64 / 1e6,
            total as f64 / 1e6
        ),
    )
}

/// Computes the steady-state window and its metrics, or why there is none.
pub fn steady_state<S: RecordSet + ?Sized>(
    records: &S,
    cfg: &SteadyStateConfig,
) -> Result<SteadyState, NoSteadyState> {
    let none = |reason: String| NoSteadyState { mode: cfg.mode, reason };
    let all = intervals_of(records, |_| true);
    // The completed requests' intervals are held only while a closed loop's window is found
    // (the window's own figures walk the records).
    let has_done = records.records().any(|r| {
        let r = r.borrow();
        is_completed(r) && in_flight_interval(r).is_some()
    });
    if !has_done {
        return Err(none("no request completed".into()));
    }
    // An open loop's arrivals are its own intervals; a closed loop's are `all` (not copied).
    let offered = matches!(cfg.mode, LoadMode::OpenLoop).then(|| offered_intervals(records));
    let w = match cfg.mode {
        LoadMode::OpenLoop => {
            let offered = offered.as_deref().unwrap_or_default();
            let o = open_loop::window(offered, cfg.threshold)
                .map_err(|why| none(with_client_queue_note(why, records)))?;
            let rate = o.arrivals as f64 * 1e6 / (o.end - o.start) as f64;
            Window {
                start: o.start,
                end: o.end,
                reference: rate,
                threshold_abs: cfg.threshold * rate,
                after_boundary_events: false,
            }
        }
        LoadMode::ClosedLoop { target_concurrency } => {
            let done = intervals_of(records, is_completed);
            let c = closed_loop::window(&done, &all, target_concurrency, cfg.threshold).map_err(none)?;
            Window {
                start: c.start,
                end: c.end,
                reference: c.reference,
                threshold_abs: c.threshold_abs,
                after_boundary_events: true,
            }
        }
    };
    let arrivals = offered.as_deref().unwrap_or(&all);
    Ok(over_window(records, cfg, &w, &Flows { all: &all, arrivals }))
}

/// The request intervals a window is measured over.
struct Flows<'a> {
    /// Every sent request's `[dispatched, end)`.
    all: &'a [(u64, u64)],
    /// What counts as an arrival: `[intended, end)` in an open loop, `all` in a closed loop.
    arrivals: &'a [(u64, u64)],
}

/// Counts, rates and latency statistics over the window.
fn over_window<S: RecordSet + ?Sized>(
    records: &S,
    cfg: &SteadyStateConfig,
    w: &Window,
    flows: &Flows<'_>,
) -> SteadyState {
    let all = flows.all;
    let t0 = all.iter().map(|i| i.0).min().unwrap_or(w.start);
    let t1 = all.iter().map(|i| i.1).max().unwrap_or(w.end);
    let in_window = |t: u64| w.contains(t);
    let dur_s = (w.end - w.start) as f64 / 1e6;
    // Walked, not held: a request's times are derived where a value needs them (holding them
    // for every completed request took 128 bytes each, the run's largest transient at a million).
    let started = Filtered::new(records, |r: &RequestRecord| {
        is_completed(r) && r.dispatched_us.is_some_and(|t| w.started_in(t))
    });
    let input_tokens = |r: &RequestRecord| match cfg.pooling {
        true => r.server_prompt_tokens.unwrap_or(r.prompt_tokens),
        false => r.prompt_tokens,
    };
    // One walk: the started requests' count and input tokens, the window's output tokens, the
    // completions in the window and the completed requests' level changes (the observed peak).
    let (mut started_n, mut input, mut output) = (0u64, 0u64, 0.0f64);
    let (mut completed_in, mut done) = (0u64, IntervalEnds::with_capacity(0));
    for r in records.records() {
        let r = r.borrow();
        if !is_completed(r) {
            continue;
        }
        if let Some(interval) = in_flight_interval(r) {
            completed_in += u64::from(in_window(interval.1));
            done.push(interval);
        }
        if r.dispatched_us.is_some_and(|t| w.started_in(t)) {
            started_n += 1;
            input += u64::from(input_tokens(r));
        }
        if !cfg.pooling {
            let events = token_event_times(r).into_iter().zip(token_event_weights(r));
            output = events.filter(|(t, _)| in_window(*t)).fold(output, |a, (_, w)| a + w);
        }
    }
    // Taken (and its lists freed) before the in-flight mean builds its own.
    let observed_peak = done.into_changes().peak();
    let rate = |x: f64| x / dur_s;
    let run_s = t1.saturating_sub(t0) as f64 / 1e6;
    let warning = short_window_warning(dur_s, run_s, cfg.min_window_s);
    SteadyState {
        mode: cfg.mode,
        start_s: w.start.saturating_sub(t0) as f64 / 1e6,
        end_s: w.end.saturating_sub(t0) as f64 / 1e6,
        duration_s: dur_s,
        run_s,
        threshold: cfg.threshold,
        threshold_abs: w.threshold_abs,
        reference: w.reference,
        observed_peak,
        requests_started_in_window: started_n,
        requests_completed_in_window: completed_in,
        requests_total: records.record_count() as u64,
        warning,
        arrival_rate: rate(flows.arrivals.iter().filter(|i| in_window(i.0)).count() as f64),
        completion_rate: rate(all.iter().filter(|i| in_window(i.1)).count() as f64),
        in_flight_mean: flow::mean_in_flight(flows.arrivals, w.start, w.end),
        request_throughput: rate(completed_in as f64),
        input_throughput: rate(input as f64),
        output_throughput: (!cfg.pooling).then(|| rate(output)),
        total_token_throughput: rate(input as f64 + output),
        metrics: window_metrics(&started, cfg),
    }
}

/// The default shortest representative window (s); it applies to runs at least twice as long.
/// A shorter run is short by the user's choice, and the steady-state block shows the window's
/// share of the run anyway: warning on every short run was noise.
pub const DEFAULT_MIN_WINDOW_S: f64 = 10.0;

/// The warning for a window shorter than the minimum (`--steady-state-min-window`, or the
/// default for runs of at least 2 × `DEFAULT_MIN_WINDOW_S`).
fn short_window_warning(dur_s: f64, run_s: f64, min_window_s: Option<f64>) -> Option<String> {
    let min_window = match min_window_s {
        Some(m) => m,
        None if run_s >= 2.0 * DEFAULT_MIN_WINDOW_S => (0.1 * run_s).max(DEFAULT_MIN_WINDOW_S),
        None => return None,
    };
    (dur_s < min_window).then(|| {
        format!(
            "steady-state window is {dur_s:.2} s ({:.1}% of the run), shorter than the {min_window:.2}-s \
             minimum (--steady-state-min-window); it may not be representative",
            if run_s > 0.0 { dur_s / run_s * 100.0 } else { 0.0 }
        )
    })
}

/// The selected latency metrics over the completed requests started in the window, ms.
fn window_metrics<S: RecordSet + ?Sized>(started: &S, cfg: &SteadyStateConfig) -> Vec<(MetricName, Summary)> {
    let times = || started.records().map(|r| RequestTimes::of(r.borrow()));
    cfg.selected
        .iter()
        .filter_map(|&m| {
            let values: Vec<f64> = match m {
                MetricName::Ttft => times().filter_map(|t| t.ttft_us.map(|v| v as f64)).collect(),
                MetricName::Tpot => times().filter_map(|t| t.tpot_us).collect(),
                MetricName::Itl => {
                    let mut gaps = Vec::new();
                    for r in started.records() {
                        let r = r.borrow();
                        if r.first_token_us.is_some() {
                            gaps.extend(r.token_events.gaps_us.iter().map(|&g| f64::from(g)));
                        }
                    }
                    gaps
                }
                MetricName::E2el => times().filter_map(|t| t.e2el_us.map(|v| v as f64)).collect(),
                _ => return None,
            };
            Some((m, Summary::of(&values, &cfg.percentiles).scaled(1.0 / 1000.0)))
        })
        .collect()
}

#[cfg(test)]
mod tests;
