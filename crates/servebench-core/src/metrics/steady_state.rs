//! Steady-state window: the part of a run after ramp-up and before drain, and the metrics of the
//! requests inside it (docs/metrics.md, "Steady state").
//!
//! The signal is the number of completed requests in flight (`[dispatched, end)`, ends before
//! starts at equal times), averaged over a centred sliding window of `W = run / 20` (at least
//! 1 ms) and evaluated every `W / 10`: the averaging keeps the hand-off between one request's
//! end and the next one's dispatch (µs to ms) from splitting the window.
//!
//! - closed loop (`--max-concurrency C` with `--request-rate inf`): reference = `min(C,
//!   completed)`;
//! - open loop (a finite rate): reference = the largest smoothed value.
//!
//! Threshold = `threshold × reference`. The window is the **longest** contiguous stretch where
//! the signal is at or above it (vllm-bench: exact count, first up-crossing to last
//! down-crossing, dips included).

use serde::{Deserialize, Serialize};

use super::{is_completed, token_event_times, token_event_weights, MetricName, RequestTimes};
use crate::record::RequestRecord;
use crate::stats::Summary;

/// How the run was driven, which decides the signal.
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
    /// Fraction of the reference in (0, 1] (vllm-bench `--steady-state-threshold`, 0.95).
    pub threshold: f64,
    /// A window shorter than this gets a warning; `None` = max(10 s, 10 % of the run).
    pub min_window_s: Option<f64>,
    /// Percentiles to report (`--metric-percentiles`).
    pub percentiles: Vec<f64>,
    /// Metrics to summarise (`--percentile-metrics`).
    pub selected: Vec<MetricName>,
}

/// The steady-state window and the metrics over it. Times are seconds from the first dispatch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyState {
    pub mode: LoadMode,
    pub start_s: f64,
    pub end_s: f64,
    pub duration_s: f64,
    pub threshold: f64,
    /// The signal level the window had to reach (requests in flight).
    pub threshold_abs: f64,
    /// The reference the threshold is a fraction of.
    pub reference: f64,
    /// Most completed requests in flight at one instant.
    pub observed_peak: u64,
    pub requests_started_in_window: u64,
    pub requests_completed_in_window: u64,
    pub requests_total: u64,
    pub warning: Option<String>,
    pub request_throughput: f64,
    pub input_throughput: f64,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    /// Selected metrics over completed requests started in the window, ms.
    pub metrics: Vec<(MetricName, Summary)>,
}

/// Piecewise-constant in-flight count: `(time, level from this time on)`, sorted.
fn in_flight_steps(intervals: &[(u64, u64)]) -> Vec<(u64, i64)> {
    let mut events: Vec<(u64, i8)> = Vec::with_capacity(intervals.len() * 2);
    for &(s, e) in intervals.iter().filter(|(s, e)| e > s) {
        events.push((s, 1));
        events.push((e, -1));
    }
    events.sort_unstable();
    let mut steps: Vec<(u64, i64)> = Vec::with_capacity(events.len());
    let mut level = 0i64;
    for (t, d) in events {
        level += i64::from(d);
        match steps.last_mut() {
            Some(last) if last.0 == t => last.1 = level,
            _ => steps.push((t, level)),
        }
    }
    steps
}

/// Longest maximal stretch `[start, end)` where `level ≥ threshold` on a step function.
fn longest_stretch(steps: &[(u64, f64)], threshold: f64) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    let mut open: Option<u64> = None;
    for &(t, level) in steps {
        match (open, level >= threshold) {
            (None, true) => open = Some(t),
            (Some(s), false) => {
                if best.is_none_or(|(bs, be)| t - s > be - bs) {
                    best = Some((s, t));
                }
                open = None;
            }
            _ => {}
        }
    }
    best
}

