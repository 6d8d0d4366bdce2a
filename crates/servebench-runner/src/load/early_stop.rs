//! Early stop of a run (`--detect-saturation`, `--max-error-rate`, `--max-errors`; docs/metrics.md,
//! "Early stop"): the core detectors fed from the run. Off the hot path: the saturation test
//! runs on a ticker task of its own (a few dozen times per window), the error test once per
//! finished record in the collector; with neither flag nothing of this exists.
//!
//! When a detector fires, the monitor notes the report and raises its `tripped` signal; the
//! run's stop signals (`crate::load::stops`) then stop releasing requests, and cancel those in
//! flight when `--on-interrupt cancel`, with `cancelled_by: early_stop`.

pub use crate::config::load_options::EarlyStopOptions;
use servebench_core::early_stop::{EarlyStopReport, ErrorRateStop, Sample, SaturationStop};
use servebench_core::metrics::RequestTimes;
use servebench_core::{CancelReason, Outcome, RecordSet, RequestRecord, RunClock};
use std::borrow::Borrow;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The service-time estimate of the finished requests (docs/metrics.md, "Early stop"):
/// shortest TTFT + mean generation time (E2EL − TTFT) of the completed requests with a first
/// token; shortest E2EL when none had one (responses not streamed).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ServiceTime {
    min_ttft_us: Option<u64>,
    generation_sum_us: u64,
    with_ttft: u64,
    min_e2el_us: Option<u64>,
}

impl ServiceTime {
    /// Adds one completed request's TTFT and E2EL (µs).
    pub fn add(&mut self, ttft_us: Option<u64>, e2el_us: Option<u64>) {
        let Some(e2el) = e2el_us else { return };
        self.min_e2el_us = Some(self.min_e2el_us.map_or(e2el, |m| m.min(e2el)));
        if let Some(ttft) = ttft_us {
            self.min_ttft_us = Some(self.min_ttft_us.map_or(ttft, |m| m.min(ttft)));
            self.generation_sum_us += e2el.saturating_sub(ttft);
            self.with_ttft += 1;
        }
    }

    /// The estimate, seconds (`None` before a completed request).
    pub fn seconds(&self) -> Option<f64> {
        match (self.min_ttft_us, self.with_ttft) {
            (Some(t), n) if n > 0 => Some((t as f64 + self.generation_sum_us as f64 / n as f64) / 1e6),
            _ => self.min_e2el_us.map(|e| e as f64 / 1e6),
        }
    }
}

/// What the collector has seen end.
#[derive(Debug)]
struct Ended {
    /// Requests ended (completed, failed or cancelled).
    finished: u64,
    service: ServiceTime,
    errors: Option<ErrorRateStop>,
    /// End times (µs) of the last `window` requests the error test counted.
    error_ends: VecDeque<u64>,
}

/// One run's early-stop monitor.
#[derive(Debug)]
pub struct EarlyStop {
    opts: EarlyStopOptions,
    clock: RunClock,
    /// Intended send offsets, non-decreasing (scheduled runs): the requests due by a time.
    offsets_us: Option<Arc<[u64]>>,
    ended: Mutex<Ended>,
    tripped: CancellationToken,
    report: OnceLock<EarlyStopReport>,
}

impl EarlyStop {
    /// The monitor, or `None` when no early stop was asked for. `offsets_us`: the schedule's
    /// intended send offsets (saturation needs them; without them it is not tested).
    pub fn new(opts: EarlyStopOptions, clock: RunClock, offsets_us: Option<Arc<[u64]>>) -> Option<Arc<Self>> {
        if !opts.enabled() {
            return None;
        }
        let errors = opts.errors.map(ErrorRateStop::new);
        let ended =
            Ended { finished: 0, service: ServiceTime::default(), errors, error_ends: VecDeque::new() };
        Some(Arc::new(EarlyStop {
            opts,
            clock,
            offsets_us,
            ended: Mutex::new(ended),
            tripped: CancellationToken::new(),
            report: OnceLock::new(),
        }))
    }

    /// Raised once, when a detector fires.
    pub fn tripped(&self) -> CancellationToken {
        self.tripped.clone()
    }

    /// The report of the stop, once fired; `requests_not_sent`, `in_flight` and
    /// `cancelled_in_flight` from the run's records.
    pub fn report<S: RecordSet + ?Sized>(
        &self,
        records: &S,
        cancel_in_flight: bool,
    ) -> Option<EarlyStopReport> {
        let mut r = self.report.get()?.clone();
        let (mut sent, mut unsent) = (0, 0);
        for rec in records.records() {
            let rec = rec.borrow();
            if rec.cancelled_by == Some(CancelReason::EarlyStop) {
                *if rec.dispatched_us.is_some() { &mut sent } else { &mut unsent } += 1;
            }
        }
        r.requests_not_sent = unsent;
        r.cancelled_in_flight = sent;
        r.in_flight = if cancel_in_flight { "cancelled" } else { "drained" }.to_owned();
        Some(r)
    }

    fn fire(&self, report: EarlyStopReport) {
        if self.report.set(report).is_ok() {
            self.tripped.cancel();
        }
    }

