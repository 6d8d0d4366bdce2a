//! Live metrics of a run in progress: counters and histograms updated as requests start and
//! end, read by the progress display and the Prometheus endpoint (`--metrics-port`).
//!
//! Everything is an atomic: a request start costs two relaxed increments and one histogram
//! observation (dispatch lateness); a request end is accounted once by the collector task (one
//! pass over its record). Nothing is touched per SSE event on the request's own path. Only the
//! rate window (one sample per second) and the start time sit behind a mutex, never taken on
//! the hot path.

use servebench_core::prom::{self, Kind};
use servebench_core::{ErrorKind, Outcome, RequestRecord};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

mod detail;
mod prefill;
pub use detail::{bucket_percentile, LiveDetail, LivePercentiles, LIVE_PERCENTILES};
pub use prefill::PrefillWaiting;

/// Bucket upper bounds of the TTFT and E2EL histograms, µs (1 ms … 300 s).
pub const LATENCY_BUCKETS_US: &[u64] = &[
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    30_000_000,
    60_000_000,
    120_000_000,
    300_000_000,
];
/// Bucket upper bounds of the ITL histogram, µs (0.5 ms … 5 s).
pub const ITL_BUCKETS_US: &[u64] =
    &[500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 5_000_000];
/// Bucket upper bounds of the dispatch-lateness histogram, µs (10 µs … 1 s).
pub const LATENESS_BUCKETS_US: &[u64] =
    &[10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000];

/// How far back the "current" request and token rates look.
pub const RATE_WINDOW_US: u64 = 5_000_000;

/// A histogram over fixed bucket bounds (µs) with atomic counts and an exact µs sum.
#[derive(Debug)]
pub struct AtomicHistogram {
    bounds_us: &'static [u64],
    /// Per-bucket (not cumulative) counts; one more than `bounds_us` for +Inf.
    counts: Vec<AtomicU64>,
    sum_us: AtomicU64,
}

impl AtomicHistogram {
    pub fn new(bounds_us: &'static [u64]) -> Self {
        AtomicHistogram {
            bounds_us,
            counts: (0..=bounds_us.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_us: AtomicU64::new(0),
        }
    }

    /// Counts one value (µs). A value equal to a bound falls in that bound's bucket (`le`).
    pub fn observe(&self, value_us: u64) {
        let i = self.bounds_us.partition_point(|&b| b < value_us);
        if let Some(c) = self.counts.get(i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        self.sum_us.fetch_add(value_us, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Sum of the observations, µs.
    pub fn sum_us(&self) -> u64 {
        self.sum_us.load(Ordering::Relaxed)
    }

    /// `(upper bound in seconds or None for +Inf, cumulative count)` per bucket.
    pub fn cumulative(&self) -> Vec<(Option<f64>, u64)> {
        let mut acc = 0;
        self.counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                acc += c.load(Ordering::Relaxed);
                (self.bounds_us.get(i).map(|&b| b as f64 / 1e6), acc)
            })
            .collect()
    }
}

/// A point-in-time view for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LiveSnapshot {
    /// Seconds since the measured phase started (0 before).
    pub elapsed_s: f64,
    /// Requests in the measured phase.
    pub scheduled: u64,
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub in_flight: u64,
    /// Requests waiting for a prefill slot ([`PrefillWaiting::now`]); `None` without a
    /// prefill cap (`--max-prefill-concurrency`).
    pub prefill_waiting: Option<u64>,
    /// Requests completed per second over the last [`RATE_WINDOW_US`] (failed and cancelled
    /// requests are counted apart, never as throughput).
    pub requests_per_s: f64,
    /// Output tokens of completed requests per second over the last [`RATE_WINDOW_US`].
    pub output_tokens_per_s: f64,
}

/// The live counters of one run. Shared (`Arc`) by the dispatcher's tasks, the collector, the
/// progress display and the metrics endpoint.
#[derive(Debug)]
pub struct LiveMetrics {
    started: Mutex<Option<Instant>>,
    scheduled: AtomicU64,
    sent: AtomicU64,
    ended_sent: AtomicU64,
    completed: AtomicU64,
    failed: [AtomicU64; ErrorKind::ALL.len()],
    failed_unclassified: AtomicU64,
    cancelled: AtomicU64,
    output_tokens: AtomicU64,
    ttft: AtomicHistogram,
    itl: AtomicHistogram,
    e2el: AtomicHistogram,
    lateness: AtomicHistogram,
    /// `(µs since start, requests ended, output tokens)`, one sample per second.
    samples: Mutex<VecDeque<(u64, u64, u64)>>,
    /// The arrival schedule, when the load has one (the dashboard's client queue).
    schedule: Mutex<Option<detail::LiveSchedule>>,
    /// The latest failure's kind and message (set by the collector, per failed request).
    latest_failure: Mutex<Option<(ErrorKind, String)>>,
    /// Requests waiting for a prefill slot; set only when the run has a prefill cap.
    prefill: OnceLock<Arc<PrefillWaiting>>,
}

impl Default for LiveMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveMetrics {
    pub fn new() -> Self {
        LiveMetrics {
            started: Mutex::new(None),
            scheduled: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            ended_sent: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            failed: std::array::from_fn(|_| AtomicU64::new(0)),
            failed_unclassified: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            ttft: AtomicHistogram::new(LATENCY_BUCKETS_US),
            itl: AtomicHistogram::new(ITL_BUCKETS_US),
            e2el: AtomicHistogram::new(LATENCY_BUCKETS_US),
            lateness: AtomicHistogram::new(LATENESS_BUCKETS_US),
            samples: Mutex::new(VecDeque::new()),
            schedule: Mutex::new(None),
            latest_failure: Mutex::new(None),
            prefill: OnceLock::new(),
        }
    }