/// ∫ level dt over `[a, b)` of a step function (level 0 before the first step).
fn integral(steps: &[(u64, i64)], a: u64, b: u64) -> f64 {
    let mut total = 0.0;
    for (i, &(t, level)) in steps.iter().enumerate() {
        let next = steps.get(i + 1).map_or(u64::MAX, |s| s.0);
        let (lo, hi) = (t.max(a), next.min(b));
        if hi > lo {
            total += (hi - lo) as f64 * level as f64;
        }
    }
    total
}

/// The signal: in-flight averaged over a centred window, on a regular grid.
fn smoothed(steps: &[(u64, i64)], t0: u64, t1: u64) -> Vec<(u64, f64)> {
    let span = t1.saturating_sub(t0);
    let w = (span / 20).max(1_000);
    let step = (w / 10).max(1);
    let mut out = Vec::new();
    let mut t = t0;
    while t <= t1 {
        let (a, b) = (t.saturating_sub(w / 2), t + w / 2);
        out.push((t, integral(steps, a, b) / (b - a) as f64));
        t += step;
    }
    // Close the last stretch at the end of the run.
    out.push((t1.saturating_add(1), f64::NEG_INFINITY));
    out
}

/// Computes the steady-state window and its metrics; `None` when no completed request exists or
/// the signal never reaches the threshold.
pub fn steady_state(records: &[RequestRecord], cfg: &SteadyStateConfig) -> Option<SteadyState> {
    let done: Vec<(&RequestRecord, RequestTimes)> =
        records.iter().filter(|r| is_completed(r)).map(|r| (r, RequestTimes::of(r))).collect();
    let intervals: Vec<(u64, u64)> = done
        .iter()
        .filter_map(|(r, t)| Some((r.dispatched_us?, r.done_us.or(r.last_token_us).or(t.last_known_us)?)))
        .collect();
    let t0 = intervals.iter().map(|i| i.0).min()?;
    let t1 = intervals.iter().map(|i| i.1).max()?;
    let steps = in_flight_steps(&intervals);
    let observed_peak = steps.iter().map(|s| s.1).max().unwrap_or(0).max(0) as u64;
    let signal = smoothed(&steps, t0, t1);
    let reference = match cfg.mode {
        LoadMode::ClosedLoop { target_concurrency } => {
            target_concurrency.min(done.len() as u64).max(1) as f64
        }
        LoadMode::OpenLoop => signal.iter().map(|p| p.1).fold(0.0, f64::max),
    };
    let threshold_abs = cfg.threshold * reference;
    if reference <= 0.0 {
        return None;
    }
    let (ws, we) = longest_stretch(&signal, threshold_abs)?;
    let in_window = |t: u64| t >= ws && t < we;
    let dur_s = (we - ws) as f64 / 1e6;
    let started: Vec<&(&RequestRecord, RequestTimes)> =
        done.iter().filter(|(r, _)| r.dispatched_us.is_some_and(in_window)).collect();
    let completed_in = intervals.iter().filter(|i| in_window(i.1)).count() as u64;
    let input: u64 = started.iter().map(|(r, _)| u64::from(r.prompt_tokens)).sum();
    let output: f64 = done
        .iter()
        .flat_map(|(r, _)| token_event_times(r).into_iter().zip(token_event_weights(r)))
        .filter(|(t, _)| in_window(*t))
        .map(|(_, w)| w)
        .sum();
    let rate = |x: f64| if dur_s > 0.0 { x / dur_s } else { 0.0 };
    let run_s = (t1 - t0) as f64 / 1e6;
    let min_window = cfg.min_window_s.unwrap_or((0.1 * run_s).max(10.0));
    let warning = (dur_s < min_window).then(|| {
        format!(
            "steady-state window is {dur_s:.2} s ({:.1}% of the run); it may not be representative",
            if run_s > 0.0 { dur_s / run_s * 100.0 } else { 0.0 }
        )
    });
    let metrics = cfg
        .selected
        .iter()
        .filter_map(|&m| {
            let values: Vec<f64> = match m {
                MetricName::Ttft => started.iter().filter_map(|(_, t)| t.ttft_us.map(|v| v as f64)).collect(),
                MetricName::Tpot => started.iter().filter_map(|(_, t)| t.tpot_us).collect(),
                MetricName::Itl => started
                    .iter()
                    .filter(|(r, _)| r.first_token_us.is_some())
                    .flat_map(|(r, _)| r.token_events.gaps_us.iter().map(|&g| f64::from(g)))
                    .collect(),
                MetricName::E2el => started.iter().filter_map(|(_, t)| t.e2el_us.map(|v| v as f64)).collect(),
                _ => return None,
            };
            Some((m, Summary::of(&values, &cfg.percentiles).scaled(1.0 / 1000.0)))
        })
        .collect();
    Some(SteadyState {
        mode: cfg.mode,
        start_s: (ws - t0) as f64 / 1e6,
        end_s: (we - t0) as f64 / 1e6,
        duration_s: dur_s,
        threshold: cfg.threshold,
        threshold_abs,
        reference,
        observed_peak,
        requests_started_in_window: started.len() as u64,
        requests_completed_in_window: completed_in,
        requests_total: records.len() as u64,
        warning,
        request_throughput: rate(completed_in as f64),
        input_throughput: rate(input as f64),
        output_throughput: rate(output),
        total_token_throughput: rate(input as f64 + output),
        metrics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    /// A request of 1 s (dispatch → done), first token after 100 ms, 10 tokens every 100 ms.
    fn req(index: u64, dispatched: u64, dur: u64) -> RequestRecord {
        let mut r = RequestRecord::scheduled(index, format!("r{index}"), dispatched, 10, 10);
        r.dispatched_us = Some(dispatched);
        r.first_token_us = Some(dispatched + 100_000);
        let gap = ((dur - 100_000) / 9) as u32;
        r.token_events.gaps_us = vec![gap; 9];
        r.last_token_us = Some(dispatched + 100_000 + 9 * u64::from(gap));
        r.done_us = Some(dispatched + dur);
        r.token_event_count = 10;
        r.completion_tokens = Some(10);
        r.outcome = Outcome::Completed;
        r
    }

    /// Closed loop with 4 slots: ramp-up (one slot opens every 1 s for the first 3 s), 20 s
    /// at 4 in flight, then drain (slots close one per second). Requests last 1 s each.
    fn closed_loop_records() -> Vec<RequestRecord> {
        let mut out = Vec::new();
        let mut idx = 0;
        for slot in 0..4u64 {
            // Slot `slot` is busy over [slot, 20 + slot) s: ramp-up 0..3 s, drain 20..23 s.
            let start = slot * 1_000_000;
            let end = (20 + slot) * 1_000_000;
            let mut t = start;
            while t < end {
                out.push(req(idx, t, 1_000_000));
                idx += 1;
                t += 1_000_000;
            }
        }
        out
    }

    fn cfg(mode: LoadMode) -> SteadyStateConfig {
        SteadyStateConfig {
            mode,
            threshold: 0.95,
            min_window_s: None,
            percentiles: vec![50.0, 99.0],
            selected: vec![MetricName::Ttft, MetricName::E2el],
        }
    }

    #[test]
    fn closed_loop_window_excludes_ramp_up_and_drain() {
        let recs = closed_loop_records();
        let mut c = cfg(LoadMode::ClosedLoop { target_concurrency: 4 });
        c.threshold = 1.0;
        let s = steady_state(&recs, &c).unwrap();
        // All 4 slots busy from 3 s (slot 3 opens) until 20 s (slot 0 closes); with threshold 1
        // the smoothed signal (W = 23 s / 20 = 1.15 s) is at 4 exactly when its whole window is
        // inside [3, 20): from 3 + W/2 to 20 − W/2, on the W/10 grid.
        assert!((s.start_s - 3.575).abs() <= 0.115 + 1e-9, "{}", s.start_s);
        assert!((s.end_s - 19.425).abs() <= 0.115 + 1e-9, "{}", s.end_s);
        assert_eq!(s.threshold_abs, 4.0);
        assert_eq!(s.observed_peak, 4);
        // Every request starts and ends on a whole second: the window [~3.6, ~19.4) holds the
        // starts and ends at 4..=19 s: 16 per slot.
        assert_eq!(s.requests_started_in_window, 64);
        assert_eq!(s.requests_completed_in_window, 64);
        assert!((s.input_throughput - 640.0 / s.duration_s).abs() < 1e-9);
        let (m, ttft) = &s.metrics[0];
        assert_eq!(*m, MetricName::Ttft);
        assert_eq!(ttft.percentiles, vec![(50.0, 100.0), (99.0, 100.0)]);
        assert_eq!(s.metrics[1].1.mean, 1000.0);
        assert!(s.warning.is_none(), "17 s of 23 s is not short");
    }

    #[test]
    fn longest_stretch_wins_over_first_to_last_crossing() {
        // 4 in flight during [0,5) and [6,16); a gap with 3 in flight during [5,6).
        let mut recs = Vec::new();
        for i in 0..3 {
            recs.push(req(i, 0, 16_000_000));
        }
        recs.push(req(3, 0, 5_000_000));
        recs.push(req(4, 6_000_000, 10_000_000));
        let mut c = cfg(LoadMode::ClosedLoop { target_concurrency: 4 });
        c.min_window_s = Some(5.0);
        let s = steady_state(&recs, &c).unwrap();
        // W = 0.8 s: the 1-s dip at 3 in flight drops the average to 3 < 3.8.
        assert!(s.start_s > 6.0 && s.start_s < 6.5, "{}", s.start_s);
        assert!((s.end_s - 16.0).abs() < 0.5, "{}", s.end_s);
        assert!(s.warning.is_none());
    }

    #[test]
    fn hand_off_gaps_do_not_split_a_closed_loop_window() {
        // 2 slots, back-to-back requests of 100 ms with a 1 ms hand-off gap, for 10 s.
        let mut recs = Vec::new();
        for slot in 0..2u64 {
            for k in 0..99u64 {
                recs.push(req(slot * 1000 + k, slot * 50_000 + k * 101_000, 100_000));
            }
        }
        let s = steady_state(&recs, &cfg(LoadMode::ClosedLoop { target_concurrency: 2 })).unwrap();
        assert!(s.duration_s > 9.0, "{s:?}");
    }

    #[test]
    fn open_loop_window_excludes_ramp_up_and_drain() {
        // Arrivals every 100 ms for 60 s, each lasting 2 s: in flight ramps 0→20 over [0, 2),
        // stays at 20 until the last arrival (59.9 s), then drains to 0 by 61.9 s.
        let recs: Vec<RequestRecord> = (0..600).map(|i| req(i, i * 100_000, 2_000_000)).collect();
        let s = steady_state(&recs, &cfg(LoadMode::OpenLoop)).unwrap();
        assert!((s.reference - 20.0).abs() < 0.01, "{}", s.reference);
        // Smoothing window W = 3.095 s: the window starts once the average reaches 19 (ramp
        // plus half a window) and ends half a window before the drain brings it below.
        assert!(s.start_s > 2.0 && s.start_s < 4.0, "{}", s.start_s);
        assert!(s.end_s > 58.0 && s.end_s < 60.0, "{}", s.end_s);
        assert!((s.request_throughput - 10.0).abs() < 0.5, "{}", s.request_throughput);
    }

    #[test]
    fn no_completed_request_gives_none() {
        let mut r = req(0, 0, 1_000_000);
        r.outcome = Outcome::Failed;
        assert!(steady_state(&[r], &cfg(LoadMode::OpenLoop)).is_none());
    }
}