    /// The collector: one record as its request ends (cancelled ones count as ended, only
    /// completed and failed ones feed the error test).
    pub fn record_ended(&self, r: &RequestRecord) {
        if self.tripped.is_cancelled() {
            return;
        }
        let Ok(mut e) = self.ended.lock() else { return };
        e.finished += 1;
        if r.outcome == Outcome::Completed {
            let t = RequestTimes::of(r);
            e.service.add(t.ttft_us, t.e2el_us);
        }
        if r.outcome == Outcome::Cancelled {
            return;
        }
        let now = self.clock.now_us();
        let window = self.opts.errors.map_or(0, |c| c.window);
        let Some(errors) = e.errors.as_mut() else { return };
        let fired = errors.observe(r.outcome == Outcome::Failed);
        e.error_ends.push_back(now);
        while e.error_ends.len() > window.max(1) {
            e.error_ends.pop_front();
        }
        if let Some(ev) = fired {
            let from = if ev.absolute { 0 } else { e.error_ends.front().copied().unwrap_or(now) };
            drop(e);
            let secs = |us: u64| us as f64 / 1e6;
            self.fire(EarlyStopReport::errors(&ev, secs(now), secs(now.saturating_sub(from))));
        }
    }

    /// The saturation sample now: requests due, ended, and the service time so far.
    fn sample(&self, offsets: &[u64]) -> Sample {
        let now = self.clock.now_us();
        let arrived = offsets.partition_point(|&o| o <= now) as u64;
        let (finished, service_s) =
            self.ended.lock().map_or((0, None), |e| (e.finished, e.service.seconds()));
        Sample { t_s: now as f64 / 1e6, arrived, finished, service_s }
    }

    /// The saturation ticker (when asked for and the run has a schedule), until `done` or the
    /// stop. Ticks 30 times per shortest window, at most once a second.
    pub fn spawn_ticker(self: &Arc<Self>, done: CancellationToken) -> Option<JoinHandle<()>> {
        let cfg = self.opts.saturation?;
        let offsets = self.offsets_us.clone()?;
        let me = self.clone();
        let period = Duration::from_secs_f64((cfg.window_s / 30.0).clamp(0.02, 1.0));
        Some(tokio::spawn(async move {
            let mut detector = SaturationStop::new(cfg);
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = done.cancelled() => break,
                    _ = me.tripped.cancelled() => break,
                }
                let s = me.sample(&offsets);
                if let Some(ev) = detector.observe(s) {
                    me.fire(EarlyStopReport::saturation(&ev, s.t_s));
                    break;
                }
            }
        }))
    }
}

/// The note for a `--detect-saturation` run that did not stop and was shorter than the
/// detector's shortest window (`window_s`): no test ever ran ("none runs before t ≥ W"), so
/// "no early stop" says nothing about saturation.
pub fn window_never_full_note(window_s: Option<f64>, stopped: bool, run_s: f64) -> Option<String> {
    let w = window_s.filter(|&w| !stopped && run_s < w)?;
    Some(format!(
        "--detect-saturation never tested: the run lasted {run_s:.1} s, shorter than its window \
         (--saturation-window {w} s); use a window well below the run's length or a longer run"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::early_stop::ErrorRateConfig;
    use servebench_core::{ErrorKind, RequestError};

    #[test]
    fn service_time_is_the_shortest_ttft_plus_the_mean_generation_time() {
        let mut s = ServiceTime::default();
        assert_eq!(s.seconds(), None);
        // TTFTs 0.2 s, 3 s (queued), generation 1 s and 2 s: 0.2 + 1.5 = 1.7 s.
        s.add(Some(200_000), Some(1_200_000));
        s.add(Some(3_000_000), Some(5_000_000));
        assert!((s.seconds().unwrap_or(0.0) - 1.7).abs() < 1e-12);
        let mut whole = ServiceTime::default();
        whole.add(None, Some(900_000));
        whole.add(None, Some(400_000));
        assert_eq!(whole.seconds(), Some(0.4), "not streamed: the shortest E2EL");
    }

    fn ended(outcome: Outcome) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        r.outcome = outcome;
        if outcome == Outcome::Failed {
            r.error = Some(RequestError { kind: ErrorKind::HttpStatus, message: "500".into(), cause: None });
        }
        r
    }

    #[test]
    fn the_error_limit_trips_once_and_cancelled_records_do_not_count() {
        let errors = ErrorRateConfig { max_rate: Some(0.5), window: 4, max_errors: None };
        let opts = EarlyStopOptions { saturation: None, errors: Some(errors) };
        let m = EarlyStop::new(opts, RunClock::start(), None).unwrap();
        for o in [Outcome::Failed, Outcome::Cancelled, Outcome::Failed, Outcome::Completed] {
            m.record_ended(&ended(o));
        }
        assert!(!m.tripped().is_cancelled(), "3 counted, the window of 4 is not full");
        m.record_ended(&ended(Outcome::Failed));
        assert!(m.tripped().is_cancelled(), "3 of 4 failed > 0.5");
        let mut unsent = ended(Outcome::Cancelled);
        unsent.cancelled_by = Some(CancelReason::EarlyStop);
        let r = m.report(&[unsent], false).unwrap();
        assert_eq!((r.failed, r.finished_in_window, r.requests_not_sent), (Some(3), Some(4), 1));
        assert_eq!(r.in_flight, "drained");
        assert!(EarlyStop::new(EarlyStopOptions::default(), RunClock::start(), None).is_none());
    }

    #[test]
    fn a_run_shorter_than_the_saturation_window_says_the_detector_never_tested() {
        let note = window_never_full_note(Some(30.0), false, 29.74).unwrap();
        assert_eq!(
            note,
            "--detect-saturation never tested: the run lasted 29.7 s, shorter than its window \
             (--saturation-window 30 s); use a window well below the run's length or a longer run"
        );
        // A full window, a stop, or no detector: nothing to say.
        assert_eq!(window_never_full_note(Some(30.0), false, 30.0), None);
        assert_eq!(window_never_full_note(Some(5.0), true, 4.0), None);
        assert_eq!(window_never_full_note(None, false, 1.0), None);
    }
}