    /// The measured phase starts with `scheduled` requests.
    pub fn begin(&self, scheduled: u64) {
        self.scheduled.store(scheduled, Ordering::Relaxed);
        if let Ok(mut s) = self.started.lock() {
            *s = Some(Instant::now());
        }
    }

    fn elapsed_us(&self) -> u64 {
        self.started
            .lock()
            .ok()
            .and_then(|s| *s)
            .map_or(0, |t| u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// The run has a prefill cap: from now on the requests waiting for a prefill slot are
    /// counted (by whoever waits for one, through the returned counter) and shown.
    pub fn track_prefill(&self) -> Arc<PrefillWaiting> {
        self.prefill.get_or_init(Arc::default).clone()
    }

    /// The prefill-slot wait counter, when [`track_prefill`](Self::track_prefill) was called.
    pub fn prefill_waiting(&self) -> Option<&Arc<PrefillWaiting>> {
        self.prefill.get()
    }

    /// A request passed the concurrency gate and is being sent, `lateness_us` after its
    /// intended time by the dispatcher's fault (released − intended).
    pub fn request_sent(&self, lateness_us: u64) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.lateness.observe(lateness_us);
    }

    /// Requests counted by [`request_sent`](Self::request_sent) so far, and how many of them
    /// left more than `bound_us` late (`bound_us` must be a bucket bound of
    /// [`LATENESS_BUCKETS_US`]; another value counts from the next bound up).
    pub fn lateness_above(&self, bound_us: u64) -> (u64, u64) {
        let buckets = self.lateness.cumulative();
        let total = buckets.last().map_or(0, |b| b.1);
        let within = LATENESS_BUCKETS_US
            .iter()
            .position(|&b| b >= bound_us)
            .and_then(|i| buckets.get(i))
            .map_or(total, |b| b.1);
        (total, total - within)
    }

    /// A request counted by [`request_sent`](Self::request_sent) has returned its record.
    pub fn sent_request_ended(&self) {
        self.ended_sent.fetch_add(1, Ordering::Relaxed);
    }

    /// Accounts a finished request (called once per record, by the collector). Latency
    /// histograms and output tokens cover completed requests, as the run's statistics do.
    pub fn request_ended(&self, r: &RequestRecord) {
        match r.outcome {
            Outcome::Completed => {
                let t = servebench_core::metrics::RequestTimes::of(r);
                if let Some(v) = t.ttft_us {
                    self.ttft.observe(v);
                }
                if let Some(v) = t.e2el_us {
                    self.e2el.observe(v);
                }
                if r.first_token_us.is_some() {
                    for &g in &r.token_events.gaps_us {
                        self.itl.observe(u64::from(g));
                    }
                }
                self.output_tokens.fetch_add(u64::from(t.output_tokens), Ordering::Relaxed);
                self.completed.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed => {
                let slot = r
                    .error
                    .as_ref()
                    .and_then(|e| ErrorKind::ALL.iter().position(|&k| k == e.kind))
                    .and_then(|i| self.failed.get(i));
                match slot {
                    Some(c) => c.fetch_add(1, Ordering::Relaxed),
                    None => self.failed_unclassified.fetch_add(1, Ordering::Relaxed),
                };
                if let Some(e) = &r.error {
                    self.note_failure(e.kind, &e.message);
                }
            }
            Outcome::Cancelled => {
                self.cancelled.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn failed_total(&self) -> u64 {
        self.failed.iter().map(|c| c.load(Ordering::Relaxed)).sum::<u64>()
            + self.failed_unclassified.load(Ordering::Relaxed)
    }

    /// Takes one rate sample now (the runner calls this about once a second).
    pub fn sample(&self) {
        let point = (
            self.elapsed_us(),
            self.completed.load(Ordering::Relaxed),
            self.output_tokens.load(Ordering::Relaxed),
        );
        if let Ok(mut s) = self.samples.lock() {
            s.push_back(point);
            while s.front().is_some_and(|f| point.0.saturating_sub(f.0) > 2 * RATE_WINDOW_US) {
                s.pop_front();
            }
        }
    }

    /// `(requests/s, output tokens/s)` over the last [`RATE_WINDOW_US`] of samples, measured
    /// against the current counts; the average since the start while no older sample exists.
    fn rates(&self, now_us: u64, ended: u64, tokens: u64) -> (f64, f64) {
        let base = self.samples.lock().ok().and_then(|s| {
            s.iter().find(|p| now_us.saturating_sub(p.0) <= RATE_WINDOW_US && p.0 < now_us).copied()
        });
        let (t0, e0, k0) = base.unwrap_or((0, 0, 0));
        let span = now_us.saturating_sub(t0) as f64 / 1e6;
        if span <= 0.0 {
            return (0.0, 0.0);
        }
        (ended.saturating_sub(e0) as f64 / span, tokens.saturating_sub(k0) as f64 / span)
    }

    /// The current state, for progress displays.
    pub fn snapshot(&self) -> LiveSnapshot {
        let now = self.elapsed_us();
        let (completed, failed, cancelled) = (
            self.completed.load(Ordering::Relaxed),
            self.failed_total(),
            self.cancelled.load(Ordering::Relaxed),
        );
        let tokens = self.output_tokens.load(Ordering::Relaxed);
        // Completed requests only: a burst of cancellations (Ctrl-C) or failures is not throughput.
        let (rps, tps) = self.rates(now, completed, tokens);
        let sent = self.sent.load(Ordering::Relaxed);
        LiveSnapshot {
            elapsed_s: now as f64 / 1e6,
            scheduled: self.scheduled.load(Ordering::Relaxed),
            sent,
            completed,
            failed,
            cancelled,
            in_flight: sent.saturating_sub(self.ended_sent.load(Ordering::Relaxed)),
            prefill_waiting: self.prefill.get().map(|p| p.now()),
            requests_per_s: rps,
            output_tokens_per_s: tps,
        }
    }

    /// Failed requests of `kind` so far.
    pub fn failed_of(&self, kind: ErrorKind) -> u64 {
        ErrorKind::ALL
            .iter()
            .position(|&k| k == kind)
            .and_then(|i| self.failed.get(i))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Output tokens of completed requests so far.
    pub fn output_tokens(&self) -> u64 {
        self.output_tokens.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition format (version 0.0.4) of every metric.
    pub fn render_prometheus(&self) -> String {
        let s = self.snapshot();
        let mut out = String::with_capacity(8 * 1024);
        let scalars = [
            (
                "servebench_run_elapsed_seconds",
                Kind::Gauge,
                "Seconds since the measured phase started.",
                s.elapsed_s,
            ),
            (
                "servebench_requests_scheduled",
                Kind::Gauge,
                "Requests in the measured phase.",
                s.scheduled as f64,
            ),
            (
                "servebench_requests_sent_total",
                Kind::Counter,
                "Requests that passed the concurrency gate and were sent.",
                s.sent as f64,
            ),
            ("servebench_requests_completed_total", Kind::Counter, "Requests completed.", s.completed as f64),
            (
                "servebench_requests_cancelled_total",
                Kind::Counter,
                "Requests cancelled (interrupt), sent or not.",
                s.cancelled as f64,
            ),
            (
                "servebench_requests_in_flight",
                Kind::Gauge,
                "Requests sent and not yet ended.",
                s.in_flight as f64,
            ),
            (
                "servebench_output_tokens_total",
                Kind::Counter,
                "Output tokens of completed requests.",
                self.output_tokens() as f64,
            ),
            (
                "servebench_requests_per_second",
                Kind::Gauge,
                "Requests completed per second over the last 5 s.",
                s.requests_per_s,
            ),
            (
                "servebench_output_tokens_per_second",
                Kind::Gauge,
                "Output tokens of completed requests per second over the last 5 s.",
                s.output_tokens_per_s,
            ),
        ];
        for (name, kind, help, value) in scalars {
            prom::scalar(&mut out, name, kind, help, value);
        }
        // Only with a prefill cap: without one there is nothing to wait for (no series, not 0).
        if let Some(waiting) = s.prefill_waiting {
            prom::scalar(
                &mut out,
                "servebench_requests_waiting_for_prefill",
                Kind::Gauge,
                "Requests held back by the prefill cap (--max-prefill-concurrency), waiting for a prefill slot.",
                waiting as f64,
            );
        }
        self.write_failed(&mut out);
        let hists = [
            (
                "servebench_ttft_seconds",
                "Time to first token (service view: from dispatch), completed requests.",
                &self.ttft,
            ),
            (
                "servebench_itl_seconds",
                "Inter-token latency (gaps between token events), completed requests.",
                &self.itl,
            ),
            (
                "servebench_e2el_seconds",
                "End-to-end latency (service view: from dispatch), completed requests.",
                &self.e2el,
            ),
            (
                "servebench_dispatch_lateness_seconds",
                "Dispatch lateness (released - intended) of sent requests: client health.",
                &self.lateness,
            ),
        ];
        for (name, help, h) in hists {
            write_histogram(&mut out, name, help, h);
        }
        out
    }

    /// `servebench_requests_failed_total`, one sample per error kind (and unclassified).
    fn write_failed(&self, out: &mut String) {
        let failed = "servebench_requests_failed_total";
        prom::family(out, failed, Kind::Counter, "Requests failed, by error kind.");
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            let n = self.failed.get(i).map_or(0, |c| c.load(Ordering::Relaxed));
            prom::sample(out, failed, &[("kind", kind.as_str())], n as f64);
        }
        let n = self.failed_unclassified.load(Ordering::Relaxed);
        prom::sample(out, failed, &[("kind", "unclassified")], n as f64);
    }
}

fn write_histogram(out: &mut String, name: &str, help: &str, h: &AtomicHistogram) {
    prom::family(out, name, Kind::Histogram, help);
    let buckets = h.cumulative();
    let total = buckets.last().map_or(0, |b| b.1);
    let bucket = format!("{name}_bucket");
    for (le, n) in buckets {
        let le = prom::value_text(le.unwrap_or(f64::INFINITY));
        prom::sample(out, &bucket, &[("le", &le)], n as f64);
    }
    prom::sample(out, &format!("{name}_sum"), &[], h.sum_us() as f64 / 1e6);
    prom::sample(out, &format!("{name}_count"), &[], total as f64);
}

#[cfg(test)]
mod tests;
